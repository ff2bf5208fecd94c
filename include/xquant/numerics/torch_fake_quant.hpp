#pragma once
/// \file torch_fake_quant.hpp
/// PyTorch's `fake_quantize_per_tensor_affine` and
/// `fake_quantize_per_channel_affine` (with their cachemask gradients), bit for
/// bit (aten/src/ATen/native/quantized/cpu/kernels/QuantizedOpKernels.cpp;
/// docs/semantics.md §5).
///
/// What makes it PyTorch's and not TF's:
///  - `inv = 1.0f / scale`, and the integer is `zp + nearbyint(x * inv)`:
///    ties round to even, and the input is *not* clamped first;
///  - the clamp is on the integer, so the gradient mask is
///    qmin <= zp + nearbyint(x * inv) <= qmax: inputs up to half a step past
///    the ends still get gradient;
///  - per tensor, the clamp happens in floating point (NaN -> qmin,
///    +Inf -> qmax); per channel, the value is first cast to int64, which on
///    x86 turns NaN, ±Inf and |v| >= 2^63 into INT64_MIN (-> qmin, mask 0).
///    Both quirks are reproduced;
///  - a float zero point (per_channel_affine_float_qparams) rounds
///    zp + x * inv as a whole (lrintf) and does its arithmetic in double; that
///    kernel runs one element at a time under every policy.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "../kernels/channel_layout.hpp"
#include "../kernels/math.hpp"
#include "../kernels/policy.hpp"
#include "../kernels/scalar.hpp"
#include "../kernels/simd.hpp"
#include "../core/tensor.hpp"

namespace xq::torch {

using index_vector = xt::xtensor<std::int64_t, 1>;  ///< integer zero points

namespace detail {
/// What static_cast<int64_t>(v) gives on x86 for an integral float v: v when
/// it fits, INT64_MIN (0x8000...) for NaN, ±Inf and anything out of range.
template <class V>
XQ_HOST_DEVICE XQ_ALWAYS_INLINE V as_int64(const V& v) {
  constexpr float two63 = 9223372036854775808.0f;
  return math::select(math::logical_and(v >= V(-two63), v < V(two63)), v, V(-two63));
}
}  // namespace detail

/// Integer zero point. `CastFirst`: per-channel behaviour (int64 cast before
/// the clamp); otherwise per-tensor (clamp in floating point).
template <bool CastFirst, class P = float>
struct fake_quantize_affine_kernel {
  P scale, inv_scale, zero_point, quant_min, quant_max;

  template <class V>
  XQ_HOST_DEVICE V quantized(const V& x) const {
    const V q = V(zero_point) + math::round_half_even(x * V(inv_scale));
    if constexpr (CastFirst) return detail::as_int64(q);
    else return q;
  }

  template <class V>
  XQ_HOST_DEVICE V forward(const V& x) const {
    // fmin(fmax(q, qmin), qmax): a NaN q becomes qmin.
    const V q = math::min(V(quant_max), math::max(V(quant_min), quantized(x)));
    return (q - V(zero_point)) * V(scale);
  }

  template <class V>
  XQ_HOST_DEVICE auto passes(const V& x) const {
    const V q = quantized(x);
    return math::logical_and(V(quant_min) <= q, q <= V(quant_max));
  }

  template <class V>
  XQ_HOST_DEVICE V input_grad(const V& x, const V& dy) const {
    return dy * math::as_float(passes(x));
  }
};

/// Float zero point (per_channel_affine_float_qparams). Scalar only: PyTorch
/// computes the output in double after an lrintf, which we reproduce exactly.
struct fake_quantize_float_zero_point_kernel {
  static constexpr bool vectorizable = false;
  float scale, inv_scale, zero_point, quant_min, quant_max;

  long quantized(float x) const { return std::lrintf(zero_point + x * inv_scale); }

  float forward(float x) const {
    const double q = std::fmin(std::fmax(double(quantized(x)), double(quant_min)), double(quant_max));
    return float((q - double(zero_point)) * double(scale));
  }
  bool passes(float x) const {
    // PyTorch's compiler fuses zp + x * inv in the mask kernel (not in the
    // forward one), so the two can disagree on an element; so do we.
    const long q = std::lrintf(std::fma(x, inv_scale, zero_point));
    return double(quant_min) <= double(q) && double(q) <= double(quant_max);
  }
  float input_grad(float x, float dy) const { return dy * math::as_float(passes(x)); }
};

/// Integer ranges wider than 2^24 levels (int32): PyTorch subtracts the zero
/// point in int64, which float cannot; this kernel does the same, one element
/// at a time under every policy.
struct fake_quantize_affine_wide_kernel {
  static constexpr bool vectorizable = false;
  float scale, inv_scale;
  std::int64_t zero_point, quant_min, quant_max;

