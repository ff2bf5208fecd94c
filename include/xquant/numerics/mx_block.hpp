#pragma once
/// \file mx_block.hpp
/// MX block quantization (OCP Microscaling v1.0: blocks of 32 values sharing an E8M0
/// power-of-two scale) as each peer computes it, quantize then dequantize, bit for bit.
/// The peers disagree on the shared exponent, the element rounding and the order of
/// operations (research/low-bit.md §1.2; docs/semantics.md "Low-bit formats"):
///
///  | variant (peer function)                          | shared exponent e                          | elements            | order |
///  |--------------------------------------------------|--------------------------------------------|---------------------|-------|
///  | torchao_floor (`mx_tensor.py::to_mx`, FLOOR)     | exponent bits of amax - emax               | RNE, saturate       | x / max(2^e, 2^-126), clamp, cast; * 2^e |
///  | torchao_ceil (CEIL)                              | + 1 when amax's mantissa is not 0          | same                | same |
///  | torchao_even (EVEN)                              | amax rounded to the element's mantissa first | same              | same |
///  | torchao_rceil (`_to_mx_rceil`, torchao's QAT and inference configs) | ceil(log2(amax / max)) | same       | x * 2^-e (1 when e = -127), clamp, cast; * 2^e |
///  | microxcaling_nearest (`mx_ops.py::_quantize_mx`, round="nearest") | floor(log2(amax)) - emax, NaN above 127 | floor(|v| + 0.5) in float32, saturate | x / 2^e, round, * 2^e |
///  | microxcaling_even (round="even")                 | same                                       | its "even" rounding | same |
///  | modelopt_mxfp4 (`MXFP4QTensor.quantize` + `dequantize`) | ceil(max(log2(amax / 6), -127))     | ties toward zero; zero gets the sign bit | x / 2^e, cast; * 2^e |
///  | modelopt_mxfp8 (`MXFP8QTensor.quantize` + `dequantize`) | ceil(log2(amax / 448)) clamped ±127; 0 or NaN amax: -127 | RNE | x * 2^-e (2^127 when e = -127, where torchao's RCEIL takes 1), clamp ±448, cast; * 2^e |
///
/// `log2` is torch's float32 log2, whose result near a power of two rounds to the integer
/// (torch_log2_table.hpp, measured): that is the exponent these peers compute.
/// Elements: FP8 E4M3/E5M2, FP6 E3M2/E2M3, FP4 E2M1 (every variant but modelopt_mxfp4,
/// which is FP4 only, and modelopt_mxfp8, E4M3 only), and microxcaling's INT8 (sign-magnitude
/// k/64, |k| <= 127). ModelOpt's MXFP8 is torchao's RCEIL but for blocks whose exponent is -127
/// (amax below 448 · 2^-127, zero, or NaN), which torchao scales by 1 and ModelOpt by 2^127.
/// Blocks run along one axis of the tensor (default the last); torchao and ModelOpt need
/// the axis length to be a multiple of the block size (argument_error otherwise, as they
/// refuse it), microxcaling and ModelOpt's MXFP8QTensor pad a partial last block with zeros.

#include <cstddef>
#include <cstdint>
#include <string>

#include <cmath>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "../core/error.hpp"
#include "../kernels/block_scaled.hpp"
#include "../kernels/channel_layout.hpp"
#include "../kernels/float_bits.hpp"
#include "../kernels/math.hpp"
#include "../config.hpp"
#include "../core/tensor.hpp"
#include "../kernels/policy.hpp"
#include "low_bit_float.hpp"
#include "low_bit_specs.hpp"

namespace xq::low_bit {

/// "torchao_rceil", ... (argument_error outside the enum).
XQ_DECL const char* to_string(mx_variant v);
/// "mxfp4 torchao_rceil block 32 axis -1" style.
XQ_DECL std::string describe(const mx_spec& s);
/// Throws argument_error (naming `where`) for an element the variant does not have, a block
/// size < 1, or an axis outside x's rank.
XQ_DECL void validate(const mx_spec& s, std::size_t rank, const std::string& where);

/// Bits per value the format stores: the element's, plus 8 scale bits per block
/// (MXFP4: 4 + 8/32 = 4.25).
XQ_DECL double bits_per_value(const mx_spec& s);

/// torch.log2's floor and ceil for a positive finite float32 (torch_log2_table.hpp).
XQ_DECL int torch_floor_log2(float a);
XQ_DECL int torch_ceil_log2(float a);

/// The quantize-dequantize of x under `s` (argument_error, naming `where`, for a bad spec or
/// an axis length the variant refuses). The scales are written to `scales` when not null:
/// one float32 per block (2^e, NaN for a NaN block), blocks in the order of the layout
/// (outer, block, inner).
template <class Policy = default_policy>
tensor mx_quantize_dequantize(const tensor& x, const mx_spec& s, const std::string& where = "xq::low_bit::mx",
                              std::vector<float>* scales = nullptr);
/// The quantize-dequantize of x with given block scales (as mx_quantize_dequantize wrote them
/// for a tensor of x's shape; argument_error otherwise): observation off. The gradient of every
/// MX variant is the identity (torchao's MX QAT backward; ModelOpt's dynamic block quantizer,
/// which skips the clip for MX formats; microxcaling's layers pass it through and quantize it
/// as a gradient, which xquant does not).
template <class Policy = default_policy>
tensor mx_apply(const tensor& x, const mx_spec& s, const std::vector<float>& scales,
                const std::string& where = "xq::low_bit::mx");

}  // namespace xq::low_bit

