#pragma once
/// \file variable_state.hpp
/// What an `xq::var` points to: a value and the gradient flowing into it.

#include <utility>

#include "tensor.hpp"
#include "error.hpp"

namespace xq {

/// A value and its gradient. The gradient is absent (`has_grad()` false, `grad`
/// unallocated) until some backward step adds to it: absent means zero, so nothing
/// is allocated for values no gradient reaches. (A default xarray is a 0-d tensor
/// of one element, not an empty one: hence the flag.)
struct variable_state {
  tensor value;
  tensor grad;
  bool requires_grad = false;

  variable_state() = default;
  explicit variable_state(tensor v, bool needs_grad = false)
      : value(std::move(v)), requires_grad(needs_grad) {}

  bool has_grad() const noexcept { return has_grad_; }

  /// Adds `g` to the gradient (the first contribution is moved in, not added).
  /// Every path to this value contributes: a reused layer, a tied weight.
  void accumulate_grad(tensor&& g) {
    if (g.shape() != value.shape())
      throw argument_error("xq::variable_state::accumulate_grad",
                           detail::concat("a gradient of shape ", detail::shape_string(value.shape())),
                           detail::shape_string(g.shape()));
    if (!has_grad_) {
      grad = std::move(g);
      has_grad_ = true;
    } else {
      float* dst = grad.data();
      const float* src = g.data();
      for (std::size_t i = 0, n = grad.size(); i < n; ++i) dst[i] += src[i];
    }
  }
  void accumulate_grad(const tensor& g) { accumulate_grad(tensor(g)); }

  void zero_grad() noexcept {
    grad = tensor();
    has_grad_ = false;
  }

 private:
  bool has_grad_ = false;
};

}  // namespace xq
