#pragma once
/// \file requantize.hpp
/// Bringing an int32 accumulator to an output grid: `q = round(acc * M) + zero_point`,
/// saturated, where M = s_in * s_weight[c] / s_out is a real multiplier per output
/// channel. Integer runtimes disagree on how to multiply by M, and the disagreement is
/// visible in the last bit, so the engine lets the user pick the one their runtime uses
/// (research/deployment.md §2.1):
///
///  - `float_multiplier`: float(acc) * float(M), rounded half to even: onnxruntime's
///    MlasRequantizeOutput, FBGEMM's requantize (lrintf) and oneDNN's scales;
///  - `tflite_double_rounding`: M as a Q31 fixed-point multiplier and a power-of-two
///    shift (TFLite's QuantizeMultiplier), applied with gemmlowp's
///    SaturatingRoundingDoublingHighMul (ties toward +infinity: its nudge is 2^30 or
///    1 - 2^30 before a truncating division) then RoundingDivideByPOT (ties away from
///    zero): TFLite's default MultiplyByQuantizedMultiplier, two roundings;
///  - `tflite_single_rounding`: the same multiplier and shift applied with one 64-bit
///    multiply and one rounding shift (TFLite built with TFLITE_SINGLE_ROUNDING=1, as some
///    microcontroller ports are).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../../config.hpp"

namespace xq::deploy {

enum class requantization { float_multiplier, tflite_double_rounding, tflite_single_rounding };

/// "float_multiplier", "tflite_double_rounding", "tflite_single_rounding".
XQ_DECL const char* to_string(requantization r) noexcept;
/// The inverse of to_string; argument_error for another name.
XQ_DECL requantization requantization_from_string(const std::string& name);

/// TFLite's QuantizeMultiplier: m = multiplier * 2^(shift - 31), multiplier in
/// [2^30, 2^31) (0 for m == 0). m must be finite and >= 0.
struct fixed_point_multiplier {
  std::int32_t multiplier = 0;
  int shift = 0;
};
XQ_DECL fixed_point_multiplier quantize_multiplier(double m);

/// gemmlowp's SaturatingRoundingDoublingHighMul(a, b): round(a * b / 2^31), ties toward +infinity.
XQ_DECL std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) noexcept;
/// gemmlowp's RoundingDivideByPOT(x, e): round(x / 2^e), half away from zero.
XQ_DECL std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) noexcept;

/// The per-channel multipliers of one layer, prepared for one scheme.
class requantizer {
 public:
  requantizer() = default;
  /// `real[c]` = s_in * s_weight[c] / s_out, each finite and > 0 (argument_error naming `where`).
  XQ_DECL requantizer(requantization scheme, std::vector<double> real, const std::string& where);

  requantization scheme() const noexcept { return scheme_; }
  std::size_t channels() const noexcept { return real_.size(); }
  const std::vector<double>& real_multipliers() const noexcept { return real_; }
  const std::vector<float>& float_multipliers() const noexcept { return float_; }
  const std::vector<fixed_point_multiplier>& fixed_multipliers() const noexcept { return fixed_; }

  /// round(acc * M[c]) by the scheme (no zero point, no saturation).
  std::int32_t operator()(std::int32_t acc, std::size_t c) const noexcept {
    switch (scheme_) {
      case requantization::float_multiplier: return round_float(acc, float_[c]);
      case requantization::tflite_double_rounding: return double_rounding(acc, fixed_[c]);
      case requantization::tflite_single_rounding: break;
    }
    return single_rounding(acc, fixed_[c]);
  }

  /// Applies it to `rows` rows of `channels()` accumulators, adds `zero_point` and
  /// saturates to [qmin, qmax]; writes q - zero_point (the engine's centred integers).
  XQ_DECL void apply(const std::int32_t* acc, std::size_t rows, std::int32_t zero_point, std::int32_t qmin,
                     std::int32_t qmax, std::int16_t* out) const;

  XQ_DECL static std::int32_t round_float(std::int32_t acc, float m) noexcept;
  XQ_DECL static std::int32_t double_rounding(std::int32_t acc, fixed_point_multiplier m) noexcept;
  XQ_DECL static std::int32_t single_rounding(std::int32_t acc, fixed_point_multiplier m) noexcept;

 private:
  requantization scheme_ = requantization::float_multiplier;
  std::vector<double> real_;
  std::vector<float> float_;
  std::vector<fixed_point_multiplier> fixed_;
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/requantize.ipp"
#endif
