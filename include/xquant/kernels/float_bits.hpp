#pragma once
/// \file float_bits.hpp
/// Bit-level per-value primitives of the low-bit float casts (numerics/low_bit_float.hpp),
/// in the style of math.hpp: one overload for `float` (host and device) and one for xsimd
/// batches, the same bits from both. (Kept out of math.hpp, which every kernel includes.)

#include <cmath>
#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

#include "../config.hpp"
#include "math.hpp"

namespace xq::math {

XQ_HOST_DEVICE XQ_ALWAYS_INLINE std::uint32_t bits_of(float x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint32_t>(__float_as_uint(x));
#else
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
#endif
}
XQ_HOST_DEVICE XQ_ALWAYS_INLINE float float_of(std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float x;
  std::memcpy(&x, &b, 4);
  return x;
#endif
}

/// |x| (the sign bit cleared; NaN stays NaN).
XQ_HOST_DEVICE XQ_ALWAYS_INLINE float abs(float x) { return float_of(bits_of(x) & 0x7FFFFFFFu); }
/// x's exponent field alone: 2^floor(log2 x) for a normal x > 0, 0 for a zero or a
/// subnormal, +Inf for Inf and NaN.
XQ_HOST_DEVICE XQ_ALWAYS_INLINE float pow2_floor(float x) { return float_of(bits_of(x) & 0x7F800000u); }
/// |m| with the sign bit of s.
XQ_HOST_DEVICE XQ_ALWAYS_INLINE float copy_sign_bit(float m, float s) {
  return float_of((bits_of(m) & 0x7FFFFFFFu) | (bits_of(s) & 0x80000000u));
}
/// x with its sign bit inverted (NaN included; a negation may keep a NaN's sign).
XQ_HOST_DEVICE XQ_ALWAYS_INLINE float flip_sign_bit(float x) { return float_of(bits_of(x) ^ 0x80000000u); }
/// 1 / x for x a normal power of two (exact): the exponent field mirrored around the bias.
XQ_HOST_DEVICE XQ_ALWAYS_INLINE float reciprocal_pow2(float x) { return float_of(0x7F000000u - bits_of(x)); }
XQ_HOST_DEVICE XQ_ALWAYS_INLINE float ceil(float x) {
#if defined(__CUDA_ARCH__)
  return ::ceilf(x);
#else
  return std::ceil(x);
#endif
}

template <class A>
XQ_ALWAYS_INLINE xsimd::batch<float, A> abs(const xsimd::batch<float, A>& x) {
  return xsimd::bitwise_and(x, xsimd::batch<float, A>(float_of(0x7FFFFFFFu)));
}
template <class A>
XQ_ALWAYS_INLINE xsimd::batch<float, A> pow2_floor(const xsimd::batch<float, A>& x) {
  return xsimd::bitwise_and(x, xsimd::batch<float, A>(float_of(0x7F800000u)));
}
template <class A>
XQ_ALWAYS_INLINE xsimd::batch<float, A> copy_sign_bit(const xsimd::batch<float, A>& m,
                                                      const xsimd::batch<float, A>& s) {
  const xsimd::batch<float, A> magnitude_bits(float_of(0x7FFFFFFFu)), sign_bit(float_of(0x80000000u));
  return xsimd::bitwise_or(xsimd::bitwise_and(m, magnitude_bits), xsimd::bitwise_and(s, sign_bit));
}
template <class A>
XQ_ALWAYS_INLINE xsimd::batch<float, A> flip_sign_bit(const xsimd::batch<float, A>& x) {
  return xsimd::bitwise_xor(x, xsimd::batch<float, A>(float_of(0x80000000u)));
}
template <class A>
XQ_ALWAYS_INLINE xsimd::batch<float, A> reciprocal_pow2(const xsimd::batch<float, A>& x) {
  using ints = xsimd::batch<std::int32_t, A>;
  return xsimd::bitwise_cast<xsimd::batch<float, A>>(ints(0x7F000000) - xsimd::bitwise_cast<ints>(x));
}
template <class A>
XQ_ALWAYS_INLINE xsimd::batch<float, A> ceil(const xsimd::batch<float, A>& x) {
  return xsimd::ceil(x);
}

}  // namespace xq::math