// ---- the element functor of one block, and the walk ---------------------------------

namespace xq::low_bit {

/// One block's elements for variant Var: y = cast(clamp(x ⊘ pre)) * post, ⊘ a division (a
/// product for torchao's RCEIL). The variant fixes the rounding and the zero rules at compile
/// time; the element type's grid is the cast's data.
template <mx_variant Var>
struct mx_kernel {
  element_cast cast;
  float pre = 1.0f;            ///< the divisor (divide) or the multiplier
  float post = 1.0f;           ///< the dequantization scale (NaN: the whole block is NaN)
  float clamp_max = INFINITY;  ///< torchao clamps the scaled values first (NaN kept)

  static constexpr bool microxcaling = Var == mx_variant::microxcaling_nearest || Var == mx_variant::microxcaling_even;
  static constexpr rounding round = Var == mx_variant::modelopt_mxfp4 ? rounding::half_toward_zero
                                    : microxcaling                    ? rounding::half_away
                                                                      : rounding::half_even;

  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V forward(const V& x) const {
    V t = (Var == mx_variant::torchao_rceil || Var == mx_variant::modelopt_mxfp8) ? x * V(pre) : x / V(pre);
    // torch.clamp keeps NaN: min/max keep the first argument when the compare fails.
    if constexpr (!microxcaling && Var != mx_variant::modelopt_mxfp4)
      t = math::min(math::max(t, V(-clamp_max)), V(clamp_max));
    V q;
    if constexpr (Var == mx_variant::microxcaling_even) {
      // microxcaling's "even": sign * (floor(|v| + 0.5) - [(|v| - 0.5) % 2 == 0]) on the
      // element grid; as the grid step scales |v| by a power of two, done here on v/step.
      const V a = math::abs(t);
      const V c = math::min(a, V(4.0f * cast.max));
      const V step = math::max(math::pow2_floor(c), V(cast.min_normal)) * V(cast.inv_mantissa);
      const V v = c * math::reciprocal_pow2(step);  // exact: step is a normal power of two
      const V h = v - V(0.5f);
      const auto even_tie = math::logical_and(h >= V(0.0f), h - V(2.0f) * math::floor(h * V(0.5f)) == V(0.0f));
      const V r = math::round_half_up(v) - math::as_float(even_tie);
      V m = math::min(r * step, V(cast.max));
      q = math::copy_sign_bit(m, t);
      q = math::select(math::logical_not(a == a), t, q);
    } else {
      q = cast.template forward_rounded<round, false>(t);
    }
    if constexpr (Var == mx_variant::modelopt_mxfp4) q = math::select(t == V(0.0f), V(-0.0f), q);  // cast_fp4
    if constexpr (microxcaling) q = math::select(t == V(0.0f), V(0.0f), q);  // sign(±0) * ... = +0
    return q * V(post);
  }
};

namespace detail {

/// The block scale 2^e of an MX block of amax `amax` under s (compiled: mx_block.ipp).
XQ_DECL float mx_scale_of(const mx_spec& s, float amax);

/// The MX format of a spec and variant for the block walker: a block's state is its
/// dequantization scale 2^e (NaN for a NaN block: torch's log2 tables make it scalar code),
/// and the kernel's divisor or multiplier follows from it.
template <mx_variant Var>
struct mx_format {
  static constexpr kernels::block_statistic statistic = kernels::block_statistic::abs_max;
  static constexpr std::size_t state_size = 1;
  static constexpr std::size_t param_count = 2;
  static constexpr bool vector_state = false;
  static constexpr bool identity_gradient = true;  // torchao's and ModelOpt's MX fake quant pass it through
  using kernel_type = mx_kernel<Var>;
  static constexpr bool floor_family =
      Var == mx_variant::torchao_floor || Var == mx_variant::torchao_ceil || Var == mx_variant::torchao_even;

