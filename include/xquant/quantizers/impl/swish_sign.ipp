#pragma once
/// \file swish_sign.ipp
/// swish_sign's code (quantizers/swish_sign.hpp).

#include <cmath>
#include <cstddef>
#include <utility>

#include "../../core/error.hpp"
#include "../../core/fp_environment.hpp"
#include "../../numerics/larq_math.hpp"
#include "../swish_sign.hpp"

namespace xq {

XQ_DECL swish_sign::swish_sign(float beta) : quantizer_layer<swish_sign>("swish_sign"), beta_(beta) {
  if (!(beta > 0.0f) || !std::isfinite(beta))
    throw argument_error("xq::swish_sign", "a finite beta > 0", detail::concat(beta));
}

XQ_DECL std::optional<quantization_grid> swish_sign::grid_of(const tensor& x) const {
  (void)x;
  if (!enabled() || !fake_quant_enabled()) return std::nullopt;
  return sign_grid();
}

XQ_DECL var swish_sign::quantize(const var& x) {
  const flush_denormals_scope as_in_tensorflow;
  tensor y = larq::map(x.value(), [](float v) { return larq::sign(v); });
  return emit(x, std::move(y), [x, beta = beta_](const tensor& dy) {
    const flush_denormals_scope as_in_tensorflow;
    return gradient(x.value(), dy, beta);
  });
}

XQ_DECL tensor swish_sign::gradient(const tensor& x, const tensor& dy, float beta) {
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

}  // namespace xq
