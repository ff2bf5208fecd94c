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
///    kernel runs one element at a time under every policy. Whether zp + x * inv
///    is one fused multiply-add depends on which of torch's CPU builds runs
///    (`cpu_capability`, below): the AVX2 and AVX-512 builds fuse it, in the
///    output and the mask alike; the scalar build does not.
///
/// One difference is deliberate: a scale that is 0, negative, infinite or NaN throws
/// argument_error (naming the op and the scale). PyTorch computes with it (1 / 0 = inf:
/// outputs of ±0 or NaN; a negative scale mirrors the grid; its learnable op returns a
/// finite dscale), giving values no trained model should hold and no deployment can
/// keep (ONNX's QuantizeLinear requires a positive scale). Tested in
/// tests/numerics/test_torch_fake_quant.cpp ("bad input is rejected").

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
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

/// Which of PyTorch's CPU kernel builds xquant reproduces (ATen's `CPUCapability` on x86-64).
/// torch compiles its CPU kernels once per ISA level and runs one; the AVX2 and AVX-512
/// builds are compiled with FMA, so the compiler fuses some `a * b + c` there and not in the
/// scalar build, which changes results next to a rounding tie. Only the float-zero-point
/// per-channel op below depends on it (measured, tools/gen_golden_torch_capability.py); the
/// other torch numerics match one build whatever is chosen (docs/semantics.md §5).
enum class cpu_capability {
  scalar,  ///< ATEN_CPU_CAPABILITY=default: no FMA
  avx2,    ///< ATEN_CPU_CAPABILITY=avx2
  avx512,  ///< ATEN_CPU_CAPABILITY=avx512 (for fake quantization: the same bits as avx2)
};

/// The name ATen gives it: "default", "avx2" or "avx512".
XQ_DECL const char* to_string(cpu_capability c) noexcept;

/// What torch 2.15 picks in this process: ATEN_CPU_CAPABILITY when it is "default", "avx2"
/// or "avx512" (as torch, any other value is ignored, and the CPU is not checked), else
/// the CPU's: avx512 with AVX-512 VL, BW and DQ and FMA, avx2 with AVX2 and FMA, else
/// scalar. Read each call. Off x86-64, or without GCC/Clang's __builtin_cpu_supports,
/// the CPU part gives scalar (torch's ARM builds were not measured).
XQ_DECL cpu_capability detect_cpu_capability() noexcept;

/// The capability the ops use when none is given: detect_cpu_capability() at its first
/// use (torch too reads its choice once per process), until set_default_cpu_capability.
XQ_DECL cpu_capability default_cpu_capability() noexcept;

/// Sets what default_cpu_capability() returns from now on, for every thread.
XQ_DECL void set_default_cpu_capability(cpu_capability c) noexcept;

/// Whether torch's build for `c` computes zp + x * inv_scale as one FMA in the
/// float-zero-point per-channel kernel (measured: in its output and mask loops alike).
constexpr bool fuses_float_zero_point(cpu_capability c) { return c != cpu_capability::scalar; }