  float quantized(float x) const { return float(zero_point) + std::nearbyint(x * inv_scale); }
  float forward(float x) const {
    const auto q = std::int64_t(std::fmin(std::fmax(double(quantized(x)), double(quant_min)),
                                          double(quant_max)));
    return float(q - zero_point) * scale;
  }
  bool passes(float x) const {
    const float q = quantized(x);
    return float(quant_min) <= q && q <= float(quant_max);
  }
  float input_grad(float x, float dy) const { return dy * math::as_float(passes(x)); }
};

template <bool CastFirst>
struct fake_quantize_affine_channels {
  const float *scale, *inv_scale, *zero_point;
  float quant_min, quant_max;

  template <class P>
  XQ_HOST_DEVICE fake_quantize_affine_kernel<CastFirst, P> at(std::size_t c) const {
    return {math::load_param<P>(scale + c), math::load_param<P>(inv_scale + c),
            math::load_param<P>(zero_point + c), P(quant_min), P(quant_max)};
  }
};

struct fake_quantize_float_zero_point_channels {
  static constexpr bool vectorizable = false;
  const float *scale, *inv_scale, *zero_point;
  float quant_min, quant_max;

  template <class P>
  fake_quantize_float_zero_point_kernel at(std::size_t c) const {
    static_assert(std::is_same_v<P, float>, "xquant: the float zero point kernel is scalar only");
    return {scale[c], inv_scale[c], zero_point[c], quant_min, quant_max};
  }
};

/// Output and gradient mask (PyTorch's "cachemask" form), one pass.
struct fake_quant_result {
  tensor y;
  mask_tensor mask;
};

namespace detail {

/// Throws argument_error (at `where`) unless quant_min <= quant_max.
XQ_DECL void check_quant_range(std::int64_t quant_min, std::int64_t quant_max, const char* where);

/// Throws argument_error (at `where`, naming `which`) unless the scale is finite and > 0.
XQ_DECL void check_scale(float scale, const char* where, const std::string& which = "scale");

/// Throws argument_error (at `where`, naming `which`) unless quant_min <= zp <= quant_max.
XQ_DECL void check_zero_point(double zp, std::int64_t quant_min, std::int64_t quant_max, const char* where,
                              const std::string& which = "zero_point");

/// Calls `run(policy, kernel)` with the per-tensor kernel: the vectorized
/// float one, or the exact int64 one (scalar) when the range is too wide for
/// float to hold every integer of it.
template <class Policy, class Run>
void with_per_tensor_kernel(float scale, std::int64_t zero_point, std::int64_t quant_min,
                            std::int64_t quant_max, const char* where, Run&& run) {
  check_quant_range(quant_min, quant_max, where);
  check_scale(scale, where);
  check_zero_point(double(zero_point), quant_min, quant_max, where);
  constexpr std::int64_t exact = std::int64_t(1) << 24;
  if (quant_min < -exact || quant_max > exact) {
    run(scalar_policy{}, fake_quantize_affine_wide_kernel{scale, 1.0f / scale, zero_point,
                                                          quant_min, quant_max});
  } else {
    run(Policy{}, fake_quantize_affine_kernel<false>{scale, 1.0f / scale, float(zero_point),
                                                     float(quant_min), float(quant_max)});
  }
}

/// Owning per-channel parameters.
struct channel_params {
  kernels::channel_layout layout;
  std::vector<float> scale, inv_scale, zero_point;
  float quant_min, quant_max;

  template <class ZeroPoints>
  channel_params(const tensor& x, const vector& scales, const ZeroPoints& zero_points, long axis,
                 std::int64_t qmin, std::int64_t qmax, bool check_zp, const char* where)
      : quant_min(float(qmin)), quant_max(float(qmax)) {
    check_quant_range(qmin, qmax, where);
    layout = kernels::channel_layout::of(x.shape(), axis, where);
    const std::size_t n = layout.channels;
    if (scales.size() != n)
      throw argument_error(where, xq::detail::concat("scale of length ", n, " (the axis length)"),
                           xq::detail::concat("length ", scales.size()));
    if (zero_points.size() != n)
      throw argument_error(where, xq::detail::concat("zero_point of length ", n, " (the axis length)"),
                           xq::detail::concat("length ", zero_points.size()));
    scale.resize(n);
    inv_scale.resize(n);
    zero_point.resize(n);
    for (std::size_t c = 0; c < n; ++c) {
      check_scale(scales(c), where, xq::detail::concat("scale[", c, "]"));
      if (check_zp)
        check_zero_point(double(zero_points(c)), qmin, qmax, where,
                         xq::detail::concat("zero_point[", c, "]"));
      scale[c] = scales(c);
      inv_scale[c] = 1.0f / scales(c);
      zero_point[c] = float(zero_points(c));
    }
  }

