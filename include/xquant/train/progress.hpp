#pragma once
/// \file progress.hpp
/// Training progress, as `fit` reports it. On a terminal: one line per epoch,
/// redrawn in place with '\r':
///
///     Epoch 2/10 - 120/469 [=======>......................] - loss: 0.5123 - accuracy: 0.8123 - 3521 samples/s - ETA 12s
///
/// Anywhere else (a log file, a pipe, a std::ostringstream; std::cout, std::cerr and
/// std::clog are asked isatty on their descriptor): plain lines, never '\r', one at each
/// epoch's end, as Keras's one line per epoch (verbose=2) for output that is not a terminal:
///
///     epoch 2/10 - step 469/469 - loss: 0.4123 - accuracy: 0.8512 - 3521 samples/s - 2.1s - val_loss: 0.4500 - val_accuracy: 0.8400
///
/// `progress_options::plain_updates` adds intermediate lines (every steps/updates steps):
///
///     epoch 2/10 - step 47/469 - loss: 0.6123 - accuracy: 0.7712 - 3521 samples/s - ETA 12s
///
/// `progress_options::style` forces either style (`terminal`, `plain`) whatever the stream.
///
/// Loss and metrics are the running means of the epoch so far.
///
/// Quantizer metrics (flip ratio, gradient flow; quantizers/model_quantizers.hpp), when
/// the model keeps some, follow the epoch's last line in both styles, one indented
/// line each, names aligned, so ten quantizers stay readable:
///
///     epoch 2/10 - step 469/469 - loss: 0.4123 - accuracy: 0.8512 - 3521 samples/s - 2.1s
///         flip_ratio/quant_dense/kernel_quantizer:    0.0123
///         gradient_flow/quant_dense/input_quantizer:  0.8750

#include <chrono>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"

namespace xq {

/// How progress is shown.
enum class progress_style {
  automatic,  ///< `terminal` if the stream is std::cout/std::cerr/std::clog on a terminal, else `plain`
  terminal,   ///< one line per epoch, redrawn with '\r'
  plain,      ///< whole lines only
  silent,     ///< nothing
};

/// Where and how progress is shown.
struct progress_options {
  std::ostream* stream = nullptr;  ///< nullptr: std::cout
  progress_style style = progress_style::automatic;
  /// Plain style: intermediate lines per epoch (every steps/updates steps; 0: only epoch
  /// ends, one line per epoch in a log: the default).
  std::size_t plain_updates = 0;
  /// Terminal style: the shortest time between two redraws, in seconds.
  double refresh_seconds = 0.1;
};

namespace detail {

/// Whether `s` is std::cout, std::cerr or std::clog writing to a terminal.
XQ_DECL bool stream_is_terminal(const std::ostream* s);

/// "12s", "3m05s", "1h02m".
XQ_DECL std::string format_duration(double seconds);

/// "0.1s" below a minute, else as format_duration.
XQ_DECL std::string format_elapsed(double seconds);

}  // namespace detail

/// Prints training progress (used by `fit`; usable by a hand-written loop).
///
/// \code
///   xq::progress bar(epochs, steps, "accuracy");
///   bar.begin_epoch(1);
///   bar.update(step, samples_so_far, mean_loss, mean_accuracy);   // after each step
///   bar.end_epoch(samples, mean_loss, mean_accuracy, seconds);
/// \endcode
class progress {
 public:
  /// `metric_name` labels the metric column ("accuracy"); leave it empty when there is no metric.
  progress(std::size_t epochs, std::size_t steps_per_epoch, std::string metric_name = "accuracy",
           progress_options options = {});

  /// The style in use (`automatic` resolved).
  progress_style style() const noexcept { return style_; }

  /// Starts epoch `epoch` (1-based) and its clock.
  void begin_epoch(std::size_t epoch);

  /// After step `step` (1-based) of the epoch, with `samples` seen so far in it
  /// and the running means of the loss and the metric.
  void update(std::size_t step, std::size_t samples, double loss, std::optional<double> metric = {});

  /// Ends the epoch: the final running means, its training time, the validation
  /// results when there were some, and named figures (the quantizer metrics), each
  /// on an indented line of its own after the epoch's line.
  void end_epoch(std::size_t samples, double loss, std::optional<double> metric, double seconds,
                 std::optional<double> val_loss = {}, std::optional<double> val_metric = {},
                 const std::vector<std::pair<std::string, double>>& named = {});

  /// A line of its own after the epoch's (why training stopped, say); nothing when silent.
  void note(const std::string& line);

 private:
  using clock = std::chrono::steady_clock;

  static double seconds_between(clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  static double rate(std::size_t samples, double seconds) {
    return seconds > 0.0 ? static_cast<double>(samples) / seconds : 0.0;
  }
  static std::string number(double v);

  std::string head(std::size_t step, bool bar) const;

  std::string fields(double loss, const std::optional<double>& metric, double samples_per_second) const;

  // Rewrites the current terminal line, blanking what a longer previous line left.
  void redraw(const std::string& line);

  std::size_t epochs_, steps_;
  std::string metric_name_;
  progress_options options_;
  std::ostream* out_;
  progress_style style_;
  std::size_t epoch_ = 0;
  clock::time_point start_{}, last_draw_{};
  bool drawn_ = false;
  std::size_t width_ = 0;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/progress.ipp"
#endif
