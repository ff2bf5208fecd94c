#pragma once
/// \file approx_sign.hpp
/// `xq::approx_sign`: binarization with the ApproxSign gradient of Bi-Real Net
/// (Larq's `ApproxSign`).
///
///   forward:  q(x) = +1 if x >= 0 else -1           (Larq: sign(0) = +1)
///   backward: dq/dx = 2 - 2|x| if |x| <= 1 else 0    (inclusive; 0 at |x| = 1)
///
/// The gradient is computed as Larq writes it, ((1 - |x|) * 2) * dy, so it matches
/// Larq bit for bit. Runs with denormals flushed, as TF does (larq_math.hpp).

#include <cmath>
#include <cstddef>

#include "../core/fp_environment.hpp"
#include "../numerics/larq_math.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `ApproxSign` quantizer (precision 1). No options.
class approx_sign : public quantizer_layer<approx_sign> {
 public:
  approx_sign() : quantizer_layer<approx_sign>("approx_sign") {}

  /// 1: binary.
  int precision() const noexcept override { return 1; }

  var quantize(const var& x) override {
    const flush_denormals_scope as_in_tensorflow;
    tensor y = larq::map(x.value(), [](float v) { return larq::sign(v); });
    return emit(x, std::move(y), [x](const tensor& dy) {
      const flush_denormals_scope as_in_tensorflow;
      return gradient(x.value(), dy);
    });
  }

  /// The input gradient for upstream gradient `dy` at `x` (Larq's `approx_sign` grad).
  static tensor gradient(const tensor& x, const tensor& dy) {
    tensor dx = tensor::from_shape(x.shape());
    const float* xs = x.data();
    const float* g = dy.data();
    float* out = dx.data();
    const std::size_t n = x.size();
    XQ_OMP_SIMD
    for (std::size_t i = 0; i < n; ++i) {
      const float a = std::fabs(xs[i]);
      out[i] = a <= 1.0f ? (1.0f - a) * 2.0f * g[i] : 0.0f;  // NaN: 0 (the mask is false)
    }
    return dx;
  }
};

}  // namespace xq