namespace detail {
/// What static_cast<int64_t>(v) gives on x86 for an integral float v: v when
/// it fits, INT64_MIN (0x8000...) for NaN, ±Inf and anything out of range.
template <class V>
XQ_HOST_DEVICE XQ_ALWAYS_INLINE V as_int64(const V& v) {
  constexpr float two63 = 9223372036854775808.0f;
  return math::select(math::logical_and(v >= V(-two63), v < V(two63)), v, V(-two63));
}

/// static_cast<int64_t>(v) as x86's cvttsd2si computes it (where C++ leaves it undefined):
/// v truncated when it fits, INT64_MIN for NaN, ±Inf and anything outside [-2^63, 2^63).
inline std::int64_t x86_int64(double v) {
  constexpr double two63 = 9223372036854775808.0;
  return v >= -two63 && v < two63 ? static_cast<std::int64_t>(v) : std::numeric_limits<std::int64_t>::min();
}

/// a - b modulo 2^64, as two's-complement hardware subtracts (C++ leaves the overflow undefined).
inline std::int64_t wrapping_difference(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
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
  bool fused;  ///< fuses_float_zero_point(capability)

  long quantized(float x) const {
    // Matches torch's AVX2/AVX-512 builds when fused: their compiler turns
    // zp + x * inv into one vfmadd in both the output and the mask loop (objdump of
    // libtorch_cpu.so agrees); its scalar build rounds x * inv first. The unfused form
    // relies on -ffp-contract=off (docs/packaging.md) to stay two roundings.
    return std::lrintf(fused ? std::fma(x, inv_scale, zero_point) : zero_point + x * inv_scale);
  }

  float forward(float x) const {
    const double q = std::fmin(std::fmax(double(quantized(x)), double(quant_min)), double(quant_max));
    return float((q - double(zero_point)) * double(scale));
  }
  bool passes(float x) const {
    const long q = quantized(x);
    return double(quant_min) <= double(q) && double(q) <= double(quant_max);
  }
  float input_grad(float x, float dy) const { return dy * math::as_float(passes(x)); }
};

/// Integer ranges wider than 2^24 levels (int32): PyTorch subtracts the zero
/// point in int64, which float cannot; this kernel does the same, one element
/// at a time under every policy. At the int64 limits PyTorch's C++ is undefined; on
/// x86 it computes what `detail::x86_int64` and `detail::wrapping_difference` define (a
/// clamped 2^63 becomes INT64_MIN; the difference wraps), so this kernel gives its values
/// without the undefined behaviour (tests/numerics/test_torch_fake_quant.cpp has torch's).
struct fake_quantize_affine_wide_kernel {
  static constexpr bool vectorizable = false;
  float scale, inv_scale;
  std::int64_t zero_point, quant_min, quant_max;

  float quantized(float x) const { return float(zero_point) + std::nearbyint(x * inv_scale); }
  float forward(float x) const {
    const std::int64_t q =
        detail::x86_int64(std::fmin(std::fmax(double(quantized(x)), double(quant_min)), double(quant_max)));
    return float(detail::wrapping_difference(q, zero_point)) * scale;
  }
  bool passes(float x) const {
    const float q = quantized(x);
    return float(quant_min) <= q && q <= float(quant_max);
  }
  float input_grad(float x, float dy) const { return dy * math::as_float(passes(x)); }
};

/// Per channel, integer ranges wider than 2^24 levels (int32): PyTorch's per-channel kernel
/// (`_fake_quant_per_channel_cachemask_cpu_helper`, integer zero points) computes
/// `zp + nearbyint(x * inv)` in float, casts it to int64, clamps it as doubles (std::fmin /
/// std::fmax of the int64 and the int64 bounds), subtracts the int32 zero point in double
/// and multiplies by the scale in double, rounding to float once at the end. The float
/// kernel above subtracts `float(zp)` and loses every zero point past 2^24 (x = 0.4404,
/// zp = -2124707931, s = 0.8808: torch -32.59, the float kernel 0); this one keeps the
/// integer, one element at a time under every policy.
struct fake_quantize_affine_channel_wide_kernel {
  static constexpr bool vectorizable = false;
  float scale, inv_scale;
  std::int64_t zero_point, quant_min, quant_max;

  std::int64_t quantized(float x) const {
    return detail::x86_int64(double(float(zero_point) + std::nearbyint(x * inv_scale)));
  }
  float forward(float x) const {
    const double q = std::fmin(std::fmax(double(quantized(x)), double(quant_min)), double(quant_max));
    return float((q - double(zero_point)) * double(scale));
  }
  bool passes(float x) const {
    const std::int64_t q = quantized(x);
    return quant_min <= q && q <= quant_max;
  }
  float input_grad(float x, float dy) const { return dy * math::as_float(passes(x)); }
};

struct fake_quantize_affine_channel_wide_table {
  static constexpr bool vectorizable = false;
  const float *scale, *inv_scale;
  const std::int64_t* zero_point;
  std::int64_t quant_min, quant_max;

