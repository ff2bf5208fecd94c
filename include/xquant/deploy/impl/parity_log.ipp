#pragma once
/// \file parity_log.ipp
/// log_parity (deploy/parity_log.hpp).

#include <cmath>
#include <string>

#include "../parity_log.hpp"

namespace xq::deploy {

XQ_DECL void log_parity(summary_writer& writer, const parity_report& report, std::int64_t step) {
  for (const parity_row& row : report.rows) {
    std::string t = row.label;
    for (char& c : t)
      if (c == ' ') c = '_';
    writer.add_scalar("parity_identical/" + t, row.share(), step);
    writer.add_scalar("parity_max_steps/" + t, static_cast<double>(row.max_steps), step);
    const double sqnr = row.sqnr_db();
    if (std::isfinite(sqnr)) writer.add_scalar("parity_sqnr_db/" + t, sqnr, step);
  }
  writer.add_scalar("parity_output_identical",
                    report.output_elements ? double(report.output_identical) / double(report.output_elements) : 1.0,
                    step);
  if (std::isfinite(report.output_sqnr_db())) writer.add_scalar("parity_output_sqnr_db", report.output_sqnr_db(), step);
  writer.add_scalar("parity_same_top1", report.same_top1_share(), step);
  // The table is fixed-width text: a code block keeps its columns.
  writer.add_text("parity", "```\n" + report.table() + "\n```", step);
  writer.flush();
}

}  // namespace xq::deploy
