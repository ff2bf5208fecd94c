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

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "../core/error.hpp"
#include "../core/mode.hpp"
#include "../core/parameter.hpp"
#include "../numerics/torch_learnable_fake_quant.hpp"
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
  explicit lsq_quantizer(int num_bits = 8, lsq_scheme scheme = lsq_scheme::symmetric, bool use_grad_scaling = true)
      : quantizer_layer<lsq_quantizer>("lsq_quantizer"),
        num_bits_(num_bits),
        scheme_(scheme),
        use_grad_scaling_(use_grad_scaling) {
    if (num_bits < 2 || num_bits > 16)
      throw argument_error("xq::lsq_quantizer", "num_bits in [2, 16]", detail::concat(num_bits));
    if (scheme != lsq_scheme::symmetric && scheme != lsq_scheme::affine)
      throw argument_error("xq::lsq_quantizer", "scheme symmetric or affine",
                           detail::concat("lsq_scheme(", static_cast<int>(scheme), ")"));
    const std::int64_t levels = std::int64_t(1) << num_bits;
    quant_min_ = scheme == lsq_scheme::symmetric ? -levels / 2 : 0;
    quant_max_ = scheme == lsq_scheme::symmetric ? levels / 2 - 1 : levels - 1;
    scale_ = make_parameter("scale", xt::zeros<float>({std::size_t(1)}));
    if (scheme == lsq_scheme::affine) zero_point_ = make_parameter("zero_point", xt::zeros<float>({std::size_t(1)}));
    name_parameters();
  }

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
  bool initialized() const noexcept { return scale_->value.data()[0] != 0.0f; }

  /// Sets the scale (finite, > 0) and, for affine, the zero point (chainable).
  lsq_quantizer& set_scale(float scale, float zero_point = 0.0f) {
    if (!(scale > 0.0f) || !std::isfinite(scale))
      throw argument_error(path(), "a finite scale > 0", detail::concat(scale));
    if (!std::isfinite(zero_point) || (zero_point_ == nullptr && zero_point != 0.0f))
      throw argument_error(path(), zero_point_ ? "a finite zero_point" : "zero_point 0 (symmetric scheme)",
                           detail::concat(zero_point));
    scale_->value.data()[0] = scale;
    if (zero_point_) zero_point_->value.data()[0] = zero_point;
    return *this;
  }

  /// The learned scale and, for affine, the zero point.
  std::vector<parameter_ptr> parameters() const override { return {scale_, zero_point_}; }
  /// Each parameter slot, the absent zero point included (core/clone.hpp's protocol).
  void for_each_parameter_slot(const std::function<void(parameter_ptr&)>& f) override {
    f(scale_);
    f(zero_point_);
  }

 protected:

  /// LSQ's initialisation: the first training batch sets the scale (observer on).
  void observe(const tensor& x) override {
    if (!initialized()) initialize_from(x);
  }

  var quantize(const var& x) override {
    if (!initialized()) return x;  // nothing to quantize with yet: pass through
    float& s_value = scale_->value.data()[0];
    s_value = std::max(s_value, std::numeric_limits<float>::epsilon());  // _LearnableFakeQuantize's clamp
    const float s = s_value;
    const float zp = zero_point_ ? zero_point_->value.data()[0] : 0.0f;
    const float gf = use_grad_scaling_ ? torch::lsq_grad_factor(x.size(), quant_max_) : 1.0f;
    tensor y = torch::fake_quantize_learnable_per_tensor_affine(x.value(), s, zp, quant_min_, quant_max_, gf);
    const var scale_var(scale_);
    const bool record = zero_point_ ? needs_grad(x, scale_var, var(zero_point_)) : needs_grad(x, scale_var);
    return emit_with(x, std::move(y), record,
                     [x, scale = scale_, zero_point = zero_point_, s, zp, qmin = quant_min_, qmax = quant_max_,
                      gf](const tensor& dy) {
                       auto g = torch::fake_quantize_learnable_per_tensor_affine_backward(dy, x.value(), s, zp, qmin,
                                                                                          qmax, gf);
                       add_grad(var(scale), tensor{g.dscale});
                       if (zero_point) add_grad(var(zero_point), tensor{g.dzero_point});
                       return std::move(g.dx);
                     });
  }

 private:
  // LSQ's initialisation from the first training batch (a batch of zeros leaves the
  // quantizer uninitialised).
  void initialize_from(const tensor& x) {
    const float* xs = x.data();
    const std::size_t n = x.size();
    double sum = 0.0;
    float lowest = std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < n; ++i) {
      sum += std::fabs(xs[i]);
      lowest = std::min(lowest, xs[i]);
    }
    if (!std::isfinite(sum))
      throw argument_error(path(), "finite values to initialise the scale from", "NaN or infinity in the input");
    if (n == 0 || sum == 0.0) return;
    const double mean = sum / static_cast<double>(n);
    const float s = static_cast<float>(2.0 * mean / std::sqrt(static_cast<double>(quant_max_)));
    if (!(s > 0.0f)) return;  // underflow: stay uninitialised
    scale_->value.data()[0] = s;
    if (zero_point_) {
      const float zp = std::nearbyint(static_cast<float>(quant_min_) - lowest / s);
      zero_point_->value.data()[0] =
          std::min(std::max(zp, static_cast<float>(quant_min_)), static_cast<float>(quant_max_));
    }
  }

  int num_bits_;
  lsq_scheme scheme_;
  bool use_grad_scaling_;
  std::int64_t quant_min_ = 0, quant_max_ = 0;
  parameter_ptr scale_, zero_point_;
};

}  // namespace xq
