#pragma once
/// \file fake_quantizer.hpp
/// `xq::fake_quantizer`: the stateful, tape-aware fake quantizer that a
/// quantized layer holds for its input, weight or output. It keeps a range
/// that follows the training batches (quantizer_config.hpp says how), and
/// runs one peer's fake-quant operator with it, forward and straight-through
/// backward, bit for bit as the operator functions of quant/:
///
///  - tf_qdq (NVIDIA's toolkit): tfmot's batch range rule, per channel on any
///    axis; tf::quantize_and_dequantize_v4 with the range given, half to
///    even; backward tf::quantize_and_dequantize_v4_gradient (dy where
///    min <= x <= max, the range as given);
///  - tf_fake_quant (tfmot): the same statistic with tfmot's update rules;
///    tf::fake_quant_with_min_max_vars[_per_channel]; backward the op's input
///    gradient (dy inside the nudged range). The range gets no gradient: it is
///    tracked, not trained;
///  - torch_fake_quant (PyTorch): the observer's raw min/max and update rule,
///    torch::calculate_qparams, torch::fake_quantize_per_{tensor,channel}_affine
///    and its cachemask gradient.
///
/// A training call is one pass for the range (range_statistics.hpp, with the
/// finite check folded in), one pass for the forward (the operator's SIMD
/// kernel, writing the gradient mask alongside for FakeQuant and PyTorch when
/// a gradient is wanted), and one for the backward. The backward step keeps
/// `x`'s shared state and the range the forward used, not a copy of `x`.
///
/// Every tracking rule works per tensor and per channel with every numerics
/// (tfmot itself keeps per-axis ranges for LastValue only; this extends its
/// rules channel by channel, starting each channel from the initial range).
///
/// Before the first training batch, inference uses init_min / init_max (tf;
/// 0 / 0 for all_values, as tfmot's AllValuesQuantizer), or scale 1 and zero
/// point 0 (torch, as PyTorch's FakeQuantize buffers before any observation).
/// A training batch with NaN or ±Inf is rejected (argument_error naming the
/// path) and the range is left as it was; the peers would store it, after
/// which every output is NaN.
///
/// \code
///   xq::quantizer_config c;  c.per_channel = true;   // NVIDIA weights: per channel, axis -1
///   xq::fake_quantizer weight_quantizer(c);
///   weight_quantizer.set_path("block/conv/weight_quantizer");
///   xq::var qw = weight_quantizer(w);                // training: range <- w, then QDQ
/// \endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "../core/fp_environment.hpp"
#include "../core/mode.hpp"
#include "../core/tape.hpp"
#include "../core/var.hpp"
#include "../kernels/channel_layout.hpp"
#include "../kernels/policy.hpp"
#include "../kernels/scalar.hpp"
#include "../kernels/simd.hpp"
#include "quantizer_config.hpp"
#include "../numerics/range_statistics.hpp"
#include "../core/tensor.hpp"
#include "../numerics/tf_fake_quant.hpp"
#include "../numerics/tf_quantize_and_dequantize.hpp"
#include "../numerics/tfmot_quantizers.hpp"
#include "../numerics/torch_fake_quant.hpp"
#include "../numerics/torch_observers.hpp"

namespace xq {

class fake_quantizer {
 public:
  /// Disabled, with the default config.
  fake_quantizer() { reset(); }
  /// Validates `config` (argument_error) and starts from the initial range.
  explicit fake_quantizer(quantizer_config config, bool enabled = true) : enabled_(enabled) {
    configure(config);
  }

