#pragma once
/// \file zero_padding2d.ipp
/// zero_padding2d's out-of-line members (layers/zero_padding2d.hpp).

#include "../zero_padding2d.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(zero_padding2d)

}  // namespace xq
