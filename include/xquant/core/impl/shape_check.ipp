#pragma once
/// \file shape_check.ipp
/// The shape checks' code (core/shape_check.hpp).

#include <string>
#include <vector>

#include "../shape_check.hpp"

namespace xq::detail {

XQ_DECL std::string describe(const std::vector<axis_spec>& axes) {
  std::string s = "(";
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (i) s += ", ";
    s += axes[i].size < 0 ? std::string(1, axes[i].letter) : std::to_string(axes[i].size);
  }
  return s + (axes.size() == 1 ? ",)" : ")");
}

}  // namespace xq::detail