  /// Disabled: returns `x` itself (same var, no copy, nothing recorded).
  /// Enabled: when is_training(), first updates the stored range from
  /// x.value() (per the tracking rule), then fake-quantizes x with the stored
  /// range using the configured numerics; records the straight-through
  /// backward (the peer's exact input-gradient mask) when needs_grad(x). In
  /// inference (is_training() false) the stored range is used and not updated.
  var operator()(const var& x) {
    if (!enabled_) return x;
    const tensor& xv = x.value();
    const kernels::channel_layout layout = layout_of(xv);
    if (is_training() && xv.size() != 0) observe(xv, layout);
    const bool record = needs_grad(x);
    switch (config_.numerics) {
      case quant_numerics::tf_qdq: return forward_tf_qdq(x, layout, record);
      case quant_numerics::tf_fake_quant: return forward_tf_fake_quant(x, layout, record);
      case quant_numerics::torch_fake_quant: return forward_torch(x, layout, record);
    }
    return x;
  }

  bool enabled() const noexcept { return enabled_; }
  void enable(bool on = true) noexcept { enabled_ = on; }

  const quantizer_config& config() const noexcept { return config_; }
  /// Validates `c` (num_bits for the numerics, the per-channel axis, decay
  /// constants, the initial range: argument_error naming path()), adopts it
  /// and resets the state.
  void configure(const quantizer_config& c) {
    validate(c, where());
    config_ = c;
    reset();
  }

  /// The stored range, one value per channel (size 1 when per tensor; size 0
  /// before the first per-channel batch). torch numerics keep the observer's
  /// min_val / max_val: +Inf / -Inf per tensor before the first batch.
  const vector& min() const noexcept { return min_; }
  const vector& max() const noexcept { return max_; }

  /// Sets the range (calibration, checkpoints): one value per tensor, or one
  /// per channel (size 0: back to before the first batch); each pair finite
  /// with min <= max (tf_fake_quant: min < max, or both 0). Also accepts what
  /// min() / max() give for an unobserved torch quantizer (+Inf / -Inf).
  void set_range(vector min, vector max) {
    const std::string w = where();
    if (min.size() != max.size())
      throw argument_error(w, "min and max of the same length",
                           detail::concat("lengths ", min.size(), " and ", max.size()));
    if (!config_.per_channel && min.size() != 1)
      throw argument_error(w, "one min and one max (per-tensor range)",
                           detail::concat(min.size(), " values"));
    for (std::size_t c = 0; c < min.size(); ++c) {
      const float lo = min(c), hi = max(c);
      const bool unobserved = config_.numerics == quant_numerics::torch_fake_quant &&
                              !config_.per_channel && lo == infinity() && hi == -infinity();
      if (unobserved) continue;
      if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
        throw argument_error(w, "finite min <= max",
                             detail::concat("min = ", lo, ", max = ", hi,
                                            config_.per_channel ? detail::concat(" at channel ", c) : ""));
      if (config_.numerics == quant_numerics::tf_fake_quant && lo == hi && lo != 0.0f)
        throw argument_error(w, "min < max, or min = max = 0 (tf_fake_quant divides by max - min)",
                             detail::concat("min = max = ", lo,
                                            config_.per_channel ? detail::concat(" at channel ", c) : ""));
    }
    min_ = std::move(min);
    max_ = std::move(max);
  }

  /// Training batches observed since the last reset or configure.
  std::size_t batches_seen() const noexcept { return batches_; }

  /// Brings back a saved state (checkpoints): the range as `set_range` takes it (and
  /// checks it), and the number of batches seen. On an exception nothing changes.
  void restore(vector min, vector max, std::size_t batches_seen) {
    set_range(std::move(min), std::move(max));
    batches_ = batches_seen;
  }

  /// Back to the initial state: the range before any batch, no batch seen.
  void reset() {
    batches_ = 0;
    if (config_.per_channel) {
      min_ = vector::from_shape({0});
      max_ = vector::from_shape({0});
    } else {
      min_ = vector({initial_min()});
      max_ = vector({initial_max()});
    }
  }

  const std::string& path() const noexcept { return path_; }
  /// E.g. "block/conv/input_quantizer"; named in every error.
  void set_path(std::string p) { path_ = std::move(p); }

 private:
  static float infinity() noexcept { return std::numeric_limits<float>::infinity(); }
  bool is_torch() const noexcept { return config_.numerics == quant_numerics::torch_fake_quant; }

