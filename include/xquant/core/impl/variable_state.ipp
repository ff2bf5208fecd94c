#pragma once
/// \file variable_state.ipp
/// variable_state's code (core/variable_state.hpp).

#include <utility>

#include "../variable_state.hpp"

namespace xq {

XQ_DECL void variable_state::accumulate_grad(tensor&& g) {
  if (g.shape() != value.shape())
    throw argument_error("xq::variable_state::accumulate_grad",
                         detail::concat("a gradient of shape ", detail::shape_string(value.shape())),
                         detail::shape_string(g.shape()));
  ++grad_updates_;
  if (!has_grad_) {
    grad = std::move(g);
    has_grad_ = true;
  } else {
    float* dst = grad.data();
    const float* src = g.data();
    for (std::size_t i = 0, n = grad.size(); i < n; ++i) dst[i] += src[i];
  }
}

}  // namespace xq
