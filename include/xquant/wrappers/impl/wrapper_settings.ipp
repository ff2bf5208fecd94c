#pragma once
/// \file wrapper_settings.ipp
/// wrappers/wrapper_settings.hpp's compiled code: compiled by every translation unit in
/// header-only mode, once in <xquant/src.hpp> in separate mode.

#include "../wrapper_settings.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(wrapper_settings)

}  // namespace xq