  std::string where() const { return path_.empty() ? std::string("fake_quantizer") : path_; }

  /// The range before any batch: tfmot's variables start at init_min/max
  /// (AllValuesQuantizer at 0/0); PyTorch's observer at +Inf/-Inf.
  float initial_min() const noexcept {
    if (is_torch()) return infinity();
    return config_.tracking == range_tracking::all_values ? 0.0f : config_.init_min;
  }
  float initial_max() const noexcept {
    if (is_torch()) return -infinity();
    return config_.tracking == range_tracking::all_values ? 0.0f : config_.init_max;
  }

  /// The channel layout of `x`, checked against the channels seen so far.
  kernels::channel_layout layout_of(const tensor& x) const {
    if (!config_.per_channel) return kernels::channel_layout{1, 1, x.size()};
    const std::string w = where();
    const auto l = kernels::channel_layout::of(x.shape(), config_.channel_axis, w.c_str());
    if (min_.size() != 0 && min_.size() != l.channels)
      throw argument_error(w,
                           detail::concat(min_.size(), " channels on axis ", config_.channel_axis,
                                          " (as in the batches seen, or the range set)"),
                           detail::concat(l.channels, " channels, input of shape ",
                                          detail::shape_string(x.shape())));
    return l;
  }

  /// Errors from an operator name the quantizer's path, and the operator.
  template <class F>
  auto at_path(F&& f) const {
    try {
      return f();
    } catch (const argument_error& e) {
      throw argument_error(where(), e.expected(), detail::concat(e.given(), " (in ", e.where(), ")"));
    }
  }

  // ---- the range ------------------------------------------------------------

  range_statistics statistics(const tensor& x, const kernels::channel_layout& l) const {
    range_statistics s = measure_range(x, l);
    if (!s.finite) {
      const std::size_t at = first_non_finite(x);
      throw argument_error(where(), "finite values in the training batch (the range is left as it was)",
                           detail::concat(x.data()[at], " at flat index ", at));
    }
    return s;
  }

  void observe(const tensor& x, const kernels::channel_layout& l) {
    if (is_torch()) observe_torch(x, l);
    else observe_tf(x, l);
    ++batches_;
  }

  tfmot::quantizer_options tfmot_options() const {
    return {config_.num_bits, config_.per_channel, config_.symmetric, config_.narrow_range,
            config_.ema_decay};
  }

  static tfmot::range_update tfmot_rule(range_tracking t) noexcept {
    switch (t) {
      case range_tracking::last_value: return tfmot::range_update::last_value;
      case range_tracking::moving_average: return tfmot::range_update::moving_average;
      case range_tracking::all_values: return tfmot::range_update::all_values;
    }
    return tfmot::range_update::last_value;
  }

  /// tfmot's statistic and update (tfmot_quantizers.hpp), with denormals
  /// flushed as inside the TF ops that compute them.
  void observe_tf(const tensor& x, const kernels::channel_layout& l) {
    const flush_denormals_scope as_in_tensorflow;
    range_statistics s = statistics(x, l);
    tfmot::range_state batch{std::move(s.min), std::move(s.max)};
    tfmot::adjust_batch_range(batch, tfmot_options());
    tfmot::range_state state = initialized_range(l.channels);
    tfmot::update_range(tfmot_rule(config_.tracking), state, batch, config_.ema_decay);
    min_ = std::move(state.min);
    max_ = std::move(state.max);
  }

  /// The stored range, or the initial one for each of `channels` before the
  /// first per-channel batch (tfmot creates its per-axis variables at ±6).
  tfmot::range_state initialized_range(std::size_t channels) const {
    if (min_.size() != 0) return {min_, max_};
    tfmot::range_state r{vector::from_shape({channels}), vector::from_shape({channels})};
    std::fill(r.min.begin(), r.min.end(), initial_min());
    std::fill(r.max.begin(), r.max.end(), initial_max());
    return r;
  }

