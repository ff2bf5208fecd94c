#pragma once
/// \file var.ipp
/// core/var.hpp's compiled code: compiled by every translation unit in header-only mode,
/// once in <xquant/src.hpp> in separate mode.

#include <memory>
#include <utility>

#include "../var.hpp"

namespace xq {

XQ_DECL var::var(tensor value, bool requires_grad)
    : state_(std::make_shared<variable_state>(std::move(value), requires_grad)) {}

}  // namespace xq
