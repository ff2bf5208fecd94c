#pragma once
/// \file magnitude_aware_sign.ipp
/// magnitude_aware_sign's code (quantizers/magnitude_aware_sign.hpp).

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "../../core/fp_environment.hpp"
#include "../../numerics/larq_math.hpp"
#include "../../numerics/tf_cpu_reductions.hpp"
#include "../magnitude_aware_sign.hpp"

namespace xq {

XQ_DECL magnitude_aware_sign::magnitude_aware_sign(float clip_value)
    : quantizer_layer<magnitude_aware_sign>("magnitude_aware_sign"), clip_value_(clip_value) {
  larq::check_clip_value("xq::magnitude_aware_sign", clip_value);
}

XQ_DECL std::vector<float> magnitude_aware_sign::scales(const tensor& x) {
  const std::size_t n = x.size();
  const float* xs = x.data();
  std::vector<float> a;
  if (x.dimension() <= 1) {
    a.resize(n);
    XQ_OMP_SIMD
    for (std::size_t i = 0; i < n; ++i) a[i] = std::fabs(xs[i]);
    return a;
  }
  const std::size_t channels = x.shape().back();
  const std::size_t rows = channels ? n / channels : 0;
  std::vector<float> magnitude(n);
  XQ_OMP_SIMD
  for (std::size_t i = 0; i < n; ++i) magnitude[i] = std::fabs(xs[i]);
  a.resize(channels);
  // TF's reduce_mean: its float sum (in its order) divided by the count.
  tf::cpu::sum_rows(magnitude.data(), rows, channels, a.data());
  for (std::size_t c = 0; c < channels; ++c) a[c] /= static_cast<float>(rows);
  return a;
}

XQ_DECL std::optional<quantization_grid> magnitude_aware_sign::grid_of(const tensor& x) const {
  if (!enabled() || !fake_quant_enabled()) return std::nullopt;
  quantization_grid g = sign_grid();
  const flush_denormals_scope as_in_tensorflow;  // as the call computes the scales
  g.scale = scales(x);
  g.zero_point.assign(g.scale.size(), 0);
  g.per_channel = x.dimension() > 0;
  g.channel_axis = -1;
  g.dynamic = true;
  return g;
}

XQ_DECL var magnitude_aware_sign::quantize(const var& x) {
  const flush_denormals_scope as_in_tensorflow;
  const tensor& xv = x.value();
  std::vector<float> a = scales(xv);
  tensor y = tensor::from_shape(xv.shape());
  const std::size_t n = xv.size();
  const std::size_t channels = a.size();  // n for rank <= 1
  const float* xs = xv.data();
  const float* as = a.data();
  float* out = y.data();
  for (std::size_t r = 0; channels && r < n / channels; ++r) {
    const float* row = xs + r * channels;
    float* o = out + r * channels;
    XQ_OMP_SIMD
    // TF flushes the product a · sign(x) of a denormal scale to zero (a rank-1 input's
    // scale is its own |x|); the compiler makes the product a select, so flush it here.
    for (std::size_t c = 0; c < channels; ++c) o[c] = larq::flush_denormal(as[c] * larq::sign(row[c]));
  }
  return emit(x, std::move(y), [x, a = std::move(a), clip = clip_value_](const tensor& dy) {
    const flush_denormals_scope as_in_tensorflow;
    const tensor& xv = x.value();
    tensor dx = tensor::from_shape(xv.shape());
    const std::size_t n = xv.size();
    const std::size_t channels = a.size();
    const float* xs = xv.data();
    const float* g = dy.data();
    const float* as = a.data();
    float* out = dx.data();
    const bool unclipped = std::isinf(clip);  // Larq's None: no mask at all (NaN x included)
    const float limit = clip;
    for (std::size_t r = 0; channels && r < n / channels; ++r) {
      const std::size_t base = r * channels;
      if (unclipped) {
        XQ_OMP_SIMD
        for (std::size_t c = 0; c < channels; ++c) out[base + c] = as[c] * g[base + c];
      } else {
        // The product is computed for every element and then selected: a load under
        // the condition would be a masked load, which GCC does not vectorize here.
        XQ_OMP_SIMD
        for (std::size_t c = 0; c < channels; ++c) {
          const float v = as[c] * g[base + c];
          out[base + c] = std::fabs(xs[base + c]) <= limit ? v : 0.0f;
        }
      }
    }
    return dx;
  });
}

}  // namespace xq
