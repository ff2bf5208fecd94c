#pragma once
/// \file parameter_list.hpp
/// Checks shared by the optimizers (private).

#include <vector>

#include "../../config.hpp"
#include "../../core/error.hpp"
#include "../../core/parameter.hpp"
#include "../../core/tensor.hpp"

namespace xq::detail {

/// Rejects null and repeated parameters: a shared weight must be stepped once.
XQ_DECL void check_parameter_list(const std::vector<parameter_ptr>& params, const char* where);

/// Throws unless a state tensor (restored from a checkpoint, say) fits its parameter.
XQ_DECL void check_state_shape(const char* where, const parameter& p, const tensor& state, const char* what);

}  // namespace xq::detail

#if !defined(XQ_SEPARATE_COMPILATION)
#include "../impl/parameter_list.ipp"
#endif
