#pragma once
/// \file summary_writer.hpp
/// TensorBoard event files, written without TensorFlow or Python: PyTorch's SummaryWriter
/// (`add_scalar`, `add_histogram`, `add_text`) over the format TensorBoard reads.
///
/// \code
///   xq::summary_writer w("runs/qat/train");          // events.out.tfevents.<time>.<host>.<pid>.<n>
///   w.add_scalar("loss", 0.42, step);
///   w.add_histogram("weights/conv/kernel", kernel, step);
///   w.add_text("notes", "**8-bit** per channel", step);
///   w.flush();                                         // also every flush_seconds, and when destroyed
/// \endcode
///
/// The file: TFRecord records, each `length` (uint64 LE), the masked CRC-32C of those 8
/// bytes (uint32 LE), the record, the masked CRC-32C of the record; each record a
/// serialized `tensorflow.Event` (wall_time, step, and a Summary of one value: a
/// `simple_value` scalar, a `HistogramProto`, or a string tensor with the text plugin's
/// metadata). The first record is the version event ("brain.Event:2").
///
/// Crashes: records are appended whole and the file only grows, as TensorFlow's writer
/// does; a crash while writing leaves at most a torn last record, which TensorBoard's
/// reader drops (its CRC or length does not check) while reading everything before it.
/// Records wait in memory until `flush()`, `flush_seconds` after the previous flush, or
/// `flush_bytes` of them: a crash loses at most those. A write that fails (a full disk)
/// throws io_error naming the file; the records not written stay queued for the next flush.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"

namespace xq {

/// A histogram as TensorBoard stores it (tensorflow.HistogramProto): bucket i holds
/// `counts[i]` values in (limits[i - 1], limits[i]] (the first from `min`).
struct histogram_summary {
  double min = 0, max = 0, count = 0, sum = 0, sum_squares = 0;
  std::vector<double> limits;  ///< each bucket's right edge, increasing
  std::vector<double> counts;  ///< as many as limits

  /// The finite values of `data` in `bins` equal buckets from their min to their max (one
  /// bucket when all are equal; none when there are none). Non-finite values are left out.
  XQ_DECL static histogram_summary of(const float* data, std::size_t n, std::size_t bins = 30);
  static histogram_summary of(const tensor& t, std::size_t bins = 30) { return of(t.data(), t.size(), bins); }
  /// Buckets already counted: `counts[i]` values in [edges[i], edges[i + 1]) (a calibrator's
  /// histogram). argument_error unless there are counts + 1 increasing finite edges and
  /// finite counts >= 0. sum and sum_squares take each bucket's values at its centre.
  XQ_DECL static histogram_summary from_buckets(const std::vector<float>& edges, const std::vector<float>& counts);
};

struct summary_writer_options {
  double flush_seconds = 10.0;            ///< flush at the first record this long after the last flush
  std::size_t flush_bytes = 1u << 20;     ///< flush once this many bytes wait
  /// Appended to the file's name (PyTorch's filename_suffix): "events.out.tfevents.<...><suffix>".
  std::string filename_suffix;
};

/// One event file in a log directory (see the file comment). Not copyable; movable.
class summary_writer {
 public:
  /// Creates `log_dir` (and its parents) and a new event file in it; io_error naming the
  /// path if either cannot be made.
  XQ_DECL explicit summary_writer(std::string log_dir, summary_writer_options options = {});
  /// Flushes what waits; an error there is swallowed (a destructor cannot throw): call
  /// flush() first to see it.
  XQ_DECL ~summary_writer();
  XQ_DECL summary_writer(summary_writer&& o) noexcept;
  XQ_DECL summary_writer& operator=(summary_writer&& o) noexcept;
  summary_writer(const summary_writer&) = delete;
  summary_writer& operator=(const summary_writer&) = delete;

  /// A scalar (stored as float32, TensorBoard's simple_value).
  XQ_DECL void add_scalar(const std::string& tag, double value, std::int64_t step);
  /// A histogram of the finite values of `values` in `bins` buckets.
  XQ_DECL void add_histogram(const std::string& tag, const tensor& values, std::int64_t step, std::size_t bins = 30);
  XQ_DECL void add_histogram(const std::string& tag, const histogram_summary& h, std::int64_t step);
  /// Markdown text (TensorBoard's text plugin: tables, code and emphasis render).
  XQ_DECL void add_text(const std::string& tag, const std::string& markdown, std::int64_t step);

  /// Appends every waiting record to the file and flushes it to the operating system.
  XQ_DECL void flush();

  const std::string& log_dir() const noexcept { return log_dir_; }
  /// The event file's path.
  const std::string& file() const noexcept { return file_; }

 private:
  XQ_DECL void append_event(const std::string& event);
  XQ_DECL void close() noexcept;

  std::string log_dir_, file_;
  summary_writer_options options_;
  std::FILE* stream_ = nullptr;
  std::string pending_;    ///< framed records not written yet
  double last_flush_ = 0;  ///< steady-clock seconds
};

namespace detail {
/// `event` (a serialized tensorflow.Event) framed as one TFRecord record.
XQ_DECL std::string tfrecord(const std::string& event);
}  // namespace detail

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/summary_writer.ipp"
#endif
