#pragma once
/// \file torch_learnable_fake_quant.hpp
/// PyTorch's learnable fake quantization (LSQ):
/// `_fake_quantize_learnable_per_{tensor,channel}_affine` and their backward,
/// with scale and zero-point gradients and `grad_factor` (docs/semantics.md §5;
/// fake_quantize_learnable_*_grad_kernel_cpu).
///
/// Peculiarities kept on purpose:
///  - per tensor, the forward rounds the float zero point half to even, the
///    backward as trunc(clamp(zp + 0.5)) (half up, toward zero below 0): they
///    differ when zp is exactly k + 0.5 with k even;
///  - per channel, both directions round half to even;
///  - the backward recomputes nearbyint(zp + x * inv) as a whole (not
///    zp + nearbyint(x * inv) as the forward does) and casts it to int64.
/// Every output matches PyTorch 2.15 (CPU, AVX2 build) bit for bit: dx and the
/// per-element terms with any policy, and the sums d_scale and d_zero_point too. As
/// ATen does, the backward writes each element's terms (dScale_vec, dZeroPoint_vec) and
/// sums them in the order of torch's CPU `sum` (torch_cpu_kernels.hpp): per tensor
/// `dScale_vec.sum()`, per channel `dScale_vec.sum(every dim but axis)`. A sum over 32768
/// elements or more into a single output (per tensor, or one channel) depends on torch's
/// thread count: xquant takes it from `torch::cpu::reduction_threads()`. Its default, 1,
/// matches torch run with one thread, and with any thread count every tensor under 32768
/// elements and every per-channel sum over more than one channel. Checked against
/// torch by tests/numerics/test_torch_fake_quant.cpp (tests/data/golden/
/// torch_learnable_fake_quant.json and torch_reductions.json; the orders:
/// tools/probe_torch_reduction_order.py). These operators take host tensors: cuda_policy
/// (device pointers) is refused at compile time; its walkers' own sums
/// (kernels::backward_with_sums) are double totals that match these to rounding only.
///
/// Per channel on a 1-D tensor, torch reduces over an empty dim list, which sums every
/// element into one scalar that autograd then rejects ("invalid gradient ... got [] but
/// expected shape compatible with [C]"); xquant gives each channel its own (single) term.
///
/// As in torch_fake_quant.hpp, and on purpose, a scale that is 0, negative or not finite
/// throws argument_error where PyTorch computes with it.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "torch_cpu_kernels.hpp"
#include "torch_fake_quant.hpp"

namespace xq::torch {

/// The elementwise backward of LSQ. P: float or a batch of channels.
template <class P = float>
struct learnable_fake_quantize_kernel {
  P scale, inv_scale, zero_point, quant_min, quant_max, grad_factor;

  static constexpr std::size_t param_grad_count = 2;  // d_scale, d_zero_point

  template <class V>
  XQ_HOST_DEVICE V quantized(const V& x) const {
    // PyTorch's compiled kernel fuses zp + x * inv into one fma.
    return detail::as_int64(math::round_half_even(math::fma(x, V(inv_scale), V(zero_point))));
  }

  /// The forward at this (already rounded) zero point: PyTorch's per-tensor
  /// fake quantization, zp + nearbyint(x * inv).
  template <class V>
  XQ_HOST_DEVICE V forward(const V& x) const {
    const V q = V(zero_point) + math::round_half_even(x * V(inv_scale));
    return (math::min(V(quant_max), math::max(V(quant_min), q)) - V(zero_point)) * V(scale);
  }

  /// The backward's mask: on nearbyint(zp + x * inv), cast to int64.
  template <class V>
  XQ_HOST_DEVICE auto passes(const V& x) const {
    const V q = quantized(x);
    return math::logical_and(q >= V(quant_min), q <= V(quant_max));
  }

  template <class V>
  XQ_HOST_DEVICE V input_grad(const V& x, const V& dy) const {
    return dy * math::as_float(passes(x));
  }

  template <class V>
  XQ_HOST_DEVICE void param_grad_terms(const V& x, const V& dy, V* terms) const {
    const V q = quantized(x);
    const auto below = q < V(quant_min);
    const auto inside = math::logical_and(q >= V(quant_min), q <= V(quant_max));
    const V gf(grad_factor), s(scale);
    // (clamp(q) - zp) * scale - x, fused into one fma as PyTorch's build does.
    const V clamped = math::max(math::min(q, V(quant_max)), V(quant_min));
    const V d_scale_inside = dy * math::fma(clamped - V(zero_point), s, -x) * V(inv_scale) * gf;
    const V d_scale_outside =
        math::select(below, dy * (V(quant_min) - V(zero_point)), dy * (V(quant_max) - V(zero_point))) * gf;
    terms[0] = math::select(inside, d_scale_inside, d_scale_outside);
    terms[1] = math::select(inside, V(0.0f), dy * V(-1.0f) * s * gf);
  }
};

template <class Dummy = void>
struct learnable_fake_quantize_channels_t {
  const float *scale, *inv_scale, *zero_point;
  float quant_min, quant_max, grad_factor;

