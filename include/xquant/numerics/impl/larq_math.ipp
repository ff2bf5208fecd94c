#pragma once
/// \file larq_math.ipp
/// The clipped gradient and the clip_value check of Larq's quantizers (numerics/larq_math.hpp).

#include <cmath>
#include <cstddef>

#include "../../core/error.hpp"
#include "../larq_math.hpp"

namespace xq::larq {

XQ_DECL tensor clipped_gradient(const tensor& x, const tensor& dy, float clip) {
  tensor dx = tensor::from_shape(x.shape());
  const float* xs = x.data();
  const float* g = dy.data();
  float* out = dx.data();
  const std::size_t n = x.size();
  if (std::isinf(clip) && clip > 0.0f) {
    for (std::size_t i = 0; i < n; ++i) out[i] = g[i];
    return dx;
  }
  XQ_OMP_SIMD
  for (std::size_t i = 0; i < n; ++i) out[i] = std::fabs(xs[i]) <= clip ? g[i] : 0.0f;
  return dx;
}

XQ_DECL void check_clip_value(const char* where, float clip) {
  if (!(clip > 0.0f))  // also rejects NaN
    throw argument_error(where, "clip_value > 0 (infinity: no clipping, Larq's None)", detail::concat(clip));
}

}  // namespace xq::larq
