#pragma once
/// \file tensorboard.ipp
/// The TensorBoard callback (io/tensorboard.hpp).

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../../core/model.hpp"
#include "../../kernels/channel_layout.hpp"
#include "../../quantizers/quantization_grid.hpp"
#include "../../quantizers/quantizer_call_observer.hpp"
#include "../../quantizers/quantizer_layer.hpp"
#include "../tensorboard.hpp"

namespace xq {

namespace detail {

/// The largest finite value of a float element type (448 for E4M3FN, 6 for E2M1).
XQ_DECL double largest_element_value(grid_element e) {
  double m = 0;
  const std::uint32_t codes = 1u << element_bits(e);
  for (std::uint32_t c = 0; c < codes; ++c) {
    const double v = element_value(e, c);
    if (std::isfinite(v)) m = std::max(m, v);
  }
  return m;
}

/// The reals each scale of `grid` reaches, [lo[i], hi[i]]; empty for a binary grid (its
/// signs clip nothing: every input maps to ±scale).
XQ_DECL void grid_reach(const quantization_grid& grid, std::vector<float>& lo, std::vector<float>& hi) {
  lo.clear();
  hi.clear();
  if (grid.element == grid_element::binary) return;
  const double tensor_scale = grid.tensor_scale ? double(*grid.tensor_scale) : 1.0;
  const double element_max = is_float_element(grid.element) ? largest_element_value(grid.element) : 0.0;
  for (std::size_t i = 0; i < grid.scale.size(); ++i) {
    const double s = double(grid.scale[i]) * tensor_scale;
    double a, b;
    if (is_float_element(grid.element)) {
      a = -element_max * s;
      b = element_max * s;
    } else {
      const double zp = i < grid.zero_point.size() ? double(grid.zero_point[i]) : 0.0;
      a = (double(grid.qmin) - zp) * s;
      b = (double(grid.qmax) - zp) * s;
      if (i < grid.offset.size()) {
        a += grid.offset[i];
        b += grid.offset[i];
      }
    }
    lo.push_back(static_cast<float>(std::min(a, b)));
    hi.push_back(static_cast<float>(std::max(a, b)));
  }
}

/// "a \| b": a table cell of TensorBoard's markdown.
XQ_DECL std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

}  // namespace detail

/// What a logged step saw of each quantizer it called, in call order.
struct tensorboard::watch final : quantizer_call_observer {
  struct seen {
    const quantizer_base* quantizer = nullptr;
    std::string path, kind;
    std::optional<quantization_grid> grid;  ///< the last call's
    std::size_t elements = 0, clipped = 0;  ///< over the calls with a range
    float range_min = 0, range_max = 0;
    bool has_range = false;
    histogram_summary input, output;  ///< the last call's (histogram steps)
  };
  std::vector<seen> quantizers;
  bool histograms = false;
  std::size_t bins = 30;
  quantizer_call_observer* previous = nullptr;
  bool installed = false;
  std::vector<float> lo, hi;  // scratch

  void install() {
    uninstall();
    previous = quantizer_call_observer::current();
    quantizer_call_observer::current() = this;
    installed = true;
  }
  void uninstall() noexcept {
    if (installed && quantizer_call_observer::current() == this) quantizer_call_observer::current() = previous;
    installed = false;
  }

