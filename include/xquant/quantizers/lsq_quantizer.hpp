#pragma once
/// \file lsq_quantizer.hpp
/// `xq::lsq_quantizer`: a k-bit (default 8-bit) fake quantizer with a learned scale
/// (LSQ, Esser et al. 2020), as a quantizer layer. Not a Larq quantizer: Larq has none
/// with trainable parameters; this one fits the same slots (input or kernel quantizer
/// of a quant layer, standalone in a sequential) and keeps the same metrics.
///
/// The operator is PyTorch's `_fake_quantize_learnable_per_tensor_affine`
/// (quant/torch_learnable_fake_quant.hpp, bit for bit), run as
/// `torch.ao.quantization._LearnableFakeQuantize` runs it:
///  - scheme symmetric: integers [-2^(b-1), 2^(b-1) - 1], zero point 0, only the scale
///    is learned; scheme affine: integers [0, 2^b - 1], a learned (float) zero point;
///  - forward: clamp(round(x / s) + zp) - zp, times s; the gradient: dy inside the range,
///    0 outside, and LSQ's scale (and zero-point) gradients, summed over the tensor;
///  - `use_grad_scaling` (default on, as LSQ): the parameter gradients are multiplied
///    by 1 / sqrt(numel(x) · quant_max);
///  - before each call the scale is clamped to at least float32's epsilon (2^-23), in
///    place, as `_LearnableFakeQuantize` clamps it: an optimizer step may overshoot.
///
/// Parameters: "scale" (shape {1}, trainable) and, for affine, "zero_point" (shape {1},
/// trainable); created at construction, so optimizers and `parameters(model)` see them
/// before the first call. A scale of exactly 0 means "not initialised yet": the first
/// *training* call (inside `xq::training_mode`) initialises it from its input as LSQ
/// does, s = 2 · mean(|x|) / sqrt(quant_max), and for affine sets the zero point so
/// that the input's minimum maps to the lowest level, clamp(round(-min(x) / s), 0,
/// quant_max). Until then (inference calls, `xq::build`'s call on zeros, a training
/// batch of zeros) the quantizer passes its input through unchanged. `set_scale`
/// initialises it by hand. Because the state is the parameter's value, a checkpoint
/// restores it: a restored trained scale is not initialised again.
///
/// \code
///   xq::lsq_quantizer q;                                  // 8-bit, symmetric
///   xq::lsq_quantizer a(4, xq::lsq_scheme::affine);       // 4-bit, learned zero point
///   xq::sgd opt(q.parameters(), {0.01f});
/// \endcode

#include <cstdint>
#include <functional>
#include <vector>

#include "../config.hpp"
#include "../core/parameter.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// The integer range of an `lsq_quantizer`.
enum class lsq_scheme {
  symmetric,  ///< [-2^(b-1), 2^(b-1) - 1], zero point 0 (PyTorch's per_tensor_symmetric, qint8)
  affine,     ///< [0, 2^b - 1] with a learned zero point (per_tensor_affine, quint8)
};

/// A learned-scale fake quantizer (LSQ) on PyTorch's learnable fake-quant operator.
class lsq_quantizer : public quantizer_layer<lsq_quantizer> {
 public:
  /// `num_bits` in [2, 16].
  explicit lsq_quantizer(int num_bits = 8, lsq_scheme scheme = lsq_scheme::symmetric, bool use_grad_scaling = true);

  /// num_bits.
  int precision() const noexcept override { return num_bits_; }
  int num_bits() const noexcept { return num_bits_; }
  lsq_scheme scheme() const noexcept { return scheme_; }
  bool use_grad_scaling() const noexcept { return use_grad_scaling_; }
  std::int64_t quant_min() const noexcept { return quant_min_; }
  std::int64_t quant_max() const noexcept { return quant_max_; }

  /// The learned scale (shape {1}).
  const parameter_ptr& scale() const noexcept { return scale_; }
  /// The learned zero point (shape {1}); null for the symmetric scheme.
  const parameter_ptr& zero_point() const noexcept { return zero_point_; }
  /// False until the scale was set (by the first training call, `set_scale`, a checkpoint).
  /// Its scale initialised (by the first training batch, or restored).
  bool has_seen_data() const override { return initialized(); }
  bool initialized() const noexcept { return scale_->value.data()[0] != 0.0f; }

  /// Sets the scale (finite, > 0) and, for affine, the zero point (chainable).
  lsq_quantizer& set_scale(float scale, float zero_point = 0.0f);

  /// The grid of the learned scale (clamped to float32's epsilon, as the call clamps it)
  /// and the zero point rounded half to even, rounding_operator::lsq; nullopt until
  /// initialised (the call passes its input through then).
  XQ_DECL std::optional<quantization_grid> grid_of(const tensor& x) const override;

  /// The learned scale and, for affine, the zero point.
  XQ_DECL std::vector<parameter_ptr> parameters() const override;
  /// Each parameter slot, the absent zero point included (core/clone.hpp's protocol).
  XQ_DECL void for_each_parameter_slot(const std::function<void(parameter_ptr&)>& f) override;

 protected:

  /// LSQ's initialisation: the first training batch sets the scale (observer on).
  XQ_DECL void observe(const tensor& x) override;

  XQ_DECL var quantize(const var& x) override;

 private:
  // LSQ's initialisation from the first training batch (a batch of zeros leaves the
  // quantizer uninitialised).
  void initialize_from(const tensor& x);

  int num_bits_;
  lsq_scheme scheme_;
  bool use_grad_scaling_;
  std::int64_t quant_min_ = 0, quant_max_ = 0;
  parameter_ptr scale_, zero_point_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/lsq_quantizer.ipp"
#endif
