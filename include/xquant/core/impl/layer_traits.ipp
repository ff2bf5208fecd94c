#pragma once
/// \file layer_traits.ipp
/// to_string(layer_role)'s code (core/layer_traits.hpp).

#include "../layer_traits.hpp"

namespace xq {

XQ_DECL const char* to_string(layer_role r) noexcept {
  switch (r) {
    case layer_role::conv: return "conv";
    case layer_role::linear: return "linear";
    case layer_role::norm: return "norm";
    case layer_role::activation: return "activation";
    case layer_role::merge: return "merge";
    case layer_role::pool: return "pool";
    case layer_role::quantizer: return "quantizer";
    case layer_role::other: return "other";
  }
  return "?";
}

}  // namespace xq