  mx_spec spec;
  element_cast cast;
  float clamp_max = INFINITY;

  /// The block's scale 2^e from its amax (compiled: mx_block.ipp).
  float scale_of(float amax) const { return mx_scale_of(spec, amax); }
  template <class V>
  void block_state(const V& amax, const V&, V* state) const {
    state[0] = scale_of(amax);
  }
  template <class V>
  XQ_HOST_DEVICE void kernel_params(const V* state, V* p) const {
    const V post = state[0];
    p[1] = post;
    if constexpr (Var == mx_variant::torchao_rceil) {
      p[0] = math::select(post == V(5.87747175e-39f), V(1.0f), V(1.0f) / post);  // 2^-e; 1 for e = -127
    } else if constexpr (Var == mx_variant::modelopt_mxfp8) {
      p[0] = V(1.0f) / post;  // exp2(127 - biased): 2^127 for e = -127
    } else if constexpr (floor_family) {
      // max(2^e, 2^-126); a NaN block divides by +Inf (its E8M0 code 255 read as a float)
      p[0] = math::select(post == post, math::max(post, V(1.17549435e-38f)), V(INFINITY));
    } else {
      p[0] = post;
    }
  }
  XQ_HOST_DEVICE kernel_type kernel(const float* p) const {
    kernel_type k;
    k.cast = cast;
    k.clamp_max = clamp_max;
    k.pre = p[0];
    k.post = p[1];
    return k;
  }
};

/// The element cast and clamp of a spec (compiled: mx_block.ipp).
XQ_DECL void mx_element_cast(const mx_spec& s, element_cast& cast, float& clamp_max);

/// Calls fn(format) with the format of s's variant.
template <class Fn>
void visit_mx(const mx_spec& s, Fn&& fn) {
  const auto run = [&](auto f) {
    f.spec = s;
    mx_element_cast(s, f.cast, f.clamp_max);
    fn(f);
  };
  switch (s.variant) {
    case mx_variant::torchao_floor: return run(mx_format<mx_variant::torchao_floor>{});
    case mx_variant::torchao_ceil: return run(mx_format<mx_variant::torchao_ceil>{});
    case mx_variant::torchao_even: return run(mx_format<mx_variant::torchao_even>{});
    case mx_variant::microxcaling_nearest: return run(mx_format<mx_variant::microxcaling_nearest>{});
    case mx_variant::microxcaling_even: return run(mx_format<mx_variant::microxcaling_even>{});
    case mx_variant::modelopt_mxfp4: return run(mx_format<mx_variant::modelopt_mxfp4>{});
    case mx_variant::modelopt_mxfp8: return run(mx_format<mx_variant::modelopt_mxfp8>{});
    case mx_variant::torchao_rceil: break;
  }
  run(mx_format<mx_variant::torchao_rceil>{});
}

/// The layout of x's blocks (checks the spec and the axis length; compiled).
XQ_DECL kernels::block_layout mx_layout(const tensor& x, const mx_spec& s, const std::string& where);

}  // namespace detail

template <class Policy>
tensor mx_quantize_dequantize(const tensor& x, const mx_spec& s, const std::string& where, std::vector<float>* scales) {
  const kernels::block_layout bl = detail::mx_layout(x, s, where);
  std::vector<float> local;
  std::vector<float>& st = scales ? *scales : local;
  st.assign(bl.block_count(), 0.0f);
  tensor y = tensor::from_shape(x.shape());
  detail::visit_mx(s, [&](const auto& f) { kernels::block_scaled_forward<Policy>(f, bl, x.data(), y.data(), st.data()); });
  return y;
}

template <class Policy>
tensor mx_apply(const tensor& x, const mx_spec& s, const std::vector<float>& scales, const std::string& where) {
  const kernels::block_layout bl = detail::mx_layout(x, s, where);
  if (scales.size() != bl.block_count())
    throw argument_error(where, xq::detail::concat("a scale per block: ", bl.block_count(), " for this tensor"),
                         xq::detail::concat(scales.size(), " scales"));
  tensor y = tensor::from_shape(x.shape());
  detail::visit_mx(s, [&](const auto& f) { kernels::block_scaled_apply<Policy>(f, bl, x.data(), y.data(), scales.data()); });
  return y;
}

}  // namespace xq::low_bit

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/mx_block.ipp"
#endif
