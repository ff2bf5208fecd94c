#pragma once
/// \file summary_writer.ipp
/// TensorBoard's event files (io/summary_writer.hpp): the Event messages, the TFRecord
/// framing, the file.

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <utility>

#include "../detail/crc32c.hpp"
#include "../detail/protobuf_wire.hpp"
#include "../summary_writer.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace xq {

namespace detail {

/// histogram_summary::of's first pass where every value is finite (the common case, and the
/// one to be quick: fit's TensorBoard callback histograms whole activations): eight
/// independent lanes that the compiler vectorizes; false, leaving `h` alone, if a value is
/// NaN or infinite.
XQ_DECL bool finite_moments(const float* data, std::size_t n, histogram_summary& h) {
  constexpr std::size_t lanes = 8;
  float lo[lanes], hi[lanes];
  double sum[lanes] = {}, squares[lanes] = {};
  for (std::size_t k = 0; k < lanes; ++k) {
    lo[k] = std::numeric_limits<float>::infinity();
    hi[k] = -std::numeric_limits<float>::infinity();
  }
  const std::size_t whole = n - n % lanes;
  for (std::size_t i = 0; i < whole; i += lanes)
    for (std::size_t k = 0; k < lanes; ++k) {
      const float v = data[i + k];
      lo[k] = v < lo[k] ? v : lo[k];
      hi[k] = v > hi[k] ? v : hi[k];
      sum[k] += double(v);
      squares[k] += double(v) * double(v);
    }
  for (std::size_t i = whole; i < n; ++i) {
    const float v = data[i];
    lo[0] = v < lo[0] ? v : lo[0];
    hi[0] = v > hi[0] ? v : hi[0];
    sum[0] += double(v);
    squares[0] += double(v) * double(v);
  }
  double a = std::numeric_limits<double>::infinity(), b = -a, s = 0, q = 0;
  for (std::size_t k = 0; k < lanes; ++k) {
    a = std::min(a, double(lo[k]));
    b = std::max(b, double(hi[k]));
    s += sum[k];
    q += squares[k];
  }
  // A NaN compares false (so min and max skip it) but poisons the sum; an infinity shows in them.
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(s)) return false;
  h.min = a;
  h.max = b;
  h.count = static_cast<double>(n);
  h.sum = s;
  h.sum_squares = q;
  return true;
}

}  // namespace detail

XQ_DECL histogram_summary histogram_summary::of(const float* data, std::size_t n, std::size_t bins) {
  histogram_summary h;
  if (n == 0) return h;
  const bool all_finite = detail::finite_moments(data, n, h);
  if (!all_finite) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (std::size_t i = 0; i < n; ++i) {
      const double v = data[i];
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      h.count += 1;
      h.sum += v;
      h.sum_squares += v * v;
    }
    if (h.count == 0) return h;
    h.min = lo;
    h.max = hi;
  }
  if (bins == 0 || h.min == h.max) {
    h.limits = {h.max};
    h.counts = {h.count};
    return h;
  }
  const double width = (h.max - h.min) / static_cast<double>(bins);
  h.limits.resize(bins);
  for (std::size_t b = 0; b < bins; ++b) h.limits[b] = h.min + width * static_cast<double>(b + 1);
  h.limits.back() = h.max;  // the last edge exactly the max, whatever the rounding above
  // Bucket of v: floor((v - min) · bins / (max - min)), the max in the last bucket.
  std::vector<std::uint64_t> counts(bins + 1, 0);
  if (all_finite && h.max - h.min < 1e37) {  // float arithmetic cannot overflow: the quick loop
    const float lo = static_cast<float>(h.min);
    const float inv = static_cast<float>(static_cast<double>(bins) / (h.max - h.min));
    for (std::size_t i = 0; i < n; ++i) ++counts[std::min(static_cast<std::size_t>((data[i] - lo) * inv), bins)];
  } else {
    const double inv = static_cast<double>(bins) / (h.max - h.min);
    for (std::size_t i = 0; i < n; ++i)
      if (std::isfinite(data[i]))
        ++counts[std::min(static_cast<std::size_t>((double(data[i]) - h.min) * inv), bins)];
  }
  counts[bins - 1] += counts[bins];  // the max (and what float rounding put past it)
  h.counts.resize(bins);
  for (std::size_t b = 0; b < bins; ++b) h.counts[b] = static_cast<double>(counts[b]);
  return h;
}

