#pragma once
/// \file quantizer_config.hpp
/// What a `fake_quantizer` does: whose fake-quant operator it runs (the
/// numerics), on which integer grid, and how its stored range follows the
/// training batches. The defaults are NVIDIA's TF2 toolkit (docs/semantics.md §4):
/// 8-bit symmetric narrow QDQ, last-value range.
///
/// \code
///   xq::quantizer_config c;                       // NVIDIA: 8-bit symmetric narrow tf_qdq
///   c.per_channel = true;  c.channel_axis = 2;    // a depthwise kernel (KH, KW, C, M)
///   xq::quantizer_config act;                     // tfmot's activation quantizer
///   act.numerics = xq::quant_numerics::tf_fake_quant;
///   act.symmetric = false;  act.narrow_range = false;
///   act.tracking = xq::range_tracking::moving_average;
/// \endcode

#include <cmath>
#include <string>

#include "../core/error.hpp"

namespace xq {

/// Whose operator rounds (docs/semantics.md §1-§5).
enum class quant_numerics {
  tf_qdq,           ///< TF quantize_and_dequantize_v4, range given (NVIDIA's toolkit, §2, §4)
  tf_fake_quant,    ///< TF fake_quant_with_min_max_vars[_per_channel] (tfmot, §1, §3)
  torch_fake_quant  ///< PyTorch fake_quantize_per_{tensor,channel}_affine + observer qparams (§5)
};

/// How the stored range follows the batches.
enum class range_tracking {
  last_value,      ///< the last training batch's range
  moving_average,  ///< tf: EMA with ema_decay from the initial range; torch: first batch, then c
  all_values       ///< the running min and max of every batch (tf: from 0 / 0)
};

struct quantizer_config {
  int num_bits = 8;
  bool symmetric = true;
  /// tf: the narrow grid ([-127, 127] / [1, 255] at 8 bits); torch: quant_min
  /// -127 for the symmetric grid (PyTorch's affine grids have no narrow form,
  /// so it is ignored there).
  bool narrow_range = true;
  bool per_channel = false;
  int channel_axis = -1;  ///< the channel axis when per_channel; negative counts from the end
  quant_numerics numerics = quant_numerics::tf_qdq;
  range_tracking tracking = range_tracking::last_value;
  double ema_decay = 0.999;          ///< tf numerics, moving_average (tfmot MovingAvgQuantize)
  double averaging_constant = 0.01;  ///< torch numerics, moving_average (MovingAverageMinMaxObserver)
  bool reduce_range = false;         ///< torch: halve the integer range
  float init_min = -6.0f, init_max = 6.0f;  ///< tf numerics: the range variables before any batch
};

/// "tf_qdq", "tf_fake_quant", "torch_fake_quant".
inline const char* to_string(quant_numerics n) noexcept {
  switch (n) {
    case quant_numerics::tf_qdq: return "tf_qdq";
    case quant_numerics::tf_fake_quant: return "tf_fake_quant";
    case quant_numerics::torch_fake_quant: return "torch_fake_quant";
  }
  return "?";
}

/// "last_value", "moving_average", "all_values".
inline const char* to_string(range_tracking t) noexcept {
  switch (t) {
    case range_tracking::last_value: return "last_value";
    case range_tracking::moving_average: return "moving_average";
    case range_tracking::all_values: return "all_values";
  }
  return "?";
}

/// "8-bit symmetric narrow per-channel(axis -1) tf_qdq last_value" style one-line
/// description, for summaries and errors.
inline std::string describe(const quantizer_config& c) {
  const bool torch = c.numerics == quant_numerics::torch_fake_quant;
  std::string s = detail::concat(c.num_bits, "-bit ", c.symmetric ? "symmetric " : "asymmetric ",
                                 c.narrow_range ? "narrow " : "wide ");
  s += c.per_channel ? detail::concat("per-channel(axis ", c.channel_axis, ")") : "per-tensor";
  s += detail::concat(" ", to_string(c.numerics), " ", to_string(c.tracking));
  if (c.tracking == range_tracking::moving_average)
    s += torch ? detail::concat("(c ", c.averaging_constant, ")")
               : detail::concat("(decay ", c.ema_decay, ")");
  if (torch && c.reduce_range) s += " reduce_range";
  return s;
}

/// The num_bits a numerics accepts: [2, 16] for FakeQuant (TF's own limit) and
/// PyTorch, [2, 61] for TF QDQ (TF takes (0, 62); one bit has no symmetric grid).
inline int max_num_bits(quant_numerics n) noexcept { return n == quant_numerics::tf_qdq ? 61 : 16; }

/// Throws argument_error (at `where`: the quantizer's path) when the options
/// cannot work together; says which option and what it accepts.
inline void validate(const quantizer_config& c, const std::string& where) {
  const auto given = [&](auto&&... what) { return detail::concat(what..., " (in ", describe(c), ")"); };
  if (c.num_bits < 2 || c.num_bits > max_num_bits(c.numerics))
    throw argument_error(where,
                         detail::concat("num_bits in [2, ", max_num_bits(c.numerics), "] for ",
                                        to_string(c.numerics)),
                         given("num_bits = ", c.num_bits));
  if (c.per_channel && c.numerics == quant_numerics::tf_fake_quant && c.channel_axis != -1)
    throw argument_error(where,
                         "channel_axis -1 for per-channel tf_fake_quant (TF's per-channel "
                         "FakeQuant ranges the last axis only)",
                         given("channel_axis = ", c.channel_axis));
  if (!(c.ema_decay >= 0.0 && c.ema_decay <= 1.0))
    throw argument_error(where, "ema_decay in [0, 1]", given("ema_decay = ", c.ema_decay));
  if (!(c.averaging_constant >= 0.0 && c.averaging_constant <= 1.0))
    throw argument_error(where, "averaging_constant in [0, 1]",
                         given("averaging_constant = ", c.averaging_constant));
  if (c.numerics != quant_numerics::torch_fake_quant) {
    if (!std::isfinite(c.init_min) || !std::isfinite(c.init_max) || c.init_min > c.init_max)
      throw argument_error(where, "finite init_min <= init_max",
                           given("init_min = ", c.init_min, ", init_max = ", c.init_max));
    if (c.numerics == quant_numerics::tf_fake_quant && c.init_min == c.init_max &&
        c.init_min != 0.0f)  // FakeQuant divides by max - min
      throw argument_error(where, "init_min < init_max, or both 0, for tf_fake_quant",
                           given("init_min = init_max = ", c.init_min));
  }
}

}  // namespace xq
