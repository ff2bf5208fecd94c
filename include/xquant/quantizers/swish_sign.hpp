#pragma once
/// \file swish_sign.hpp
/// `xq::swish_sign`: binarization with the SignSwish gradient of BNN+ (Larq's
/// `SwishSign`).
///
///   forward:  q(x) = +1 if x >= 0 else -1           (Larq: sign(0) = +1)
///   backward: dq/dx = β (2 - βx tanh(βx/2)) / (1 + cosh(βx))   everywhere (β at 0)
///
/// Default β = 5, as Larq. The gradient is evaluated in Larq's order,
/// ((dy·β)·(2 - βx·tanh(βx·0.5))) / (1 + cosh(βx)), with TF's tanh and cosh
/// (larq_math.hpp), so it matches Larq bit for bit, its overflows included: for large
/// |x| cosh overflows and the gradient is ±0; once βx itself overflows it is NaN.

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `SwishSign` quantizer (precision 1).
class swish_sign : public quantizer_layer<swish_sign> {
 public:
  /// `beta`: the sharpness of the surrogate (finite, > 0; Larq's default 5).
  explicit swish_sign(float beta = 5.0f);

  /// 1: binary.
  int precision() const noexcept override { return 1; }
  float beta() const noexcept { return beta_; }

  /// ±1 (sign_grid()).
  XQ_DECL std::optional<quantization_grid> grid_of(const tensor& x) const override;

  XQ_DECL var quantize(const var& x) override;

  /// The input gradient for upstream gradient `dy` at `x` (Larq's `swish_sign` grad).
  static tensor gradient(const tensor& x, const tensor& dy, float beta);

 private:
  float beta_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/swish_sign.ipp"
#endif
