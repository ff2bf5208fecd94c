#pragma once
/// \file parameter_list.ipp
/// The optimizers' shared checks (train/detail/parameter_list.hpp).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "../detail/parameter_list.hpp"

namespace xq::detail {

XQ_DECL void check_parameter_list(const std::vector<parameter_ptr>& params, const char* where) {
  if (params.empty())
    throw argument_error(where, "at least one parameter (xq::trainable_parameters(model) after the model is built)",
                         "an empty parameter list");
  std::unordered_set<const parameter*> seen;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!params[i])
      throw argument_error(where, "non-null parameters", concat("a null parameter at index ", i));
    if (!seen.insert(params[i].get()).second)
      throw argument_error(where, "each parameter once (use xq::trainable_parameters(model))",
                           concat("'", params[i]->name(), "' again at index ", i));
  }
}

XQ_DECL void check_state_shape(const char* where, const parameter& p, const tensor& state, const char* what) {
  if (state.shape() != p.value.shape())
    throw argument_error(where,
                         concat(what, " of shape ", shape_string(p.value.shape()), " for '", p.name(), "'"),
                         shape_string(state.shape()));
}

// True when some element is a NaN or an infinity: all exponent bits set. An OR over
// integer lanes vectorizes, where a float test would not; the index is looked for only
// after a hit.
inline bool has_non_finite_element(const float* x, std::size_t n) noexcept {
  std::uint32_t hit = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    hit |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return hit != 0;
}

XQ_DECL void check_finite_gradients(const std::vector<parameter_ptr>& params, const char* where) {
  for (const auto& p : params) {
    if (!p || !p->has_grad()) continue;
    const float* g = p->grad.data();
    const std::size_t n = p->grad.size();
    if (!has_non_finite_element(g, n)) continue;
    std::size_t i = 0;
    while (std::isfinite(g[i])) ++i;
    throw argument_error(where, concat("finite gradients (nothing was stepped; '", p->name(), "' and the optimizer are as before)"),
                         concat("gradient element ", i, " of '", p->name(), "' is ", g[i]));
  }
}

// "finite and >= 0", "in [0, 1]", "finite and in [0.5, 2]": the range as a user reads it.
inline std::string hyper_parameter_range(double low, double high) {
  if (std::isinf(high)) return concat("finite and >= ", low);
  return concat("in [", low, ", ", high, "]");
}

XQ_DECL void check_hyper_parameter(const char* where, const char* name, double value, double low, double high) {
  if (std::isfinite(value) && value >= low && value <= high) return;
  throw argument_error(where, concat(name, " ", hyper_parameter_range(low, high)), concat(name, " = ", value));
}

XQ_DECL float checked_schedule_value(const char* where, const char* name, const learning_rate_schedule& schedule,
                                     std::size_t step, double low, double high) {
  const float value = schedule(step);
  if (std::isfinite(value) && value >= low && value <= high) return value;
  throw argument_error(where,
                       concat(name, " ", hyper_parameter_range(low, high), " at every step (", where, " stepped nothing)"),
                       concat(name, " = ", value, " from its schedule at step ", step));
}

}  // namespace xq::detail
