#pragma once
/// \file low_bit_float.ipp
/// The element types' grids, the peers' cast rules, codes (numerics/low_bit_float.hpp).

#include <cmath>
#include <cstdint>
#include <limits>

#include "../low_bit_float.hpp"

namespace xq::low_bit {

XQ_DECL const element_info& info(element_type t) noexcept {
  static const element_info table[] = {
      {"fp8_e4m3fn", 8, 3, -6, 8, 448.0f, false, true, true},
      {"fp8_e5m2", 8, 2, -14, 15, 57344.0f, true, true, true},
      {"fp6_e3m2", 6, 2, -2, 4, 28.0f, false, false, true},
      {"fp6_e2m3", 6, 3, 0, 2, 7.5f, false, false, true},
      {"fp4_e2m1", 4, 1, 0, 2, 6.0f, false, false, true},
      {"ue4m3", 8, 3, -6, 8, 448.0f, false, true, false},
      {"e8m0", 8, 0, -127, 127, 1.70141183e38f, false, true, false},
  };
  return table[static_cast<std::size_t>(t) < 7 ? static_cast<std::size_t>(t) : 0];
}

XQ_DECL const char* to_string(element_type t) {
  if (static_cast<std::size_t>(t) >= 7)
    throw argument_error("xq::low_bit::element_type", "one of the seven element types",
                         xq::detail::concat("value ", static_cast<int>(t)));
  return info(t).name;
}

XQ_DECL cast_rule ml_dtypes_rule(element_type t) noexcept {
  switch (t) {
    case element_type::e4m3fn:
    case element_type::ue4m3: return {rounding::half_even, special::nan, special::nan, special::nan};
    case element_type::e5m2: return {rounding::half_even, special::infinity, special::infinity, special::nan};
    case element_type::e8m0: return {rounding::half_even, special::nan, special::nan, special::nan};
    default: return {rounding::half_even, special::saturate, special::saturate, special::zero_flipped};
  }
}

XQ_DECL cast_rule onnx_saturate_rule(element_type t) noexcept {
  // The reference evaluator casts FP4 (and FP6) through ml_dtypes: NaN becomes a zero.
  const bool has_nan = info(t).has_nan;
  return {rounding::half_even, special::saturate, special::saturate, has_nan ? special::nan : special::zero_flipped};
}

XQ_DECL cast_rule torch_rule(element_type t) noexcept {
  // E5M2 keeps IEEE overflow (a finite value past the top becomes Inf); E4M3FN saturates.
  if (t == element_type::e5m2) return {rounding::half_even, special::infinity, special::infinity, special::nan};
  return {rounding::half_even, special::saturate, special::saturate, special::nan};
}

XQ_DECL cast_rule torchao_rule(element_type t) noexcept {
  (void)t;  // NaN comes out as ±1.5 (measured: codes 3/11 in FP4, 12/44 E2M3, 14/46 E3M2)
  return {rounding::half_even, special::saturate, special::saturate, special::value, 1.5f};
}

namespace detail {
inline float special_value(special s, float max, float value) {
  switch (s) {
    case special::value: return value;
    case special::saturate: return max;
    case special::nan: return std::numeric_limits<float>::quiet_NaN();
    case special::infinity: return std::numeric_limits<float>::infinity();
    case special::zero_flipped: return 0.0f;
  }
  return max;
}
}  // namespace detail

XQ_DECL element_cast element_cast::make(element_type t, const cast_rule& rule) {
  const element_info& e = info(t);
  element_cast k;
  k.min_normal = std::ldexp(1.0f, e.min_exponent);
  k.min_step = std::ldexp(1.0f, e.min_exponent - e.mantissa_bits);
  k.inv_mantissa = std::ldexp(1.0f, -e.mantissa_bits);
  k.max = e.max;
  k.overflow_value = detail::special_value(rule.overflow, e.max, rule.value);
  k.infinity_value = detail::special_value(rule.infinity, e.max, rule.value);
  k.nan_value = detail::special_value(rule.nan, e.max, rule.value);
  k.flip_nan_sign = rule.nan == special::zero_flipped;
  k.positive_only = t == element_type::e8m0;
  k.round = rule.round;
  return k;
}

XQ_DECL void cast(element_type t, const cast_rule& rule, const float* x, float* y, std::size_t n) {
  const element_cast k = element_cast::make(t, rule);
  for (std::size_t i = 0; i < n; ++i) y[i] = k.forward(x[i]);
}

XQ_DECL std::uint8_t encode(element_type t, float v) {
  // The code whose value has v's bits (a table walk: 256 codes at most; not a hot path).
  const element_info& e = info(t);
  const unsigned codes = 1u << e.bits;
  const bool nan = std::isnan(v);
  for (unsigned c = 0; c < codes; ++c) {
    const float d = decode(t, std::uint8_t(c));
    if (nan ? (std::isnan(d) && (!e.is_signed || std::signbit(d) == std::signbit(v)))
            : math::bits_of(d) == math::bits_of(v))
      return std::uint8_t(c);
  }
  throw argument_error(xq::detail::concat("xq::low_bit::encode(", e.name, ")"), "a value of the element type",
                       xq::detail::concat(v));
}

XQ_DECL float decode(element_type t, std::uint8_t code) {
  const element_info& e = info(t);
  if (t == element_type::e8m0)
    return code == 0xFF ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, int(code) - 127);
  const int exponent_bits = e.bits - 1 - e.mantissa_bits;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const bool negative = e.is_signed && ((code >> (e.bits - 1)) & 1u);
  const std::uint32_t field = (code >> e.mantissa_bits) & ((1u << exponent_bits) - 1u);
  const std::uint32_t mant = code & ((1u << e.mantissa_bits) - 1u);
  float v;
  if (t == element_type::e5m2 && field == 31) v = mant == 0 ? INFINITY : NAN;
  else if ((t == element_type::e4m3fn || t == element_type::ue4m3) && field == 15 && mant == 7) v = NAN;
  else if (field == 0) v = std::ldexp(float(mant), 1 - bias - e.mantissa_bits);
  else v = std::ldexp(float(mant | (1u << e.mantissa_bits)), int(field) - bias - e.mantissa_bits);
  return negative ? -v : v;
}

}  // namespace xq::low_bit
