#pragma once
/// \file mx_block.ipp
/// MX block scales per peer (numerics/mx_block.hpp).

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "../mx_block.hpp"
#include "../torch_log2_table.hpp"

namespace xq::low_bit {

XQ_DECL const char* to_string(mx_variant v) {
  switch (v) {
    case mx_variant::torchao_floor: return "torchao_floor";
    case mx_variant::torchao_ceil: return "torchao_ceil";
    case mx_variant::torchao_even: return "torchao_even";
    case mx_variant::torchao_rceil: return "torchao_rceil";
    case mx_variant::microxcaling_nearest: return "microxcaling_nearest";
    case mx_variant::microxcaling_even: return "microxcaling_even";
    case mx_variant::modelopt_mxfp4: return "modelopt_mxfp4";
    case mx_variant::modelopt_mxfp8: return "modelopt_mxfp8";
  }
  throw argument_error("xq::low_bit::mx_variant", "one of the eight MX variants",
                       xq::detail::concat("value ", static_cast<int>(v)));
}

namespace detail {
inline const char* mx_element_name(const mx_element& e) {
  if (e.int8) return "mxint8";
  switch (e.type) {
    case element_type::e4m3fn: return "mxfp8_e4m3";
    case element_type::e5m2: return "mxfp8_e5m2";
    case element_type::e3m2: return "mxfp6_e3m2";
    case element_type::e2m3: return "mxfp6_e2m3";
    case element_type::e2m1: return "mxfp4";
    default: return "mx(unsupported element)";
  }
}
inline bool is_microxcaling(mx_variant v) {
  return v == mx_variant::microxcaling_nearest || v == mx_variant::microxcaling_even;
}
}  // namespace detail

XQ_DECL std::string describe(const mx_spec& s) {
  return xq::detail::concat(detail::mx_element_name(s.element), " ", to_string(s.variant), " block ", s.block_size,
                            " axis ", s.axis);
}

XQ_DECL void validate(const mx_spec& s, std::size_t rank, const std::string& where) {
  to_string(s.variant);
  const element_type t = s.element.type;
  const bool float_element = t == element_type::e4m3fn || t == element_type::e5m2 || t == element_type::e3m2 ||
                             t == element_type::e2m3 || t == element_type::e2m1;
  if (s.element.int8 && !detail::is_microxcaling(s.variant))
    throw argument_error(where, "INT8 elements with a microxcaling variant (the only peer with MXINT8)",
                         to_string(s.variant));
  if (!s.element.int8 && !float_element)
    throw argument_error(where, "an MX element type: fp8_e4m3fn, fp8_e5m2, fp6_e3m2, fp6_e2m3 or fp4_e2m1",
                         to_string(t));
  if (s.variant == mx_variant::modelopt_mxfp4 && (s.element.int8 || t != element_type::e2m1))
    throw argument_error(where, "FP4 E2M1 elements for modelopt_mxfp4 (MXFP4QTensor)", detail::mx_element_name(s.element));
  if (s.variant == mx_variant::modelopt_mxfp8 && (s.element.int8 || t != element_type::e4m3fn))
    throw argument_error(where, "FP8 E4M3 elements for modelopt_mxfp8 (MXFP8QTensor)", detail::mx_element_name(s.element));
  if (s.block_size < 1) throw argument_error(where, "a block size >= 1", xq::detail::concat(s.block_size));
  const long r = long(rank);
  if (rank == 0 || s.axis < -r || s.axis >= r)
    throw argument_error(where, xq::detail::concat("a block axis in [", -r, ", ", r, ")"),
                         xq::detail::concat("axis ", s.axis, " of a rank-", rank, " tensor"));
}

XQ_DECL double bits_per_value(const mx_spec& s) {
  const double element_bits = s.element.int8 ? 8.0 : double(info(s.element.type).bits);
  return element_bits + 8.0 / double(s.block_size);
}

namespace detail {
/// floor(log2 a) for a > 0 finite: the exponent field (std::ilogb below the normals).
inline int exponent_of(float a) {
  const int field = int((math::bits_of(a) >> 23) & 0xFFu);
  return field != 0 ? field - 127 : std::ilogb(a);
}
/// 2^e as a float, exact (subnormals and Inf included), for e in [-149, 128].
inline float pow2f(int e) {
  if (e >= -126) return e > 127 ? INFINITY : math::float_of(std::uint32_t(e + 127) << 23);
  return math::float_of(1u << (e + 149));
}
}  // namespace detail

XQ_DECL int torch_floor_log2(float a) {
  const int e = detail::exponent_of(a);  // exact floor(log2 a) for a > 0 finite
  const int n = e + 1;
  if (n >= -149 && n <= 128) {
    const std::uint32_t below = detail::torch_log2_below[n + 149];
    if (below != 0 && math::bits_of(a) >= below) return n;
  }
  return e;
}

XQ_DECL int torch_ceil_log2(float a) {
  const int e = detail::exponent_of(a);
  if (a == detail::pow2f(e)) return e;
  if (e >= -149 && e <= 128) {
    const std::uint32_t above = detail::torch_log2_above[e + 149];
    if (above != 0 && math::bits_of(a) <= above) return e;
  }
  return e + 1;
}

namespace detail {

XQ_DECL kernels::block_layout mx_layout(const tensor& x, const mx_spec& s, const std::string& where) {
  validate(s, x.dimension(), where);
  kernels::block_layout bl;
  bl.shape = kernels::channel_layout::of(x.shape(), s.axis, where.c_str());
  bl.block = std::size_t(s.block_size);
  const bool pads = is_microxcaling(s.variant) || s.variant == mx_variant::modelopt_mxfp8;
  if (!pads && bl.shape.channels % bl.block != 0)
    throw argument_error(where,
                         xq::detail::concat("an axis length that is a multiple of the block size ", s.block_size,
                                            " (", to_string(s.variant),
                                            " has no partial blocks; microxcaling and modelopt_mxfp8 pad them)"),
                         xq::detail::concat("length ", bl.shape.channels, " on axis ", s.axis));
  return bl;
}


XQ_DECL void mx_element_cast(const mx_spec& s, element_cast& cast, float& clamp_max) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const element_type t = s.element.type;
  clamp_max = INFINITY;
  if (s.variant == mx_variant::modelopt_mxfp4) {
    // descale = amax / 6; e = ceil(max(log2(descale), -127)); x / exp2(e); cast_fp4; * exp2(e)
    cast = element_cast::make(element_type::e2m1, {rounding::half_toward_zero, special::saturate, special::saturate,
                                                   special::nan});
    return;
  }
  if (is_microxcaling(s.variant)) {
    // microxcaling: A / 2^e, round on the element grid, clamp to max_norm, * 2^e.
    if (s.element.int8) {
      cast = element_cast{};
      cast.min_normal = 1.0f;  // sign-magnitude k/64: one step 2^-6 for every |v| < 2
      cast.min_step = 1.0f / 64.0f;
      cast.inv_mantissa = 1.0f / 64.0f;
      cast.max = 127.0f / 64.0f;
    } else {
      cast = element_cast::make(t, {rounding::half_away, special::saturate, special::saturate, special::nan});
    }
    cast.round = rounding::half_away;
    cast.overflow_value = cast.max;
    cast.infinity_value = cast.max;
    cast.nan_value = qnan;
    cast.flip_nan_sign = false;
    cast.positive_only = false;
    return;
  }
  // torchao
  const element_info& ei = info(t);
  const bool fp8 = t == element_type::e4m3fn || t == element_type::e5m2;
  cast = element_cast::make(t, fp8 ? torch_rule(t) : torchao_rule(t));
  clamp_max = (fp8 || s.variant == mx_variant::torchao_rceil) ? ei.max : INFINITY;
}

XQ_DECL float mx_scale_of(const mx_spec& s, float amax) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const element_type t = s.element.type;
  if (s.variant == mx_variant::modelopt_mxfp4) {
    const float descale = amax / 6.0f;
    if (std::isnan(descale)) return qnan;
    const int e = descale == 0.0f ? -127 : (std::isinf(descale) ? 128 : std::max(torch_ceil_log2(descale), -127));
    return pow2f(e);
  }
  if (is_microxcaling(s.variant)) {
    // shared = floor(log2(amax + 2^-126 * [amax == 0])) - emax; NaN above 127, -127 below;
    // log2(NaN or Inf) - emax: NaN, or above 127 -> NaN
    const int emax = s.element.int8 ? 0 : info(t).max_exponent;
    if (!std::isfinite(amax)) return qnan;
    const int shared = torch_floor_log2(amax == 0.0f ? pow2f(-126) : amax) - emax;
    if (shared > 127) return qnan;
    return pow2f(std::max(shared, -127));
  }
  const element_info& ei = info(t);
  if (s.variant == mx_variant::modelopt_mxfp8) {
    // _compute_e8m0_exponent: ceil(log2(amax / 448)) where amax / 448 > 0, else -127; clamp ±127
    const float descale = amax / ei.max;
    if (!(descale > 0.0f)) return pow2f(-127);
    const int e = std::isinf(descale) ? 127 : std::min(std::max(torch_ceil_log2(descale), -127), 127);
    return pow2f(e);
  }
  if (s.variant == mx_variant::torchao_rceil) {
    const float descale = amax / ei.max;
    int biased;
    if (std::isnan(descale)) biased = 255;
    else if (std::isinf(descale)) biased = 254;
    else if (descale == 0.0f) biased = 0;
    else biased = std::min(std::max(torch_ceil_log2(descale), -127), 127) + 127;
    return biased == 255 ? qnan : pow2f(biased - 127);
  }
  std::uint32_t bits = math::bits_of(amax);
  if (s.variant == mx_variant::torchao_even && !std::isnan(amax)) {
    const std::uint32_t add = 1u << (23 - ei.mantissa_bits - 1);
    bits = (bits + add) & (((1u << 9) - 1u) << 23);
  }
  int extracted = int((bits >> 23) & 0xFFu) - 127;
  if (s.variant == mx_variant::torchao_ceil && (bits & 0x7FFFFFu) != 0) extracted += 1;
  const int unbiased = std::min(std::max(extracted - ei.max_exponent, -127), 128);
  const int biased = std::isnan(amax) ? 255 : unbiased + 127;
  return biased == 255 ? qnan : pow2f(biased - 127);
}

}  // namespace detail
}  // namespace xq::low_bit
