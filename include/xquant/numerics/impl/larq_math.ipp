#pragma once
/// \file larq_math.ipp
/// The clipped gradient and the clip_value check of Larq's quantizers (numerics/larq_math.hpp).

#include <cmath>
#include <cstddef>

#include "../../core/error.hpp"
#include "../../kernels/branchless.hpp"
#include "../larq_math.hpp"

namespace xq::larq {

XQ_DECL tensor clipped_gradient(const tensor& x, const tensor& dy, float clip) {
  if (std::isinf(clip) && clip > 0.0f) return dy;  // no clipping: the gradient itself
  tensor dx = tensor::from_shape(x.shape());
  const float* xs = x.data();
  const float* g = dy.data();
  float* out = dx.data();
  const std::size_t n = x.size();
  // Selected by bits, on both cores when large, as approx_sign's gradient (a ternary here
  // left the loop on one thread with masked stores); workers inherit the FP environment.
  kernels::parallel_for(n, 64, [xs, g, out, clip](std::size_t lo, std::size_t hi) {
    XQ_OMP_SIMD
    for (std::size_t i = lo; i < hi; ++i) out[i] = kernels::branchless_select(std::fabs(xs[i]) <= clip, g[i], 0.0f);
  });
  return dx;
}

XQ_DECL void check_clip_value(const char* where, float clip) {
  if (!(clip > 0.0f))  // also rejects NaN
    throw argument_error(where, "clip_value > 0 (infinity: no clipping, Larq's None)", detail::concat(clip));
}

}  // namespace xq::larq
