#pragma once
/// \file layer_ref.ipp
/// core/layer_ref.hpp's compiled code: compiled by every translation unit in header-only
/// mode, once in <xquant/src.hpp> in separate mode.

#include <string>

#include "../layer_ref.hpp"

namespace xq::detail {

XQ_DECL void set_child_paths(layer_ref l, const std::string& prefix) {
  for_each_child_ref(l, [&](layer_ref child, const std::string& name) {
    if (child.ops->set_path) child.ops->set_path(child.object, prefix + "/" + name);
  });
}

}  // namespace xq::detail
