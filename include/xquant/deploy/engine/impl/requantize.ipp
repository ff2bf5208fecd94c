#pragma once
/// \file requantize.ipp
/// The requantization schemes (deploy/engine/requantize.hpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../requantize.hpp"

namespace xq::deploy {

XQ_DECL const char* to_string(requantization r) noexcept {
  switch (r) {
    case requantization::float_multiplier: return "float_multiplier";
    case requantization::tflite_double_rounding: return "tflite_double_rounding";
    case requantization::tflite_single_rounding: return "tflite_single_rounding";
  }
  return "?";
}

XQ_DECL requantization requantization_from_string(const std::string& name) {
  for (requantization r : {requantization::float_multiplier, requantization::tflite_double_rounding,
                           requantization::tflite_single_rounding})
    if (name == to_string(r)) return r;
  throw argument_error("requantization", "float_multiplier, tflite_double_rounding or tflite_single_rounding",
                       "\"" + name + "\"");
}

XQ_DECL fixed_point_multiplier quantize_multiplier(double m) {
  fixed_point_multiplier r;
  if (m == 0.0) return r;
  // tensorflow/lite/kernels/internal/quantization_util.cc, QuantizeMultiplier.
  int shift = 0;
  const double q = std::frexp(m, &shift);
  auto q_fixed = static_cast<std::int64_t>(std::round(q * double(1ll << 31)));
  if (q_fixed == (1ll << 31)) {
    q_fixed /= 2;
    ++shift;
  }
  if (shift < -31) {  // too small to represent: TFLite flushes it to 0
    shift = 0;
    q_fixed = 0;
  }
  r.multiplier = static_cast<std::int32_t>(q_fixed);
  r.shift = shift;
  return r;
}

XQ_DECL std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) noexcept {
  const bool overflow = a == b && a == std::numeric_limits<std::int32_t>::min();
  const std::int64_t ab = std::int64_t(a) * std::int64_t(b);
  const std::int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
  const auto high = static_cast<std::int32_t>((ab + nudge) / (1ll << 31));  // truncates toward 0, as C++ does
  return overflow ? std::numeric_limits<std::int32_t>::max() : high;
}

XQ_DECL std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) noexcept {
  const std::int32_t mask = std::int32_t((1ll << exponent) - 1);
  const std::int32_t remainder = x & mask;
  const std::int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

XQ_DECL requantizer::requantizer(requantization scheme, std::vector<double> real, const std::string& where)
    : scheme_(scheme), real_(std::move(real)) {
  for (std::size_t c = 0; c < real_.size(); ++c) {
    const double m = real_[c];
    if (!(m > 0) || !std::isfinite(m))
      throw argument_error(where, "a finite positive requantization multiplier s_in * s_weight / s_out",
                           xq::detail::concat(m, " for output channel ", c));
    // TFLite's kernels check shift in [-31, 30]: multipliers from 2^-32 to 2^30.
    if (scheme != requantization::float_multiplier && (m >= double(1ll << 30) || m < std::ldexp(1.0, -32)))
      throw argument_error(where, "a multiplier in [2^-32, 2^30) for TFLite's fixed-point requantization",
                           xq::detail::concat(m, " for output channel ", c));
    float_.push_back(static_cast<float>(m));
    fixed_.push_back(quantize_multiplier(m));
  }
}

XQ_DECL std::int32_t requantizer::round_float(std::int32_t acc, float m) noexcept {
  // MlasRequantizeOutput: float(acc) * scale, then nearbyint in the default rounding mode.
  const float v = static_cast<float>(acc) * m;
  const float limit = 2147483520.0f;  // the largest float below 2^31
  return static_cast<std::int32_t>(std::nearbyint(std::max(-limit, std::min(limit, v))));
}

XQ_DECL std::int32_t requantizer::double_rounding(std::int32_t acc, fixed_point_multiplier m) noexcept {
  const int left = m.shift > 0 ? m.shift : 0;
  const int right = m.shift > 0 ? 0 : -m.shift;
  // TFLite multiplies by 2^left before the high multiply; saturate as int32 does not wrap.
  const std::int64_t shifted = std::int64_t(acc) * (std::int64_t(1) << left);
  const auto x = static_cast<std::int32_t>(std::max<std::int64_t>(std::numeric_limits<std::int32_t>::min(),
                                                                   std::min<std::int64_t>(std::numeric_limits<std::int32_t>::max(), shifted)));
  return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, m.multiplier), right);
}

XQ_DECL std::int32_t requantizer::single_rounding(std::int32_t acc, fixed_point_multiplier m) noexcept {
  const int total = 31 - m.shift;
  const std::int64_t round = std::int64_t(1) << (total - 1);
  const std::int64_t r = (std::int64_t(acc) * std::int64_t(m.multiplier) + round) >> total;
  return static_cast<std::int32_t>(std::max<std::int64_t>(std::numeric_limits<std::int32_t>::min(),
                                                          std::min<std::int64_t>(std::numeric_limits<std::int32_t>::max(), r)));
}

XQ_DECL void requantizer::apply(const std::int32_t* acc, std::size_t rows, std::int32_t zero_point,
                                std::int32_t qmin, std::int32_t qmax, std::int16_t* out) const {
  const std::size_t n = real_.size();
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < n; ++c) {
      const std::int64_t q = std::int64_t((*this)(acc[r * n + c], c)) + zero_point;
      out[r * n + c] = static_cast<std::int16_t>(std::max<std::int64_t>(qmin, std::min<std::int64_t>(qmax, q)) - zero_point);
    }
}

}  // namespace xq::deploy