  template <class P>
  fake_quantize_affine_channel_wide_kernel at(std::size_t c) const {
    static_assert(std::is_same_v<P, float>, "xquant: the wide per-channel kernel is scalar only");
    return {scale[c], inv_scale[c], zero_point[c], quant_min, quant_max};
  }
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
  bool fused;

  template <class P>
  fake_quantize_float_zero_point_kernel at(std::size_t c) const {
    static_assert(std::is_same_v<P, float>, "xquant: the float zero point kernel is scalar only");
    return {scale[c], inv_scale[c], zero_point[c], quant_min, quant_max, fused};
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
  std::vector<std::int64_t> integer_zero_point;  ///< the zero points as given (the wide kernel's)
  float quant_min, quant_max;
  std::int64_t integer_quant_min, integer_quant_max;

  template <class ZeroPoints>
  channel_params(const tensor& x, const vector& scales, const ZeroPoints& zero_points, long axis,
                 std::int64_t qmin, std::int64_t qmax, bool check_zp, const char* where)
      : quant_min(float(qmin)), quant_max(float(qmax)), integer_quant_min(qmin), integer_quant_max(qmax) {
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
    integer_zero_point.resize(n);
    for (std::size_t c = 0; c < n; ++c) {
      check_scale(scales(c), where, xq::detail::concat("scale[", c, "]"));
      if (check_zp)
        check_zero_point(double(zero_points(c)), qmin, qmax, where,
                         xq::detail::concat("zero_point[", c, "]"));
      scale[c] = scales(c);
      inv_scale[c] = 1.0f / scales(c);
      zero_point[c] = float(zero_points(c));
      if constexpr (std::is_integral_v<std::decay_t<decltype(zero_points(c))>>)
        integer_zero_point[c] = static_cast<std::int64_t>(zero_points(c));
    }
  }

  /// Whether the range holds integers float cannot: then the integer zero-point ops run
  /// the wide kernel (scalar), as per tensor does.
  bool wide() const {
    constexpr std::int64_t exact = std::int64_t(1) << 24;
    return integer_quant_min < -exact || integer_quant_max > exact;
  }
  fake_quantize_affine_channel_wide_table wide_table() const {
    return {scale.data(), inv_scale.data(), integer_zero_point.data(), integer_quant_min, integer_quant_max};
  }

  fake_quantize_affine_channels<true> table() const {
    return {scale.data(), inv_scale.data(), zero_point.data(), quant_min, quant_max};
  }
  fake_quantize_float_zero_point_channels float_zero_point_table(cpu_capability capability) const {
    return {scale.data(), inv_scale.data(), zero_point.data(), quant_min, quant_max,
            fuses_float_zero_point(capability)};
  }
};

}  // namespace detail

// ---- per tensor -------------------------------------------------------------

/// `torch.fake_quantize_per_tensor_affine`.
template <class Policy = default_policy>
tensor fake_quantize_per_tensor_affine(const tensor& x, float scale, std::int64_t zero_point,
                                       std::int64_t quant_min, std::int64_t quant_max) {
  tensor y = tensor::from_shape(x.shape());
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
  fake_quant_result r{tensor::from_shape(x.shape()), mask_tensor(x.shape())};
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
  tensor dx = tensor::from_shape(x.shape());
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
  tensor y = tensor::from_shape(x.shape());
  if (p.wide()) kernels::forward_channels(scalar_policy{}, p.wide_table(), p.layout, x.data(), y.data());
  else kernels::forward_channels(Policy{}, p.table(), p.layout, x.data(), y.data());
  return y;
}

/// ... with float zero points (their range is not checked, as in PyTorch), as torch's
/// CPU build for `capability` computes them (they differ next to rounding ties):
///
///     // the bits torch gives under ATEN_CPU_CAPABILITY=default, on any machine
///     y = xq::torch::fake_quantize_per_channel_affine(x, s, zp, 0, 0, 255,
///                                                     xq::torch::cpu_capability::scalar);
template <class Policy = default_policy>
tensor fake_quantize_per_channel_affine(const tensor& x, const vector& scale,
                                        const vector& zero_point, long axis,
                                        std::int64_t quant_min, std::int64_t quant_max,
                                        cpu_capability capability = default_cpu_capability()) {
  const detail::channel_params p(x, scale, zero_point, axis, quant_min, quant_max, false,
                                 "torch.fake_quantize_per_channel_affine");
  tensor y = tensor::from_shape(x.shape());
  kernels::forward_channels(scalar_policy{}, p.float_zero_point_table(capability), p.layout, x.data(),
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
  fake_quant_result r{tensor::from_shape(x.shape()), mask_tensor(x.shape())};
  if (p.wide())
    kernels::forward_channels_with_mask(scalar_policy{}, p.wide_table(), p.layout, x.data(), r.y.data(),
                                        r.mask.data());
  else
    kernels::forward_channels_with_mask(Policy{}, p.table(), p.layout, x.data(), r.y.data(), r.mask.data());
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
  tensor dx = tensor::from_shape(x.shape());
  if (p.wide()) kernels::backward_channels(scalar_policy{}, p.wide_table(), p.layout, x.data(), dy.data(), dx.data());
  else kernels::backward_channels(Policy{}, p.table(), p.layout, x.data(), dy.data(), dx.data());
  return dx;
}

/// The gradient with float zero points: dy * mask, the mask as `capability`'s build computes it.
template <class Policy = default_policy>
tensor fake_quantize_per_channel_affine_gradient(const tensor& dy, const tensor& x,
                                                 const vector& scale, const vector& zero_point,
                                                 long axis, std::int64_t quant_min,
                                                 std::int64_t quant_max,
                                                 cpu_capability capability = default_cpu_capability()) {
  constexpr const char* where = "torch.fake_quantize_per_channel_affine_gradient";
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  const detail::channel_params p(x, scale, zero_point, axis, quant_min, quant_max, false, where);
  tensor dx = tensor::from_shape(x.shape());
  kernels::backward_channels(scalar_policy{}, p.float_zero_point_table(capability), p.layout, x.data(),
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
                                                                       long, std::int64_t, std::int64_t,
                                                                       cpu_capability);
extern template fake_quant_result fake_quantize_per_channel_affine_and_mask<simd_policy<>>(const tensor&, const vector&,
                                                                                           const index_vector&, long,
                                                                                           std::int64_t, std::int64_t);
extern template tensor fake_quantize_per_channel_affine_gradient<simd_policy<>>(const tensor&, const tensor&,
                                                                                const vector&, const index_vector&,
                                                                                long, std::int64_t, std::int64_t);
extern template tensor fake_quantize_per_channel_affine_gradient<simd_policy<>>(const tensor&, const tensor&,
                                                                                const vector&, const vector&, long,
                                                                                std::int64_t, std::int64_t, cpu_capability);

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
                                                                       long, std::int64_t, std::int64_t,
                                                                       cpu_capability);
extern template fake_quant_result fake_quantize_per_channel_affine_and_mask<scalar_policy>(const tensor&, const vector&,
                                                                                           const index_vector&, long,
                                                                                           std::int64_t, std::int64_t);
extern template tensor fake_quantize_per_channel_affine_gradient<scalar_policy>(const tensor&, const tensor&,
                                                                                const vector&, const index_vector&,
                                                                                long, std::int64_t, std::int64_t);
extern template tensor fake_quantize_per_channel_affine_gradient<scalar_policy>(const tensor&, const tensor&,
                                                                                const vector&, const vector&, long,
                                                                                std::int64_t, std::int64_t, cpu_capability);
}  // namespace xq::torch
#endif

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/torch_fake_quant.ipp"
#endif
