#pragma once
/// \file calibration_log.ipp
/// log_calibration (io/calibration_log.hpp).

#include <string>

#include "../calibration_log.hpp"

namespace xq {

XQ_DECL void log_calibration(summary_writer& writer, const calibration_result& r, std::int64_t step) {
  std::string table = detail::concat("Calibrated on ", r.samples,
                                     " samples.\n\n| quantizer | min | max | per channel | histogram |\n|---|---|---|---|---|\n");
  for (const calibration_result::entry& e : r.ranges) {
    writer.add_scalar("calibration_min/" + e.quantizer, e.min, step);
    writer.add_scalar("calibration_max/" + e.quantizer, e.max, step);
    std::string span = "-";
    if (!e.histogram_counts.empty()) {
      writer.add_histogram("calibration_histogram/" + e.quantizer,
                           histogram_summary::from_buckets(e.histogram_edges, e.histogram_counts), step);
      span = detail::concat(e.histogram_counts.size(), " bins over [", e.histogram_edges.front(), ", ",
                            e.histogram_edges.back(), "]");
    }
    table += detail::concat("| ", e.quantizer, " | ", e.min, " | ", e.max, " | ", e.per_channel ? "yes" : "no", " | ",
                            span, " |\n");
  }
  writer.add_text("calibration", table, step);
  writer.flush();
}

}  // namespace xq
