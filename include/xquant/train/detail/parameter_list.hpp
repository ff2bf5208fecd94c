#pragma once
/// \file parameter_list.hpp
/// Checks shared by the optimizers (private).

#include <cstddef>
#include <unordered_set>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/parameter.hpp"
#include "../../core/tensor.hpp"

namespace xq::detail {

/// Rejects null and repeated parameters: a shared weight must be stepped once.
inline void check_parameter_list(const std::vector<parameter_ptr>& params, const char* where) {
  std::unordered_set<const parameter*> seen;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!params[i])
      throw argument_error(where, "non-null parameters", concat("a null parameter at index ", i));
    if (!seen.insert(params[i].get()).second)
      throw argument_error(where, "each parameter once (use xq::trainable_parameters(model))",
                           concat("'", params[i]->name(), "' again at index ", i));
  }
}

/// Throws unless a state tensor (restored from a checkpoint, say) fits its parameter.
inline void check_state_shape(const char* where, const parameter& p, const tensor& state, const char* what) {
  if (state.shape() != p.value.shape())
    throw argument_error(where,
                         concat(what, " of shape ", shape_string(p.value.shape()), " for '", p.name(), "'"),
                         shape_string(state.shape()));
}

}  // namespace xq::detail