  fake_quantize_affine_channels<true> table() const {
    return {scale.data(), inv_scale.data(), zero_point.data(), quant_min, quant_max};
  }
  fake_quantize_float_zero_point_channels float_zero_point_table() const {
    return {scale.data(), inv_scale.data(), zero_point.data(), quant_min, quant_max};
  }
};

}  // namespace detail

// ---- per tensor -------------------------------------------------------------

/// `torch.fake_quantize_per_tensor_affine`.
template <class Policy = default_policy>
tensor fake_quantize_per_tensor_affine(const tensor& x, float scale, std::int64_t zero_point,
                                       std::int64_t quant_min, std::int64_t quant_max) {
  tensor y = xt::empty<float>(x.shape());
  detail::with_per_tensor_kernel<Policy>(
      scale, zero_point, quant_min, quant_max, "torch.fake_quantize_per_tensor_affine",
      [&](auto policy, const auto& k) { kernels::forward(policy, k, x.data(), y.data(), x.size()); });
  return y;
}

/// Output and mask in one pass (`fake_quantize_per_tensor_affine_cachemask`).
template <class Policy = default_policy>
fake_quant_result fake_quantize_per_tensor_affine_and_mask(const tensor& x, float scale,
                                                           std::int64_t zero_point,
                                                           std::int64_t quant_min,
                                                           std::int64_t quant_max) {
  fake_quant_result r{xt::empty<float>(x.shape()), mask_tensor(x.shape())};
  detail::with_per_tensor_kernel<Policy>(
      scale, zero_point, quant_min, quant_max, "torch.fake_quantize_per_tensor_affine",
      [&](auto policy, const auto& k) {
        kernels::forward_with_mask(policy, k, x.data(), r.y.data(), r.mask.data(), x.size());
      });
  return r;
}

/// The gradient of fake_quantize_per_tensor_affine: dy * mask.
template <class Policy = default_policy>
tensor fake_quantize_per_tensor_affine_gradient(const tensor& dy, const tensor& x, float scale,
                                                std::int64_t zero_point, std::int64_t quant_min,
                                                std::int64_t quant_max) {
  constexpr const char* where = "torch.fake_quantize_per_tensor_affine_gradient";
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  tensor dx = xt::empty<float>(x.shape());
  detail::with_per_tensor_kernel<Policy>(
      scale, zero_point, quant_min, quant_max, where, [&](auto policy, const auto& k) {
        kernels::backward(policy, k, x.data(), dy.data(), dx.data(), x.size());
      });
  return dx;
}

// ---- per channel ------------------------------------------------------------

/// `torch.fake_quantize_per_channel_affine` with integer zero points.
template <class Policy = default_policy>
tensor fake_quantize_per_channel_affine(const tensor& x, const vector& scale,
                                        const index_vector& zero_point, long axis,
                                        std::int64_t quant_min, std::int64_t quant_max) {
  const detail::channel_params p(x, scale, zero_point, axis, quant_min, quant_max, true,
                                 "torch.fake_quantize_per_channel_affine");
  tensor y = xt::empty<float>(x.shape());
  kernels::forward_channels(Policy{}, p.table(), p.layout, x.data(), y.data());
  return y;
}

/// ... with float zero points (their range is not checked, as in PyTorch).
template <class Policy = default_policy>
tensor fake_quantize_per_channel_affine(const tensor& x, const vector& scale,
                                        const vector& zero_point, long axis,
                                        std::int64_t quant_min, std::int64_t quant_max) {
  const detail::channel_params p(x, scale, zero_point, axis, quant_min, quant_max, false,
                                 "torch.fake_quantize_per_channel_affine");
  tensor y = xt::empty<float>(x.shape());
  kernels::forward_channels(scalar_policy{}, p.float_zero_point_table(), p.layout, x.data(),
                            y.data());
  return y;
}

template <class Policy = default_policy>
fake_quant_result fake_quantize_per_channel_affine_and_mask(const tensor& x, const vector& scale,
                                                            const index_vector& zero_point,
                                                            long axis, std::int64_t quant_min,
                                                            std::int64_t quant_max) {
  const detail::channel_params p(x, scale, zero_point, axis, quant_min, quant_max, true,
                                 "torch.fake_quantize_per_channel_affine");
  fake_quant_result r{xt::empty<float>(x.shape()), mask_tensor(x.shape())};
  kernels::forward_channels_with_mask(Policy{}, p.table(), p.layout, x.data(), r.y.data(),
                                      r.mask.data());
  return r;
}

template <class Policy = default_policy>
tensor fake_quantize_per_channel_affine_gradient(const tensor& dy, const tensor& x,
                                                 const vector& scale,
                                                 const index_vector& zero_point, long axis,
                                                 std::int64_t quant_min, std::int64_t quant_max) {
  constexpr const char* where = "torch.fake_quantize_per_channel_affine_gradient";
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  const detail::channel_params p(x, scale, zero_point, axis, quant_min, quant_max, true, where);
  tensor dx = xt::empty<float>(x.shape());
  kernels::backward_channels(Policy{}, p.table(), p.layout, x.data(), dy.data(), dx.data());
  return dx;
}

template <class Policy = default_policy>
tensor fake_quantize_per_channel_affine_gradient(const tensor& dy, const tensor& x,
                                                 const vector& scale, const vector& zero_point,
                                                 long axis, std::int64_t quant_min,
                                                 std::int64_t quant_max) {
  constexpr const char* where = "torch.fake_quantize_per_channel_affine_gradient";
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  const detail::channel_params p(x, scale, zero_point, axis, quant_min, quant_max, false, where);
  tensor dx = xt::empty<float>(x.shape());
  kernels::backward_channels(scalar_policy{}, p.float_zero_point_table(), p.layout, x.data(),
                             dy.data(), dx.data());
  return dx;
}

}  // namespace xq::torch

