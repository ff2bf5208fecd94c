#pragma once
/// \file low_bit_float.hpp
/// The low-bit float element types of FP8, MX and NVFP4, and float32 -> element casts as
/// each peer casts, bit for bit (docs/semantics.md, "Low-bit formats"):
///
///  | element            | mantissa bits | smallest normal | max    | specials                       |
///  |--------------------|---------------|-----------------|--------|--------------------------------|
///  | FP8 E4M3FN         | 3             | 2^-6            | 448    | NaN = S.1111.111, no Inf       |
///  | FP8 E5M2           | 2             | 2^-14           | 57344  | IEEE Inf and NaN               |
///  | FP6 E3M2           | 2             | 2^-2            | 28     | none                           |
///  | FP6 E2M3           | 3             | 2^0             | 7.5    | none                           |
///  | FP4 E2M1           | 1             | 2^0             | 6      | none                           |
///  | UE4M3 (NVFP4 scale)| 3             | 2^-6            | 448    | E4M3FN without its sign        |
///  | E8M0 (MX scale)    | 0             | 2^-127          | 2^127  | 0xFF = NaN, no zero, no sign   |
///
/// A cast rounds |x| on the element's grid (steps of 2^(max(e, emin) - m) for |x| in
/// [2^e, 2^(e+1))), then maps what lies beyond the grid as the `cast_rule` says. The grid
/// is the same everywhere; the peers differ in
///  - the rounding of a value halfway between two elements: to even (ml_dtypes, ONNX, torch,
///    torchao, TransformerEngine), away from zero as microxcaling computes it
///    (`sign * floor(|v| + 0.5)` in float32, so 0.49999997 steps round up), or toward zero
///    (ModelOpt's `MXFP4QTensor` `cast_fp4`: `sum(|x| > midpoints)`);
///  - what a finite value past the top becomes: the largest element (ONNX `saturate=1`,
///    torch >= 2.13, ml_dtypes for FP6/FP4), NaN (ml_dtypes E4M3FN: 465 -> NaN, 464 -> 448
///    by rounding first), Inf (ml_dtypes E5M2, IEEE);
///  - what ±Inf and NaN become (torch casts ±Inf to ±448 in E4M3FN; ml_dtypes gives NaN
///    there, and for the formats without NaN maps NaN to a zero whose sign is the NaN's sign
///    bit inverted).
///
/// Every cast is an element functor written once for float, xsimd batches and CUDA
/// (`element_cast`), so the scalar, SIMD and device walkers agree bit for bit.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../kernels/float_bits.hpp"
#include "../kernels/math.hpp"
#include "low_bit_specs.hpp"

namespace xq::low_bit {

/// Rounding of a value halfway between two elements (see the file comment).
enum class rounding : std::uint8_t {
  half_even,          ///< IEEE round to nearest even (ml_dtypes, ONNX, torch, torchao, TE)
  half_away,          ///< floor(|v| + 0.5) in float32, sign restored (microxcaling `round="nearest"`)
  half_toward_zero,   ///< ties to the smaller magnitude (ModelOpt `MXFP4QTensor`'s cast_fp4)
};

/// What a value that has no element of its own becomes.
enum class special : std::uint8_t {
  saturate,    ///< ±max
  nan,         ///< NaN (sign kept)
  infinity,    ///< ±Inf
  zero_flipped, ///< a zero with the sign bit inverted (ml_dtypes' NaN -> FP6 / FP4)
  value         ///< ±cast_rule::value (torchao's NaN -> FP6 / FP4 gives ±1.5)
};

/// How a peer casts float32 to an element type.
struct cast_rule {
  rounding round = rounding::half_even;
  special overflow = special::saturate;  ///< a finite |x| that rounds above max
  special infinity = special::saturate;  ///< ±Inf
  special nan = special::nan;            ///< NaN
  float value = 0.0f;                    ///< the magnitude of special::value
};

/// The grid of an element type.
struct element_info {
  const char* name;
  int bits;            ///< storage bits of an element (8, 6, 4; the scales 8)
  int mantissa_bits;   ///< m
  int min_exponent;    ///< emin: the smallest normal is 2^emin, steps below it stay 2^(emin - m)
  int max_exponent;    ///< emax: floor(log2(max)), the "max_pow2" of the MX shared exponent
  float max;           ///< the largest finite element
  bool has_infinity, has_nan, is_signed;
};

/// The grid of `t`.
XQ_DECL const element_info& info(element_type t) noexcept;
/// "fp8_e4m3fn", "fp4_e2m1", ... (argument_error for a value outside the enum).
XQ_DECL const char* to_string(element_type t);

/// What ml_dtypes 0.6 does (`np.float32 array.astype(ml_dtypes.float8_e4m3fn)` ...).
XQ_DECL cast_rule ml_dtypes_rule(element_type t) noexcept;
/// ONNX `Cast` / `QuantizeLinear` with saturate=1 (the reference implementation,
/// onnx/reference/ops/op_cast.py): finite overflow and ±Inf saturate, NaN stays NaN.
XQ_DECL cast_rule onnx_saturate_rule(element_type t) noexcept;
/// torch 2.15's eager `.to(torch.float8_e4m3fn / float8_e5m2)`: saturating, ±Inf to ±max
/// in E4M3FN, ±Inf kept in E5M2, NaN kept.
XQ_DECL cast_rule torch_rule(element_type t) noexcept;
/// torchao 0.18's `f32_to_f4_unpacked` / `f32_to_f6_e2m3_unpacked` / `f32_to_f6_e3m2_unpacked`
/// (prototype/mx_formats/kernels.py, custom_fp_utils.py): saturating, NaN as measured.
XQ_DECL cast_rule torchao_rule(element_type t) noexcept;

/// The cast of one value as a functor over V (float or an xsimd batch; device code too):
/// the float32 value of the element `x` is cast to under `rule`.
struct element_cast {
  float min_step;      ///< 2^(emin - m): the step below the smallest normal
  float min_normal;    ///< 2^emin
  float inv_mantissa;  ///< 2^-m
  float max;
  float overflow_value, infinity_value, nan_value;  ///< magnitudes (sign applied after)
  bool flip_nan_sign;
  bool positive_only;  ///< E8M0: no zero and no sign, so a zero or a negative value is NaN
  rounding round;