  /// PyTorch's observers (torch_observers.hpp), on the fast statistic:
  /// last_value keeps the batch's min/max; moving_average copies the first
  /// batch, then m += c * (cur - m) in float; all_values keeps the running
  /// min/max (MinMaxObserver).
  void observe_torch(const tensor& x, const kernels::channel_layout& l) {
    range_statistics s = statistics(x, l);
    const bool fresh = config_.per_channel
                           ? min_.size() == 0
                           : (min_(0) == infinity() && max_(0) == -infinity());
    const bool copy = config_.tracking == range_tracking::last_value ||
                      (fresh && config_.per_channel) ||
                      (fresh && config_.tracking == range_tracking::moving_average);
    if (copy) {
      min_ = std::move(s.min);
      max_ = std::move(s.max);
      return;
    }
    const float k = float(config_.averaging_constant);
    for (std::size_t c = 0; c < s.min.size(); ++c) {
      if (config_.tracking == range_tracking::moving_average) {
        min_(c) = min_(c) + k * (s.min(c) - min_(c));
        max_(c) = max_(c) + k * (s.max(c) - max_(c));
      } else {
        min_(c) = std::min(s.min(c), min_(c));
        max_(c) = std::max(s.max(c), max_(c));
      }
    }
  }

  // ---- forward and backward ---------------------------------------------------

  static tensor as_tensor(const vector& v) {
    tensor t = tensor::from_shape({v.size()});
    std::copy(v.begin(), v.end(), t.begin());
    return t;
  }

  /// Wraps `y`; the backward step is dy * mask (the mask the operator wrote
  /// with y), under TF's denormal flushing when `flush` (the TF gradient ops
  /// flush a denormal dy to 0).
  template <class Result>
  static var masked_result(const var& x, Result&& r, bool flush) {
    return make_result(std::move(r.y), true, [x, mask = std::move(r.mask), flush](const tensor& dy) {
      tensor dx = tensor::from_shape(dy.shape());
      if (flush) {
        const flush_denormals_scope as_in_tensorflow;
        kernels::apply_mask(default_policy{}, mask.data(), dy.data(), dx.data(), dx.size());
      } else {
        kernels::apply_mask(default_policy{}, mask.data(), dy.data(), dx.data(), dx.size());
      }
      add_grad(x, std::move(dx));
    });
  }

  var forward_tf_qdq(const var& x, const kernels::channel_layout& l, bool record) const {
    const tfmot::range_state r = initialized_range(l.channels);
    tf::qdq_options o;
    o.signed_input = true;
    o.num_bits = config_.num_bits;
    o.range_given = true;
    o.round = tf::round_mode::half_to_even;
    o.narrow_range = config_.narrow_range;
    o.axis = config_.channel_axis;
    o.per_axis = config_.per_channel;
    tensor lo = as_tensor(r.min), hi = as_tensor(r.max);
    tensor y = at_path([&] { return tf::quantize_and_dequantize_v4(x.value(), lo, hi, o); });
    // The V4 gradient reads x and the range as given; it recomputes the mask
    // from them (even where it passes everything, as per-tensor last value).
    return make_result(std::move(y), record,
                       [x, min = std::move(lo), max = std::move(hi), o](const tensor& dy) {
                         add_grad(x, tf::quantize_and_dequantize_v4_gradient(dy, x.value(), min, max, o));
                       });
  }

  var forward_tf_fake_quant(const var& x, const kernels::channel_layout& l, bool record) const {
    const tfmot::range_state r = initialized_range(l.channels);
    const tensor& xv = x.value();
    const int bits = config_.num_bits;
    const bool narrow = config_.narrow_range;
    if (config_.per_channel) {  // the last axis (validated)
      if (record)
        return masked_result(x, at_path([&] {
                               return tf::fake_quant_with_min_max_vars_per_channel_and_mask(
                                   xv, r.min, r.max, bits, narrow);
                             }),
                             true);
      return var(at_path([&] {
        return tf::fake_quant_with_min_max_vars_per_channel(xv, r.min, r.max, bits, narrow);
      }));
    }
    const float lo = r.min(0), hi = r.max(0);
    if (record)
      return masked_result(x, at_path([&] {
                             return tf::fake_quant_with_min_max_vars_and_mask(xv, lo, hi, bits, narrow);
                           }),
                           true);
    return var(at_path([&] { return tf::fake_quant_with_min_max_vars(xv, lo, hi, bits, narrow); }));
  }

