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

#include <cmath>
#include <cstddef>

#include "../core/error.hpp"
#include "../core/fp_environment.hpp"
#include "../numerics/larq_math.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `SwishSign` quantizer (precision 1).
class swish_sign : public quantizer_layer<swish_sign> {
 public:
  /// `beta`: the sharpness of the surrogate (finite, > 0; Larq's default 5).
  explicit swish_sign(float beta = 5.0f) : quantizer_layer<swish_sign>("swish_sign"), beta_(beta) {
    if (!(beta > 0.0f) || !std::isfinite(beta))
      throw argument_error("xq::swish_sign", "a finite beta > 0", detail::concat(beta));
  }

  /// 1: binary.
  int precision() const noexcept override { return 1; }
  float beta() const noexcept { return beta_; }

  var quantize(const var& x) override {
    const flush_denormals_scope as_in_tensorflow;
    tensor y = larq::map(x.value(), [](float v) { return larq::sign(v); });
    return emit(x, std::move(y), [x, beta = beta_](const tensor& dy) {
      const flush_denormals_scope as_in_tensorflow;
      return gradient(x.value(), dy, beta);
    });
  }

  /// The input gradient for upstream gradient `dy` at `x` (Larq's `swish_sign` grad).
  static tensor gradient(const tensor& x, const tensor& dy, float beta) {
    tensor dx = tensor::from_shape(x.shape());
    const float* xs = x.data();
    const float* g = dy.data();
    float* out = dx.data();
    const std::size_t n = x.size();
    // Not `omp simd`: cosh is a libm call (TF calls it per element too).
    for (std::size_t i = 0; i < n; ++i) {
      const float bx = beta * xs[i];
      out[i] = g[i] * beta * (2.0f - bx * larq::tanh(bx * 0.5f)) / (1.0f + larq::cosh(bx));
    }
    return dx;
  }

 private:
  float beta_;
};

}  // namespace xq