  template <class P>
  XQ_HOST_DEVICE learnable_fake_quantize_kernel<P> at(std::size_t c) const {
    return {math::load_param<P>(scale + c), math::load_param<P>(inv_scale + c),
            math::load_param<P>(zero_point + c), P(quant_min), P(quant_max), P(grad_factor)};
  }
};
using learnable_fake_quantize_channels = learnable_fake_quantize_channels_t<>;

/// `_LearnableFakeQuantize`'s grad_factor with use_grad_scaling: LSQ's
/// 1 / sqrt(numel(x) * quant_max) (computed in double, as Python does, then
/// passed to the op as a float). Without grad scaling it is 1.
XQ_DECL float lsq_grad_factor(std::size_t numel, std::int64_t quant_max);

/// Gradients of the per-tensor learnable op.
struct learnable_gradients {
  tensor dx;
  float dscale;
  float dzero_point;
};

/// Gradients of the per-channel learnable op.
struct learnable_channel_gradients {
  tensor dx;
  vector dscale;
  vector dzero_point;
};

namespace detail {

/// The forward's zero point: nearbyint, clamp, truncate.
XQ_DECL std::int64_t forward_zero_point(float zp, std::int64_t qmin, std::int64_t qmax);

/// The backward's zero point: zp + 0.5, clamp, truncate.
XQ_DECL std::int64_t backward_zero_point(float zp, std::int64_t qmin, std::int64_t qmax);

/// Throws argument_error (at `where`) unless the range, the scale and the zero point are valid.
XQ_DECL void check_learnable(float scale, float zp, std::int64_t qmin, std::int64_t qmax, const char* where);

/// Per-channel zero points rounded half to even and clamped (as floats).
XQ_DECL vector rounded_zero_points(const vector& zp, std::int64_t qmin, std::int64_t qmax);

/// d_scale and d_zero_point of n elements: the per-element terms summed as torch's
/// `dScale_vec.sum()` with cpu::reduction_threads() threads.
XQ_DECL void learnable_param_grads(const learnable_fake_quantize_kernel<float>& k, const float* x,
                                   const float* dy, std::size_t n, float& dscale, float& dzero_point);

/// Per channel: the terms summed as `dScale_vec.sum(every dim but axis)`.
XQ_DECL void learnable_channel_param_grads(const learnable_fake_quantize_channels& table,
                                           const kernels::channel_layout& layout, const float* x,
                                           const float* dy, float* dscale, float* dzero_point);

/// The LSQ operators read and write host tensors.
template <class Policy>
inline constexpr bool is_host_policy_v = !std::is_same_v<Policy, cuda_policy>;

}  // namespace detail

/// `torch._fake_quantize_learnable_per_tensor_affine` (forward).
template <class Policy = default_policy>
tensor fake_quantize_learnable_per_tensor_affine(const tensor& x, float scale, float zero_point,
                                                 std::int64_t quant_min, std::int64_t quant_max,
                                                 float grad_factor = 1.0f) {
  constexpr const char* where = "torch.fake_quantize_learnable_per_tensor_affine";
  (void)grad_factor;
  detail::check_learnable(scale, zero_point, quant_min, quant_max, where);
  return fake_quantize_per_tensor_affine<Policy>(
      x, scale, detail::forward_zero_point(zero_point, quant_min, quant_max), quant_min, quant_max);
}

/// `_fake_quantize_learnable_per_tensor_affine_backward`: dx, d_scale, d_zero_point
/// (d_scale and d_zero_point in torch's order for cpu::reduction_threads() threads).
template <class Policy = default_policy>
learnable_gradients fake_quantize_learnable_per_tensor_affine_backward(
    const tensor& dy, const tensor& x, float scale, float zero_point, std::int64_t quant_min,
    std::int64_t quant_max, float grad_factor = 1.0f) {
  static_assert(detail::is_host_policy_v<Policy>,
                "xquant: the torch LSQ operators take host tensors; use scalar_policy or simd_policy<> "
                "(cuda_policy walkers take device pointers)");
  constexpr const char* where = "torch.fake_quantize_learnable_per_tensor_affine_backward";
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  detail::check_learnable(scale, zero_point, quant_min, quant_max, where);
  if (quant_min > 0 || quant_max < 0)
    throw argument_error(where, "quant_min <= 0 <= quant_max",
                         xq::detail::concat("[", quant_min, ", ", quant_max, "]"));
  const float zp = float(detail::backward_zero_point(zero_point, quant_min, quant_max));
  const learnable_fake_quantize_kernel<float> k{scale,           1.0f / scale,     zp,
                                                float(quant_min), float(quant_max), grad_factor};
  learnable_gradients r{tensor::from_shape(x.shape()), 0.0f, 0.0f};
  kernels::backward(Policy{}, k, x.data(), dy.data(), r.dx.data(), x.size());
  detail::learnable_param_grads(k, x.data(), dy.data(), x.size(), r.dscale, r.dzero_point);
  return r;
}

/// `torch._fake_quantize_learnable_per_channel_affine` (forward).
template <class Policy = default_policy>
tensor fake_quantize_learnable_per_channel_affine(const tensor& x, const vector& scale,
                                                  const vector& zero_point, long axis,
                                                  std::int64_t quant_min, std::int64_t quant_max,
                                                  float grad_factor = 1.0f) {
  (void)grad_factor;
  const vector zp = detail::rounded_zero_points(zero_point, quant_min, quant_max);
  index_vector zpi = index_vector::from_shape({zp.size()});
  for (std::size_t c = 0; c < zp.size(); ++c) zpi(c) = std::int64_t(zp(c));
  return fake_quantize_per_channel_affine<Policy>(x, scale, zpi, axis, quant_min, quant_max);
}

/// `_fake_quantize_learnable_per_channel_affine_backward`: dx and per-channel
/// d_scale, d_zero_point (summed over every axis but `axis`).
template <class Policy = default_policy>
learnable_channel_gradients fake_quantize_learnable_per_channel_affine_backward(
    const tensor& dy, const tensor& x, const vector& scale, const vector& zero_point, long axis,
    std::int64_t quant_min, std::int64_t quant_max, float grad_factor = 1.0f) {
  static_assert(detail::is_host_policy_v<Policy>,
                "xquant: the torch LSQ operators take host tensors; use scalar_policy or simd_policy<> "
                "(cuda_policy walkers take device pointers)");
  constexpr const char* where = "torch.fake_quantize_learnable_per_channel_affine_backward";
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  const vector zp = detail::rounded_zero_points(zero_point, quant_min, quant_max);
  const detail::channel_params p(x, scale, zp, axis, quant_min, quant_max, false, where);
  const learnable_fake_quantize_channels table{p.scale.data(), p.inv_scale.data(),
                                               p.zero_point.data(), p.quant_min, p.quant_max,
                                               grad_factor};
  const std::size_t C = p.layout.channels;
  learnable_channel_gradients r{tensor::from_shape(x.shape()), vector::from_shape({C}),
                                vector::from_shape({C})};
  kernels::backward_channels(Policy{}, table, p.layout, x.data(), dy.data(), r.dx.data());
  detail::learnable_channel_param_grads(table, p.layout, x.data(), dy.data(), r.dscale.data(),
                                        r.dzero_point.data());
  return r;
}

}  // namespace xq::torch

