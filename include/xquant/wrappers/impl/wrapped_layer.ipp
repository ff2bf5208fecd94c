#pragma once
/// \file wrapped_layer.ipp
/// wrappers/wrapped_layer.hpp's compiled code: compiled by every translation unit in
/// header-only mode, once in <xquant/src.hpp> in separate mode.

#include "../wrapped_layer.hpp"

namespace xq::detail {

XQ_DEFINE_SPECIAL_MEMBERS(weight_constraints)

}  // namespace xq::detail
