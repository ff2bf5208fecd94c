#pragma once
/// \file parameter_list.ipp
/// The optimizers' shared checks (train/detail/parameter_list.hpp).

#include <cstddef>
#include <unordered_set>
#include <vector>

#include "../detail/parameter_list.hpp"

namespace xq::detail {

XQ_DECL void check_parameter_list(const std::vector<parameter_ptr>& params, const char* where) {
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

}  // namespace xq::detail
