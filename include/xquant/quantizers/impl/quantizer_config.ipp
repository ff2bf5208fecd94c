#pragma once
/// \file quantizer_config.ipp
/// quantizer_config's names, description and validation (quantizers/quantizer_config.hpp).

#include <cmath>
#include <string>

#include "../../core/error.hpp"
#include "../quantizer_config.hpp"

namespace xq {

XQ_DECL const char* to_string(quant_numerics n) noexcept {
  switch (n) {
    case quant_numerics::tf_qdq: return "tf_qdq";
    case quant_numerics::tf_fake_quant: return "tf_fake_quant";
    case quant_numerics::torch_fake_quant: return "torch_fake_quant";
  }
  return "?";
}

XQ_DECL const char* to_string(range_tracking t) noexcept {
  switch (t) {
    case range_tracking::last_value: return "last_value";
    case range_tracking::moving_average: return "moving_average";
    case range_tracking::all_values: return "all_values";
  }
  return "?";
}

XQ_DECL std::string describe(const quantizer_config& c) {
  if (c.format) return describe(c.format);
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

XQ_DECL void validate(const quantizer_config& c, const std::string& where) {
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
