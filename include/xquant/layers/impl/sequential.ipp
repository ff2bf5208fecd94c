#pragma once
/// \file sequential.ipp
/// layers/sequential.hpp's compiled code: compiled by every translation unit in header-only
/// mode, once in <xquant/src.hpp> in separate mode.

#include <string>
#include <unordered_map>
#include <vector>

#include "../sequential.hpp"

namespace xq::detail {

XQ_DECL std::vector<std::string> sequential_child_names(const std::vector<layer_ref>& children) {
  std::unordered_map<std::string, int> seen;
  std::vector<std::string> names;
  names.reserve(children.size());
  for (const layer_ref& child : children) {
    const std::string base = child.ops->name ? child.ops->name(child.object) : child.ops->type();
    const int n = seen[base]++;
    names.push_back(n == 0 ? base : base + "_" + std::to_string(n));
  }
  return names;
}

}  // namespace xq::detail