XQ_DECL histogram_summary histogram_summary::from_buckets(const std::vector<float>& edges,
                                                          const std::vector<float>& counts) {
  const char* where = "xq::histogram_summary::from_buckets";
  if (counts.empty() || edges.size() != counts.size() + 1)
    throw argument_error(where, "at least one count and one edge more than counts",
                         detail::concat(counts.size(), " counts, ", edges.size(), " edges"));
  for (std::size_t i = 0; i < edges.size(); ++i)
    if (!std::isfinite(edges[i]) || (i > 0 && !(edges[i] > edges[i - 1])))
      throw argument_error(where, "finite increasing edges", detail::concat(edges[i], " at edge ", i));
  histogram_summary h;
  h.min = edges.front();
  h.max = edges.back();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double c = counts[i];
    if (!std::isfinite(c) || c < 0) throw argument_error(where, "finite counts >= 0", detail::concat(c, " at count ", i));
    const double centre = 0.5 * (double(edges[i]) + double(edges[i + 1]));
    h.count += c;
    h.sum += c * centre;
    h.sum_squares += c * centre * centre;
    h.limits.push_back(edges[i + 1]);
    h.counts.push_back(c);
  }
  return h;
}

namespace detail {

namespace events {

using namespace protobuf;

XQ_DECL double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// tensorflow.Event: wall_time 1, step 2, file_version 3, summary 5; Summary: value 1;
// Summary.Value: tag 1, simple_value 2, histo 5, tensor 8, metadata 9.
template <class Body>
std::string event_with_value(const std::string& tag, std::int64_t step, Body&& value_fields) {
  std::string out;
  byte_appender s{&out};
  put_double(s, 1, wall_time());
  put_int(s, 2, step);
  put_message_with(s, 5, [&](auto& summary) {
    put_message_with(summary, 1, [&](auto& value) {
      put_bytes(value, 1, tag);
      value_fields(value);
    });
  });
  return out;
}

}  // namespace events

XQ_DECL std::string tfrecord(const std::string& event) {
  std::string r;
  r.reserve(event.size() + 16);
  const std::uint64_t length = event.size();
  protobuf::append_le(r, length);
  protobuf::append_le(r, mask_crc32c(crc32c(r.data(), 8)));
  r += event;
  protobuf::append_le(r, mask_crc32c(crc32c(event.data(), event.size())));
  return r;
}

}  // namespace detail

XQ_DECL summary_writer::summary_writer(std::string log_dir, summary_writer_options options)
    : log_dir_(std::move(log_dir)), options_(std::move(options)) {
  if (log_dir_.empty()) throw argument_error("xq::summary_writer", "a log directory", "an empty path");
  std::error_code ec;
  std::filesystem::create_directories(log_dir_, ec);
  if (ec) throw io_error(log_dir_, "cannot create the log directory: " + ec.message());
  static std::atomic<unsigned> files{0};
  std::string host = "localhost";
  long pid = 0;
#if defined(__unix__) || defined(__APPLE__)
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && name[0]) host = name;
  pid = static_cast<long>(getpid());
#endif
  const auto seconds = static_cast<long long>(detail::events::wall_time());
  file_ = (std::filesystem::path(log_dir_) / detail::concat("events.out.tfevents.", seconds, ".", host, ".", pid, ".",
                                                             files++, options_.filename_suffix))
              .string();
  stream_ = std::fopen(file_.c_str(), "wbx");  // a new file: never another writer's
  if (!stream_) throw io_error(file_, std::string("cannot create the event file: ") + std::strerror(errno));
  // The first record: the file's version, as every event file starts.
  std::string version;
  detail::protobuf::byte_appender s{&version};
  detail::protobuf::put_double(s, 1, detail::events::wall_time());
  detail::protobuf::put_bytes(s, 3, std::string("brain.Event:2"));
  append_event(version);
  flush();
}

XQ_DECL summary_writer::~summary_writer() { close(); }