  void called(const quantizer_base& q, const tensor& x, const tensor& y) override {
    auto it = std::find_if(quantizers.begin(), quantizers.end(), [&](const seen& s) { return s.quantizer == &q; });
    if (it == quantizers.end()) {
      quantizers.emplace_back();
      it = quantizers.end() - 1;
      it->quantizer = &q;
      it->path = q.path();
      it->kind = q.describe();
    }
    seen& s = *it;
    if (histograms) {
      s.input = histogram_summary::of(x, bins);
      s.output = histogram_summary::of(y, bins);
    }
    try {
      s.grid = q.grid_of(x);
    } catch (const error&) {
      s.grid.reset();  // a grid this input cannot have: no range figures for it
    }
    if (!s.grid || x.size() == 0) return;
    const quantization_grid& g = *s.grid;
    detail::grid_reach(g, lo, hi);
    if (lo.empty()) return;
    kernels::channel_layout l{1, 1, x.size()};
    if (g.granularity() != grid_granularity::per_tensor) {
      try {
        l = kernels::channel_layout::of(x.shape(), g.channel_axis, s.path.c_str());
        if (grid_scale_count(g, std::vector<std::size_t>(x.shape().begin(), x.shape().end()), s.path) != lo.size())
          return;
      } catch (const error&) {
        return;
      }
    } else if (lo.size() != 1) {
      return;
    }
    std::size_t clipped = 0;
    const float* v = x.data();
    detail::for_each_scale_run(g, l.outer, l.channels, l.inner,
                               [&](std::size_t first, std::size_t count, std::size_t index, std::size_t step) {
                                 if (step == 0) {
                                   const float a = lo[index], b = hi[index];
                                   for (std::size_t k = 0; k < count; ++k)
                                     clipped += static_cast<std::size_t>((v[first + k] < a) | (v[first + k] > b));
                                 } else {
                                   for (std::size_t k = 0; k < count; ++k) {
                                     const std::size_t i = index + k * step;
                                     clipped += static_cast<std::size_t>((v[first + k] < lo[i]) | (v[first + k] > hi[i]));
                                   }
                                 }
                               });
    s.clipped += clipped;
    s.elements += x.size();
    s.range_min = *std::min_element(lo.begin(), lo.end());
    s.range_max = *std::max_element(hi.begin(), hi.end());
    s.has_range = true;
  }
};

XQ_DECL tensorboard::tensorboard(tensorboard_options options)
    : options_(std::move(options)), watch_(std::make_unique<watch>()) {
  if (options_.log_dir.empty()) throw argument_error("xq::tensorboard", "a log directory", "an empty log_dir");
  watch_->bins = std::max<std::size_t>(options_.histogram_bins, 1);
}

XQ_DECL tensorboard::~tensorboard() { watch_->uninstall(); }

XQ_DECL void tensorboard::on_train_begin(const fit_context& context) {
  watch_->uninstall();
  context_ = context;
  if (context.rank != 0) return;  // rank 0 writes
  const std::filesystem::path dir(options_.log_dir);
  if (!train_) train_ = std::make_unique<summary_writer>((dir / "train").string());
}

XQ_DECL void tensorboard::on_step_begin(std::size_t global_step) {
  watch_->uninstall();
  watch_->quantizers.clear();
  logged_now_ = false;
  histograms_now_ = false;
  if (!train_ || context_.steps_per_epoch == 0) return;
  const std::size_t steps = context_.steps_per_epoch;
  const bool last_of_epoch = global_step % steps == 0;
  const std::size_t epoch = (global_step - 1) / steps + 1;
  logged_now_ = last_of_epoch || (options_.update_freq && global_step % options_.update_freq == 0);
  histograms_now_ = last_of_epoch && options_.histogram_freq && epoch % options_.histogram_freq == 0;
  if (logged_now_ && options_.quantizers) {
    watch_->histograms = histograms_now_;
    watch_->install();
  }
}

XQ_DECL void tensorboard::on_step_end(const fit_step& step) {
  watch_->uninstall();
  if (step.learning_rate) last_learning_rate_ = *step.learning_rate;
  if (!train_ || !logged_now_) return;
  summary_writer& w = *train_;
  const auto at = static_cast<std::int64_t>(step.global_step);
  w.add_scalar("batch_loss", step.loss, at);
  if (step.metric && !context_.metric_name.empty()) w.add_scalar("batch_" + context_.metric_name, *step.metric, at);
  if (step.learning_rate) w.add_scalar("batch_learning_rate", *step.learning_rate, at);
  w.add_scalar("batch_seconds", step.seconds, at);
  if (step.seconds > 0) w.add_scalar("batch_samples_per_second", double(step.samples) / step.seconds, at);

  std::string table = "| quantizer | kind | grid | clipped |\n|---|---|---|---|\n";
  for (const watch::seen& s : watch_->quantizers) {
    // Larq's metrics so far this epoch (fit resets them at each epoch's start), as Keras
    // logs a model's metrics at batch level.
    s.quantizer->for_each_metric([&](const std::string& name, double value) { w.add_scalar("batch_" + name, value, at); });
    if (s.grid) {
      const quantization_grid& g = *s.grid;
      if (g.granularity() == grid_granularity::per_tensor && g.scale.size() == 1) {
        w.add_scalar("scale/" + s.path, g.scale[0], at);
        if (!g.zero_point.empty()) w.add_scalar("zero_point/" + s.path, g.zero_point[0], at);
      } else if (!g.scale.empty()) {
        w.add_histogram("scale/" + s.path, histogram_summary::of(g.scale.data(), g.scale.size(), watch_->bins), at);
      }
    }
    if (s.has_range) {
      w.add_scalar("range_min/" + s.path, s.range_min, at);
      w.add_scalar("range_max/" + s.path, s.range_max, at);
      w.add_scalar("clipped/" + s.path, s.elements ? double(s.clipped) / double(s.elements) : 0.0, at);
    }
    if (histograms_now_) {
      w.add_histogram("quantizer_input/" + s.path, s.input, at);
      w.add_histogram("quantizer_output/" + s.path, s.output, at);
      table += "| " + detail::markdown_cell(s.path) + " | " + detail::markdown_cell(s.kind) + " | " +
               detail::markdown_cell(s.grid ? describe(*s.grid) : std::string("none (passes values through)")) +
               " | " +
               (s.has_range ? detail::concat(100.0 * double(s.clipped) / double(std::max<std::size_t>(s.elements, 1)), " %")
                            : std::string("-")) +
               " |\n";
    }
  }
  if (histograms_now_) {
    for (const parameter_ptr& p : detail::parameters(context_.model))
      if (p) w.add_histogram("weights/" + p->name(), p->value, at, watch_->bins);
    if (!watch_->quantizers.empty()) w.add_text("quantizers", table, at);
  }
  watch_->quantizers.clear();
}

XQ_DECL void tensorboard::on_epoch_end(const epoch_record& r) {
  if (!train_) return;
  const auto at = static_cast<std::int64_t>(r.epoch);
  summary_writer& w = *train_;
  w.add_scalar("epoch_loss", r.loss, at);
  if (r.metric && !context_.metric_name.empty()) w.add_scalar("epoch_" + context_.metric_name, *r.metric, at);
  if (last_learning_rate_ >= 0) w.add_scalar("epoch_learning_rate", last_learning_rate_, at);
  w.add_scalar("epoch_seconds", r.seconds, at);
  w.add_scalar("epoch_samples_per_second", r.samples_per_second, at);
  for (const auto& [name, value] : r.quantizer_metrics) w.add_scalar("epoch_" + name, value, at);
  if (r.val_loss) {
    // Made at the first validation, so that a fit without validation data has no empty run.
    if (!validation_)
      validation_ = std::make_unique<summary_writer>((std::filesystem::path(options_.log_dir) / "validation").string());
    validation_->add_scalar("epoch_loss", *r.val_loss, at);
    if (r.val_metric && !context_.metric_name.empty())
      validation_->add_scalar("epoch_" + context_.metric_name, *r.val_metric, at);
    validation_->flush();
  }
  w.flush();
}

XQ_DECL void tensorboard::on_train_end(const fit_history& history) {
  (void)history;
  watch_->uninstall();
  if (train_) train_->flush();
  if (validation_) validation_->flush();
}

}  // namespace xq
