#pragma once
/// \file torch_learnable_fake_quant.ipp
/// LSQ's grad factor, zero-point rounding, checks and parameter-gradient sums
/// (numerics/torch_learnable_fake_quant.hpp);
/// in separate mode also the operators for the default policy and the scalar reference.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../torch_learnable_fake_quant.hpp"

namespace xq::torch {

XQ_DECL float lsq_grad_factor(std::size_t numel, std::int64_t quant_max) {
  return float(1.0 / std::sqrt(double(numel) * double(quant_max)));
}

namespace detail {

XQ_DECL std::int64_t forward_zero_point(float zp, std::int64_t qmin, std::int64_t qmax) {
  const float r = std::nearbyint(zp);
  return x86_int64(std::min(std::max(r, float(qmin)), float(qmax)));
}

XQ_DECL std::int64_t backward_zero_point(float zp, std::int64_t qmin, std::int64_t qmax) {
  const float r = zp + 0.5f;
  return x86_int64(std::min(std::max(r, float(qmin)), float(qmax)));
}

XQ_DECL void check_learnable(float scale, float zp, std::int64_t qmin, std::int64_t qmax, const char* where) {
  check_quant_range(qmin, qmax, where);
  check_scale(scale, where);
  if (!std::isfinite(zp))
    throw argument_error(where, "a finite zero_point", xq::detail::concat("zero_point = ", zp));
}

XQ_DECL vector rounded_zero_points(const vector& zp, std::int64_t qmin, std::int64_t qmax) {
  vector r = vector::from_shape({zp.size()});
  for (std::size_t c = 0; c < zp.size(); ++c)
    r(c) = std::min(std::max(std::nearbyint(zp(c)), float(qmin)), float(qmax));
  return r;
}

XQ_DECL void learnable_param_grads(const learnable_fake_quantize_kernel<float>& k, const float* x,
                                   const float* dy, std::size_t n, float& dscale, float& dzero_point) {
  // FakeQuantPerTensorAffine.cpp: the kernel writes dScale_vec and dZeroPoint_vec, then
  // each is `.sum()`med.
  std::vector<float> d_scale(n), d_zero_point(n);
  for (std::size_t i = 0; i < n; ++i) {
    float t[2];
    k.param_grad_terms(x[i], dy[i], t);
    d_scale[i] = t[0];
    d_zero_point[i] = t[1];
  }
  const int threads = cpu::reduction_threads();
  dscale = cpu::sum(d_scale.data(), n, threads);
  dzero_point = cpu::sum(d_zero_point.data(), n, threads);
}

XQ_DECL void learnable_channel_param_grads(const learnable_fake_quantize_channels& table,
                                           const kernels::channel_layout& layout, const float* x,
                                           const float* dy, float* dscale, float* dzero_point) {
  // FakeQuantPerChannelAffine.cpp: dScale_vec.sum(axis_for_reduction), dZeroPoint_vec likewise.
  const std::size_t n = layout.size();
  std::vector<float> d_scale(n), d_zero_point(n);
  std::size_t i = 0;
  for (std::size_t o = 0; o < layout.outer; ++o)
    for (std::size_t c = 0; c < layout.channels; ++c) {
      const learnable_fake_quantize_kernel<float> k = table.at<float>(c);
      for (std::size_t e = 0; e < layout.inner; ++e, ++i) {
        float t[2];
        k.param_grad_terms(x[i], dy[i], t);
        d_scale[i] = t[0];
        d_zero_point[i] = t[1];
      }
    }
  const int threads = cpu::reduction_threads();
  cpu::sum_except_axis(d_scale.data(), layout, dscale, threads);
  cpu::sum_except_axis(d_zero_point.data(), layout, dzero_point, threads);
}

}  // namespace detail

#if defined(XQ_SEPARATE_COMPILATION)
template tensor fake_quantize_learnable_per_tensor_affine<simd_policy<>>(const tensor&, float, float, std::int64_t,
                                                                         std::int64_t, float);
template learnable_gradients fake_quantize_learnable_per_tensor_affine_backward<simd_policy<>>(const tensor&,
                                                                                               const tensor&, float,
                                                                                               float, std::int64_t,
                                                                                               std::int64_t, float);
template tensor fake_quantize_learnable_per_channel_affine<simd_policy<>>(const tensor&, const vector&, const vector&,
                                                                          long, std::int64_t, std::int64_t, float);
template learnable_channel_gradients fake_quantize_learnable_per_channel_affine_backward<simd_policy<>>(
    const tensor&, const tensor&, const vector&, const vector&, long, std::int64_t, std::int64_t, float);

template tensor fake_quantize_learnable_per_tensor_affine<scalar_policy>(const tensor&, float, float, std::int64_t,
                                                                         std::int64_t, float);
template learnable_gradients fake_quantize_learnable_per_tensor_affine_backward<scalar_policy>(const tensor&,
                                                                                               const tensor&, float,
                                                                                               float, std::int64_t,
                                                                                               std::int64_t, float);
template tensor fake_quantize_learnable_per_channel_affine<scalar_policy>(const tensor&, const vector&, const vector&,
                                                                          long, std::int64_t, std::int64_t, float);
template learnable_channel_gradients fake_quantize_learnable_per_channel_affine_backward<scalar_policy>(
    const tensor&, const tensor&, const vector&, const vector&, long, std::int64_t, std::int64_t, float);
#endif

}  // namespace xq::torch