XQ_DECL void summary_writer::close() noexcept {
  if (!stream_) return;
  try {
    flush();
  } catch (...) {
  }
  std::fclose(stream_);
  stream_ = nullptr;
}

XQ_DECL summary_writer::summary_writer(summary_writer&& o) noexcept
    : log_dir_(std::move(o.log_dir_)), file_(std::move(o.file_)), options_(std::move(o.options_)),
      stream_(std::exchange(o.stream_, nullptr)), pending_(std::move(o.pending_)), last_flush_(o.last_flush_) {}

XQ_DECL summary_writer& summary_writer::operator=(summary_writer&& o) noexcept {
  if (this != &o) {
    close();
    log_dir_ = std::move(o.log_dir_);
    file_ = std::move(o.file_);
    options_ = std::move(o.options_);
    stream_ = std::exchange(o.stream_, nullptr);
    pending_ = std::move(o.pending_);
    last_flush_ = o.last_flush_;
  }
  return *this;
}

XQ_DECL void summary_writer::append_event(const std::string& event) {
  if (!stream_) throw argument_error("xq::summary_writer", "a writer with a file", "one moved from");
  pending_ += detail::tfrecord(event);
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (pending_.size() >= options_.flush_bytes || now - last_flush_ >= options_.flush_seconds) flush();
}

XQ_DECL void summary_writer::flush() {
  if (!stream_) return;
  last_flush_ = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (pending_.empty()) return;
  const std::size_t written = std::fwrite(pending_.data(), 1, pending_.size(), stream_);
  const bool flushed = std::fflush(stream_) == 0;
  if (written != pending_.size() || !flushed) {
    const int e = errno;
    // What reached the file stays there (whole records, or a torn last one the reader
    // drops); the rest is kept for the next flush.
    pending_.erase(0, written);
    throw io_error(file_, std::string("cannot append to the event file: ") + std::strerror(e));
  }
  pending_.clear();
}

XQ_DECL void summary_writer::add_scalar(const std::string& tag, double value, std::int64_t step) {
  append_event(detail::events::event_with_value(tag, step, [&](auto& v) {
    detail::protobuf::put_float(v, 2, static_cast<float>(value));
  }));
}

XQ_DECL void summary_writer::add_histogram(const std::string& tag, const tensor& values, std::int64_t step,
                                           std::size_t bins) {
  add_histogram(tag, histogram_summary::of(values, bins), step);
}

XQ_DECL void summary_writer::add_histogram(const std::string& tag, const histogram_summary& h, std::int64_t step) {
  if (h.limits.size() != h.counts.size())
    throw argument_error("xq::summary_writer::add_histogram (" + tag + ")", "as many limits as counts",
                         detail::concat(h.limits.size(), " limits, ", h.counts.size(), " counts"));
  using namespace detail::protobuf;
  append_event(detail::events::event_with_value(tag, step, [&](auto& v) {
    put_message_with(v, 5, [&](auto& histo) {  // tensorflow.HistogramProto
      put_double(histo, 1, h.min);
      put_double(histo, 2, h.max);
      put_double(histo, 3, h.count);
      put_double(histo, 4, h.sum);
      put_double(histo, 5, h.sum_squares);
      put_packed_doubles(histo, 6, h.limits);
      put_packed_doubles(histo, 7, h.counts);
    });
  }));
}

XQ_DECL void summary_writer::add_text(const std::string& tag, const std::string& markdown, std::int64_t step) {
  using namespace detail::protobuf;
  append_event(detail::events::event_with_value(tag, step, [&](auto& v) {
    put_message_with(v, 8, [&](auto& t) {  // tensorflow.TensorProto: a string tensor of shape [1]
      put_int(t, 1, 7);                     // DT_STRING
      put_message_with(t, 2, [](auto& shape) {
        put_message_with(shape, 2, [](auto& dim) { put_int(dim, 1, 1); });
      });
      put_bytes(t, 8, markdown);
    });
    put_message_with(v, 9, [](auto& metadata) {  // SummaryMetadata: the text plugin's
      put_message_with(metadata, 1, [](auto& plugin) { put_bytes(plugin, 1, std::string("text")); });
    });
  }));
}

}  // namespace xq