  /// The functor for element type `t` under `rule`.
  XQ_DECL static element_cast make(element_type t, const cast_rule& rule);

  /// |x| (a >= 0, not NaN) on the grid with the rounding R, specials mapped. AnyType false:
  /// the element type is one of the FP8/FP6/FP4 grids (its smallest step a normal float, no
  /// E8M0) and NaN keeps its sign (no ml_dtypes zero_flipped rule): what the block kernels
  /// use, three run-time tests fewer in their loops.
  template <rounding R, bool AnyType = true, class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V magnitude_rounded(const V& a) const {
    // a's power of two (its exponent field alone; 0 for a zero or subnormal a), at least
    // the smallest normal, times 2^-m: the step of a's binade on the element's grid.
    // Every operation below is exact but the rounding itself; the step is a power of two,
    // so multiplying by its reciprocal is the division (computed from its bits when the
    // step is a normal float, as for every element type but E8M0).
    const V c = math::min(a, V(4.0f * max));
    const V step = math::max(math::pow2_floor(c), V(min_normal)) * V(inv_mantissa);
    const V v = (!AnyType || min_step >= 1.17549435e-38f) ? c * math::reciprocal_pow2(step) : c / step;
    V r;
    if constexpr (R == rounding::half_even) r = math::round_half_even(v);
    else if constexpr (R == rounding::half_away) r = math::round_half_up(v);
    else r = math::ceil(v - V(0.5f));
    const V q = r * step;
    V out = math::select(q > V(max), V(overflow_value), q);
    out = math::select(a == V(INFINITY), V(infinity_value), out);
    return out;
  }
  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V magnitude(const V& a) const {
    if (round == rounding::half_even) return magnitude_rounded<rounding::half_even>(a);
    if (round == rounding::half_away) return magnitude_rounded<rounding::half_away>(a);
    return magnitude_rounded<rounding::half_toward_zero>(a);
  }

  /// The element's value as a float32, with the rounding R (what `round` says: `forward`).
  /// AnyType false: an FP8/FP6/FP4 grid (see magnitude_rounded).
  template <rounding R, bool AnyType = true, class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V forward_rounded(const V& x) const {
    const V a = math::abs(x);
    V out = math::copy_sign_bit(magnitude_rounded<R, AnyType>(a), x);
    const auto is_nan = math::logical_not(a == a);  // (xsimd's != is an ordered compare)
    const V nan_out = (AnyType && flip_nan_sign) ? math::copy_sign_bit(V(nan_value), math::flip_sign_bit(x))
                                                 : math::copy_sign_bit(V(nan_value), x);
    out = math::select(is_nan, nan_out, out);
    if (AnyType && positive_only) {
      // ml_dtypes rounds E8M0 on float32's bits, so a float32 subnormal (exponent field 0)
      // goes up to 2^-126 once it is past 2^-127 (its raw bits past 0x400000).
      const V tiny = math::select(a <= V(5.87747175e-39f), V(5.87747175e-39f), V(1.17549435e-38f));
      out = math::select(a < V(1.17549435e-38f), tiny, out);
      out = math::select(x > V(0.0f), out, V(NAN));
    }
    return out;
  }
  /// The element's value as a float32.
  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V forward(const V& x) const {
    if (round == rounding::half_even) return forward_rounded<rounding::half_even>(x);
    if (round == rounding::half_away) return forward_rounded<rounding::half_away>(x);
    return forward_rounded<rounding::half_toward_zero>(x);
  }
};

/// The element code (its storage bits, sign bit at position bits-1) of a value that is
/// exactly an element of `t` (e.g. the output of an element_cast). NaN gives the type's NaN
/// code (0xFF for E4M3FN/E8M0 with the sign, 0x7E/0xFE for E5M2).
XQ_DECL std::uint8_t encode(element_type t, float element_value);
/// The float32 value of element code `code`.
XQ_DECL float decode(element_type t, std::uint8_t code);

/// Casts n values under `rule` (scalar reference).
XQ_DECL void cast(element_type t, const cast_rule& rule, const float* x, float* y, std::size_t n);

}  // namespace xq::low_bit

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/low_bit_float.ipp"
#endif
