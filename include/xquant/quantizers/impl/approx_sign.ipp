#pragma once
/// \file approx_sign.ipp
/// approx_sign's code (quantizers/approx_sign.hpp).

#include <cmath>
#include <cstddef>
#include <utility>

#include "../../core/fp_environment.hpp"
#include "../../kernels/branchless.hpp"
#include "../../kernels/parallel.hpp"
#include "../../numerics/larq_math.hpp"
#include "../approx_sign.hpp"

namespace xq {

XQ_DECL std::optional<quantization_grid> approx_sign::grid_of(const tensor& x) const {
  (void)x;
  if (!enabled() || !fake_quant_enabled()) return std::nullopt;
  return sign_grid();
}

XQ_DECL var approx_sign::quantize(const var& x) {
  const flush_denormals_scope as_in_tensorflow;
  tensor y = larq::map(x.value(), [](float v) { return larq::sign(v); });
  return emit(x, std::move(y), [x](const tensor& dy) {
    const flush_denormals_scope as_in_tensorflow;
    return gradient(x.value(), dy);
  });
}

XQ_DECL tensor approx_sign::gradient(const tensor& x, const tensor& dy) {
  tensor dx = tensor::from_shape(x.shape());
  const float* xs = x.data();
  const float* g = dy.data();
  float* out = dx.data();
  // Selected by bits, on both cores when large (2.7% of a binarized CNN's step as a
  // ternary on one thread); the workers inherit the caller's flushed denormals.
  kernels::parallel_for(x.size(), 64, [xs, g, out](std::size_t lo, std::size_t hi) {
    XQ_OMP_SIMD
    for (std::size_t i = lo; i < hi; ++i) {
      const float a = std::fabs(xs[i]);
      out[i] = kernels::branchless_select(a <= 1.0f, (1.0f - a) * 2.0f * g[i], 0.0f);  // NaN: 0 (the mask is false)
    }
  });
  return dx;
}

}  // namespace xq
