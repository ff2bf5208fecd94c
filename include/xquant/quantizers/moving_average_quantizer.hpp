#pragma once
/// \file moving_average_quantizer.hpp
/// `xq::moving_average_quantizer`: tfmot's `MovingAverageQuantizer` (the activation and
/// output quantizer of tfmot's Default 8-bit scheme) as a quantizer layer: a k-bit
/// (default 8-bit) per-tensor TF FakeQuant whose range follows the training batches by
/// an exponential moving average. It is a preset of `xq::fake_quantizer` (tf_fake_quant
/// numerics, tfmot's moving-average tracker, per tensor, decay 0.999 from -6 / +6), so it
/// computes exactly what the fake quantizers of tfmot's scheme compute, bit for bit
/// (docs/semantics.md §3):
///  - a training call (inside `xq::training_mode`) updates the range: the batch range
///    [min(bmin, 0), max(bmax, 0)] (or the symmetric rule), then var -= (var - value) *
///    (1 - 0.999), no zero-debias, so the first batch does not overwrite the initial -6 /
///    +6; then `tf.quantization.fake_quant_with_min_max_vars` with the updated range;
///  - an inference call uses the stored range and changes nothing;
///  - the gradient is `FakeQuantWithMinMaxVarsGradient`'s input gradient (dy where
///    nudged_min <= x <= nudged_max) for the range the forward used. The range gets no
///    gradient: tfmot's variables are `trainable=False`, tracked, not trained.
///
/// The running range is its two non-trainable parameters "min_var" and "max_var" (shape
/// {1}; the names of quant_ops.py's arguments), so `parameters(model)` lists them
/// ("net/fc/input_quantizer/min_var"), and checkpoints, `clone_model` and the model
/// summary carry them like batch-norm's moving statistics. It fits the same slots as
/// Larq's quantizers (input or kernel quantizer of a quant layer, standalone in a
/// sequential) and keeps the same metrics.
///
/// Deliberate differences from tfmot: a training batch with NaN or ±Inf is rejected
/// (argument_error naming the path) and the range left as it was; an empty training
/// batch leaves the range alone. tfmot's `per_axis` is not offered: its
/// MovingAverageQuantizer ignores it.
///
/// \code
///   auto fc = xq::quant_dense(10, xq::moving_average_quantizer(), xq::ste_sign());
///   xq::moving_average_quantizer sym(8, true, true);   // symmetric, narrow range
/// \endcode

#include <string>
#include <utility>

#include "../config.hpp"
#include "../core/type_name.hpp"
#include "fake_quantizer.hpp"

namespace xq {

/// tfmot's MovingAverageQuantizer (per tensor, EMA decay 0.999, range from -6 / +6).
class moving_average_quantizer : public fake_quantizer {
 public:
  /// tfmot's initial range of MovingAverageQuantizer's variables.
  static constexpr float initial_min = -6.0f;
  static constexpr float initial_max = 6.0f;

  /// `num_bits` in [2, 16]; `symmetric` and `narrow_range` as tfmot's
  /// `MovingAverageQuantizer(num_bits, per_axis, symmetric, narrow_range)`.
  explicit moving_average_quantizer(int num_bits = 8, bool symmetric = false, bool narrow_range = false)
      : fake_quantizer("moving_average_quantizer", &layer_type, preset(num_bits, symmetric, narrow_range)) {}

  using fake_quantizer::name;
  /// Renames the quantizer (chainable).
  moving_average_quantizer& name(std::string n) {
    fake_quantizer::name(std::move(n));
    return *this;
  }
  using fake_quantizer::metrics;
  /// Turns on exactly these metrics (chainable).
  moving_average_quantizer& metrics(quantizer_metric m) {
    fake_quantizer::metrics(m);
    return *this;
  }
  static std::string layer_type() { return detail::type_short_name<moving_average_quantizer>(); }

  int num_bits() const noexcept { return config().num_bits; }
  bool symmetric() const noexcept { return config().symmetric; }
  bool narrow_range() const noexcept { return config().narrow_range; }
  double ema_decay() const noexcept { return config().ema_decay; }

  /// The running minimum (shape {1}, non-trainable).
  const parameter_ptr& min_var() const noexcept { return min_parameter(); }
  /// The running maximum (shape {1}, non-trainable).
  const parameter_ptr& max_var() const noexcept { return max_parameter(); }

 private:
  static quantizer_config preset(int num_bits, bool symmetric, bool narrow_range);
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/moving_average_quantizer.ipp"
#endif
