#pragma once
/// \file moving_average_quantizer.hpp
/// `xq::moving_average_quantizer`: tfmot's `MovingAverageQuantizer` (the activation and
/// output quantizer of tfmot's Default 8-bit scheme) as a quantizer layer: a k-bit
/// (default 8-bit) per-tensor TF FakeQuant whose range follows the training batches
/// by an exponential moving average. It fits the same slots as Larq's quantizers
/// (input or kernel quantizer of a quant layer, standalone in a sequential) and keeps
/// the same metrics.
///
/// The numerics are tfmot's, bit for bit, because this layer calls the operators that
/// are golden-tested against it (SEMANTICS.md §3), and computes nothing of its own:
///  - a training call (inside `xq::training_mode`) runs `tfmot::range_quantizer` with
///    the moving-average rule: the batch range [min(bmin, 0), max(bmax, 0)] (or the
///    symmetric rule), then var -= (var - value) * (1 - 0.999), no zero-debias, so the
///    first batch does not overwrite the initial -6 / +6; then
///    `tf.quantization.fake_quant_with_min_max_vars` with the updated range;
///  - an inference call uses the stored range and changes nothing;
///  - the gradient is `FakeQuantWithMinMaxVarsGradient`'s input gradient (dy where
///    nudged_min <= x <= nudged_max) for the range the forward used. The range gets
///    no gradient: tfmot's variables are `trainable=False`, tracked, not trained.
///
/// The running range is kept as two non-trainable parameters, "min_var" and "max_var"
/// (shape {1}; the names of quant_ops.py's arguments; tfmot's Keras weights are
/// "<name>_min" / "<name>_max"), so `parameters(model)` lists them ("net/fc/
/// input_quantizer/min_var"), and checkpoints, `clone_model` and the model summary
/// (as non-trainable params) carry them like batch-norm's moving statistics.
///
/// Deliberate differences from tfmot: a training batch with NaN or ±Inf is rejected
/// (argument_error naming the path) and the range left as it was (tfmot stores it and
/// every later output is NaN); an empty training batch leaves the range alone (TF's
/// reduce_min of nothing is +Inf, clipped to 0, which would pull the range to 0).
/// tfmot's `per_axis` is not offered: its MovingAverageQuantizer ignores it.
///
/// \code
///   auto fc = xq::quant_dense(10, xq::moving_average_quantizer(), xq::ste_sign());
///   xq::moving_average_quantizer sym(8, true, true);   // symmetric, narrow range
/// \endcode

#include <cstddef>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/mode.hpp"
#include "../core/parameter.hpp"
#include "../numerics/tf_fake_quant.hpp"
#include "../numerics/tfmot_quantizers.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// tfmot's MovingAverageQuantizer (per tensor, EMA decay 0.999, range from -6 / +6).
class moving_average_quantizer : public quantizer_layer<moving_average_quantizer> {
 public:
  /// tfmot's initial range of MovingAverageQuantizer's variables.
  static constexpr float initial_min = -6.0f;
  static constexpr float initial_max = 6.0f;

  /// `num_bits` in [2, 16]; `symmetric` and `narrow_range` as tfmot's
  /// `MovingAverageQuantizer(num_bits, per_axis, symmetric, narrow_range)`.
  explicit moving_average_quantizer(int num_bits = 8, bool symmetric = false, bool narrow_range = false)
      : quantizer_layer<moving_average_quantizer>("moving_average_quantizer"),
        options_{num_bits, false, symmetric, narrow_range, 0.999} {
    if (num_bits < 2 || num_bits > 16)
      throw argument_error(path(), "num_bits in [2, 16]", detail::concat(num_bits));
    min_ = make_parameter("min_var", tensor{initial_min}, false);
    max_ = make_parameter("max_var", tensor{initial_max}, false);
    name_parameters();
  }

  /// num_bits.
  int precision() const noexcept { return options_.num_bits; }
  int num_bits() const noexcept { return options_.num_bits; }
  bool symmetric() const noexcept { return options_.symmetric; }
  bool narrow_range() const noexcept { return options_.narrow_range; }
  double ema_decay() const noexcept { return options_.ema_decay; }

  /// The running minimum (shape {1}, non-trainable).
  const parameter_ptr& min_var() const noexcept { return min_; }
  /// The running maximum (shape {1}, non-trainable).
  const parameter_ptr& max_var() const noexcept { return max_; }

  std::vector<parameter_ptr> parameters() const { return {min_, max_}; }
  /// Each parameter slot (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(min_);
    f(max_);
  }

  var quantize(const var& x) {
    // The operator owns its range; it starts from the stored one and, on a training
    // call, its updated range is stored back (only when it succeeded: a rejected
    // batch leaves the parameters alone).
    float& stored_min = min_->value.data()[0];
    float& stored_max = max_->value.data()[0];
    tensor y;
    float used_min = 0.0f, used_max = 0.0f;
    try {
      tfmot::range_quantizer op(tfmot::range_update::moving_average, options_, 1, stored_min, stored_max);
      y = op(x.value(), is_training() && x.size() != 0);
      used_min = op.state().min(0);
      used_max = op.state().max(0);
    } catch (const argument_error& e) {
      throw argument_error(path(), e.expected(), detail::concat(e.given(), " (in ", e.where(), ")"));
    }
    stored_min = used_min;
    stored_max = used_max;
    return emit(x, std::move(y), [x, used_min, used_max, bits = options_.num_bits,
                                  narrow = options_.narrow_range](const tensor& dy) {
      return std::move(tf::fake_quant_with_min_max_vars_gradient(dy, x.value(), used_min, used_max, bits, narrow).dx);
    });
  }

 private:
  tfmot::quantizer_options options_;
  parameter_ptr min_, max_;
};

}  // namespace xq