#if defined(XQ_SEPARATE_COMPILATION)
namespace xq::torch {
// The operators for the default policy and the scalar reference are compiled in the
// library (numerics/impl/torch_learnable_fake_quant.ipp).
extern template tensor fake_quantize_learnable_per_tensor_affine<simd_policy<>>(const tensor&, float, float,
                                                                                std::int64_t, std::int64_t, float);
extern template learnable_gradients fake_quantize_learnable_per_tensor_affine_backward<simd_policy<>>(
    const tensor&, const tensor&, float, float, std::int64_t, std::int64_t, float);
extern template tensor fake_quantize_learnable_per_channel_affine<simd_policy<>>(const tensor&, const vector&,
                                                                                 const vector&, long, std::int64_t,
                                                                                 std::int64_t, float);
extern template learnable_channel_gradients fake_quantize_learnable_per_channel_affine_backward<simd_policy<>>(
    const tensor&, const tensor&, const vector&, const vector&, long, std::int64_t, std::int64_t, float);

extern template tensor fake_quantize_learnable_per_tensor_affine<scalar_policy>(const tensor&, float, float,
                                                                                std::int64_t, std::int64_t, float);
extern template learnable_gradients fake_quantize_learnable_per_tensor_affine_backward<scalar_policy>(
    const tensor&, const tensor&, float, float, std::int64_t, std::int64_t, float);
extern template tensor fake_quantize_learnable_per_channel_affine<scalar_policy>(const tensor&, const vector&,
                                                                                 const vector&, long, std::int64_t,
                                                                                 std::int64_t, float);
extern template learnable_channel_gradients fake_quantize_learnable_per_channel_affine_backward<scalar_policy>(
    const tensor&, const tensor&, const vector&, const vector&, long, std::int64_t, std::int64_t, float);
}  // namespace xq::torch
#endif

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/torch_learnable_fake_quant.ipp"
#endif