  /// The observer options of the configured PyTorch grid: qint8 (symmetric;
  /// quant_min -127 when narrow) or quint8 (affine), int16 / uint16 beyond 8
  /// bits, always as an explicit [quant_min, quant_max] (the same as
  /// PyTorch's defaults at 8 bits, reduce_range included).
  torch::observer_options torch_options() const {
    torch::observer_options o;
    const int b = config_.num_bits;
    if (config_.symmetric) {
      o.type = b <= 8 ? torch::dtype::qint8 : torch::dtype::int16;
      o.scheme = config_.per_channel ? torch::qscheme::per_channel_symmetric
                                     : torch::qscheme::per_tensor_symmetric;
      o.quant_min = -(std::int64_t(1) << (b - 1)) + (config_.narrow_range ? 1 : 0);
      o.quant_max = (std::int64_t(1) << (b - 1)) - 1;
    } else {
      o.type = b <= 8 ? torch::dtype::quint8 : torch::dtype::uint16;
      o.scheme = config_.per_channel ? torch::qscheme::per_channel_affine
                                     : torch::qscheme::per_tensor_affine;
      o.quant_min = 0;
      o.quant_max = (std::int64_t(1) << b) - 1;
    }
    o.reduce_range = config_.reduce_range;
    o.averaging_constant = float(config_.averaging_constant);
    o.ch_axis = config_.channel_axis;
    return o;
  }

  var forward_torch(const var& x, const kernels::channel_layout& l, bool record) const {
    const torch::observer_options o = torch_options();
    const torch::quant_range q = at_path([&] {
      return torch::calculate_qmin_qmax(o.quant_min, o.quant_max, o.type, o.reduce_range);
    });
    const tensor& xv = x.value();
    if (!config_.per_channel) {
      // Unobserved (+Inf / -Inf): PyTorch's neutral scale 1, zero point 0.
      const torch::qparams p = at_path([&] { return torch::calculate_qparams(min_, max_, o); });
      const float s = p.scale(0);
      const std::int64_t zp = p.zero_point(0);
      if (record)
        return masked_result(x, at_path([&] {
                               return torch::fake_quantize_per_tensor_affine_and_mask(
                                   xv, s, zp, q.quant_min, q.quant_max);
                             }),
                             false);
      return var(at_path([&] {
        return torch::fake_quantize_per_tensor_affine(xv, s, zp, q.quant_min, q.quant_max);
      }));
    }
    torch::qparams p;
    if (min_.size() == 0) {  // no batch yet: scale 1, zero point 0 for every channel
      p.scale = vector::from_shape({l.channels});
      std::fill(p.scale.begin(), p.scale.end(), 1.0f);
      p.zero_point = torch::index_vector::from_shape({l.channels});
      std::fill(p.zero_point.begin(), p.zero_point.end(), 0);
    } else {
      p = at_path([&] { return torch::calculate_qparams(min_, max_, o); });
    }
    const long axis = config_.channel_axis;
    if (record)
      return masked_result(x, at_path([&] {
                             return torch::fake_quantize_per_channel_affine_and_mask(
                                 xv, p.scale, p.zero_point, axis, q.quant_min, q.quant_max);
                           }),
                           false);
    return var(at_path([&] {
      return torch::fake_quantize_per_channel_affine(xv, p.scale, p.zero_point, axis, q.quant_min,
                                                     q.quant_max);
    }));
  }

  quantizer_config config_;
  bool enabled_ = false;
  std::string path_;
  vector min_ = vector::from_shape({0});
  vector max_ = vector::from_shape({0});
  std::size_t batches_ = 0;
};

}  // namespace xq