#if defined(XQ_SEPARATE_COMPILATION)
namespace xq::torch {
// The operators for the default policy and the scalar reference are compiled in the
// library (numerics/impl/torch_fake_quant.ipp).
extern template tensor fake_quantize_per_tensor_affine<simd_policy<>>(const tensor&, float, std::int64_t, std::int64_t,
                                                                      std::int64_t);
extern template fake_quant_result fake_quantize_per_tensor_affine_and_mask<simd_policy<>>(const tensor&, float,
                                                                                          std::int64_t, std::int64_t,
                                                                                          std::int64_t);
extern template tensor fake_quantize_per_tensor_affine_gradient<simd_policy<>>(const tensor&, const tensor&, float,
                                                                               std::int64_t, std::int64_t,
                                                                               std::int64_t);
extern template tensor fake_quantize_per_channel_affine<simd_policy<>>(const tensor&, const vector&,
                                                                       const index_vector&, long, std::int64_t,
                                                                       std::int64_t);
extern template tensor fake_quantize_per_channel_affine<simd_policy<>>(const tensor&, const vector&, const vector&,
                                                                       long, std::int64_t, std::int64_t);
extern template fake_quant_result fake_quantize_per_channel_affine_and_mask<simd_policy<>>(const tensor&, const vector&,
                                                                                           const index_vector&, long,
                                                                                           std::int64_t, std::int64_t);
extern template tensor fake_quantize_per_channel_affine_gradient<simd_policy<>>(const tensor&, const tensor&,
                                                                                const vector&, const index_vector&,
                                                                                long, std::int64_t, std::int64_t);
extern template tensor fake_quantize_per_channel_affine_gradient<simd_policy<>>(const tensor&, const tensor&,
                                                                                const vector&, const vector&, long,
                                                                                std::int64_t, std::int64_t);

extern template tensor fake_quantize_per_tensor_affine<scalar_policy>(const tensor&, float, std::int64_t, std::int64_t,
                                                                      std::int64_t);
extern template fake_quant_result fake_quantize_per_tensor_affine_and_mask<scalar_policy>(const tensor&, float,
                                                                                          std::int64_t, std::int64_t,
                                                                                          std::int64_t);
extern template tensor fake_quantize_per_tensor_affine_gradient<scalar_policy>(const tensor&, const tensor&, float,
                                                                               std::int64_t, std::int64_t,
                                                                               std::int64_t);
extern template tensor fake_quantize_per_channel_affine<scalar_policy>(const tensor&, const vector&,
                                                                       const index_vector&, long, std::int64_t,
                                                                       std::int64_t);
extern template tensor fake_quantize_per_channel_affine<scalar_policy>(const tensor&, const vector&, const vector&,
                                                                       long, std::int64_t, std::int64_t);
extern template fake_quant_result fake_quantize_per_channel_affine_and_mask<scalar_policy>(const tensor&, const vector&,
                                                                                           const index_vector&, long,
                                                                                           std::int64_t, std::int64_t);
extern template tensor fake_quantize_per_channel_affine_gradient<scalar_policy>(const tensor&, const tensor&,
                                                                                const vector&, const index_vector&,
                                                                                long, std::int64_t, std::int64_t);
extern template tensor fake_quantize_per_channel_affine_gradient<scalar_policy>(const tensor&, const tensor&,
                                                                                const vector&, const vector&, long,
                                                                                std::int64_t, std::int64_t);
}  // namespace xq::torch
#endif

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/torch_fake_quant.ipp"
#endif
