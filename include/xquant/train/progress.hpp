#pragma once
/// \file progress.hpp
/// Training progress, as `fit` reports it. On a terminal: one line per epoch,
/// redrawn in place with '\r':
///
///     Epoch 2/10 - 120/469 [=======>......................] - loss: 0.5123 - accuracy: 0.8123 - 3521 samples/s - ETA 12s
///
/// Anywhere else (a log file, a pipe, a std::ostringstream): plain lines, never
/// '\r', one every ~10% of an epoch's steps and one at each epoch's end, so
/// logs stay readable:
///
///     epoch 2/10 - step 47/469 - loss: 0.6123 - accuracy: 0.7712 - 3521 samples/s - ETA 12s
///     epoch 2/10 - step 469/469 - loss: 0.4123 - accuracy: 0.8512 - 3521 samples/s - 2.1s - val_loss: 0.4500 - val_accuracy: 0.8400
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

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#if defined(_WIN32)
#include <io.h>
#else
#include <unistd.h>
#endif

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
  /// Plain style: intermediate lines per epoch (every steps/updates steps; 0: only epoch ends).
  std::size_t plain_updates = 10;
  /// Terminal style: the shortest time between two redraws, in seconds.
  double refresh_seconds = 0.1;
};

namespace detail {

inline bool stream_is_terminal(const std::ostream* s) {
#if defined(_WIN32)
  if (s == &std::cout) return _isatty(1) != 0;
  if (s == &std::cerr || s == &std::clog) return _isatty(2) != 0;
#else
  if (s == &std::cout) return isatty(STDOUT_FILENO) != 0;
  if (s == &std::cerr || s == &std::clog) return isatty(STDERR_FILENO) != 0;
#endif
  return false;
}

/// "12s", "3m05s", "1h02m".
inline std::string format_duration(double seconds) {
  if (!(seconds >= 0.0) || seconds > 1e9) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

/// "0.1s" below a minute, else as format_duration.
inline std::string format_elapsed(double seconds) {
  if (seconds >= 0.0 && seconds < 59.95) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
    return buf;
  }
  return format_duration(seconds);
}

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
           progress_options options = {})
      : epochs_(epochs), steps_(steps_per_epoch), metric_name_(std::move(metric_name)),
        options_(options), out_(options.stream ? options.stream : &std::cout) {
    style_ = options_.style;
    if (style_ == progress_style::automatic)
      style_ = detail::stream_is_terminal(out_) ? progress_style::terminal : progress_style::plain;
  }

  /// The style in use (`automatic` resolved).
  progress_style style() const noexcept { return style_; }

  /// Starts epoch `epoch` (1-based) and its clock.
  void begin_epoch(std::size_t epoch) {
    epoch_ = epoch;
    start_ = clock::now();
    last_draw_ = start_;
    drawn_ = false;
  }

  /// After step `step` (1-based) of the epoch, with `samples` seen so far in it
  /// and the running means of the loss and the metric.
  void update(std::size_t step, std::size_t samples, double loss, std::optional<double> metric = {}) {
    if (style_ == progress_style::silent || steps_ == 0) return;
    const auto now = clock::now();
    const double elapsed = seconds_between(start_, now);
    if (style_ == progress_style::terminal) {
      const bool due = !drawn_ || step >= steps_ ||
                       seconds_between(last_draw_, now) >= options_.refresh_seconds;
      if (!due) return;
      last_draw_ = now;
      drawn_ = true;
      const double eta = step ? elapsed / static_cast<double>(step) * static_cast<double>(steps_ - std::min(step, steps_)) : -1.0;
      redraw(head(step, true) + fields(loss, metric, rate(samples, elapsed)) + " - ETA " +
             detail::format_duration(eta));
      return;
    }
    if (options_.plain_updates == 0 || step == 0 || step >= steps_) return;
    const std::size_t every = std::max<std::size_t>(1, (steps_ + options_.plain_updates - 1) / options_.plain_updates);
    if (step % every != 0) return;
    const double eta = elapsed / static_cast<double>(step) * static_cast<double>(steps_ - step);
    *out_ << head(step, false) + fields(loss, metric, rate(samples, elapsed)) + " - ETA " +
                 detail::format_duration(eta) + "\n";
    out_->flush();
  }

  /// Ends the epoch: the final running means, its training time, the validation
  /// results when there were some, and named figures (the quantizer metrics), each
  /// on an indented line of its own after the epoch's line.
  void end_epoch(std::size_t samples, double loss, std::optional<double> metric, double seconds,
                 std::optional<double> val_loss = {}, std::optional<double> val_metric = {},
                 const std::vector<std::pair<std::string, double>>& named = {}) {
    if (style_ == progress_style::silent) return;
    std::string line = head(steps_, style_ == progress_style::terminal) +
                       fields(loss, metric, rate(samples, seconds)) + " - " + detail::format_elapsed(seconds);
    if (val_loss) line += " - val_loss: " + number(*val_loss);
    if (val_metric && !metric_name_.empty()) line += " - val_" + metric_name_ + ": " + number(*val_metric);
    if (style_ == progress_style::terminal) {
      redraw(line);
      *out_ << '\n';
      width_ = 0;
    } else {
      *out_ << line << '\n';
    }
    std::size_t name_width = 0;
    for (const auto& n : named) name_width = std::max(name_width, n.first.size());
    for (const auto& n : named)
      *out_ << "    " << n.first << ':' << std::string(name_width - n.first.size() + 2, ' ') << number(n.second)
            << '\n';
    out_->flush();
  }

 private:
  using clock = std::chrono::steady_clock;

  static double seconds_between(clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  static double rate(std::size_t samples, double seconds) {
    return seconds > 0.0 ? static_cast<double>(samples) / seconds : 0.0;
  }
  static std::string number(double v) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }

  std::string head(std::size_t step, bool bar) const {
    std::ostringstream s;
    if (bar) {
      s << "Epoch " << epoch_ << '/' << epochs_ << " - " << step << '/' << steps_ << " [";
      constexpr std::size_t width = 30;
      const std::size_t done = steps_ ? std::min(width, step * width / steps_) : width;
      for (std::size_t i = 0; i < width; ++i) s << (i < done ? '=' : (i == done ? '>' : '.'));
      s << ']';
    } else {
      s << "epoch " << epoch_ << '/' << epochs_ << " - step " << step << '/' << steps_;
    }
    return s.str();
  }

  std::string fields(double loss, const std::optional<double>& metric, double samples_per_second) const {
    std::string s = " - loss: " + number(loss);
    if (metric && !metric_name_.empty()) s += " - " + metric_name_ + ": " + number(*metric);
    char buf[48];
    std::snprintf(buf, sizeof buf, " - %.0f samples/s", samples_per_second);
    return s + buf;
  }

  // Rewrites the current terminal line, blanking what a longer previous line left.
  void redraw(const std::string& line) {
    *out_ << '\r' << line;
    if (line.size() < width_) *out_ << std::string(width_ - line.size(), ' ');
    width_ = std::max(width_, line.size());
    out_->flush();
  }

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
