#pragma once
/// \file variable_state.hpp
/// What an `xq::var` points to: a value and the gradient flowing into it.

#include <cstdint>
#include <memory>
#include <utility>

#include "../config.hpp"
#include "tensor.hpp"
#include "error.hpp"

namespace xq {

/// An operation that can take a relu of its output into its own backward pass. The
/// operation (batch_norm in training) puts one on its output's state; `ops::relu`,
/// handed that output as an rvalue that nothing but the operation's backward step still
/// holds, applies the relu in place and calls `absorb_relu`: the operation's backward then
/// masks the incoming gradient as it reads it, instead of relu's backward reading x and
/// dy and writing a masked copy for the operation to read (three memory streams saved).
struct relu_absorber {
  virtual ~relu_absorber() = default;
  /// From now on the output holds relu(output); the gradient that arrives is relu's.
  virtual void absorb_relu() = 0;
};

/// A value and its gradient. The gradient is absent (`has_grad()` false, `grad`
/// unallocated) until some backward step adds to it: absent means zero, so nothing
/// is allocated for values no gradient reaches. (A default xarray is a 0-d tensor
/// of one element, not an empty one: hence the flag.)
struct variable_state {
  tensor value;
  tensor grad;
  bool requires_grad = false;
  /// The serial number of the tape that recorded the operation computing this value
  /// (0: a leaf, or computed with nothing recorded). `tape::backward` checks it, so a
  /// value from a tape that has ended is refused instead of giving no gradients.
  std::uint64_t recorded_on = 0;
  /// Set by the operation that computed this value when it can absorb a following relu
  /// (see relu_absorber); cleared once one is absorbed.
  std::shared_ptr<relu_absorber> absorbs_relu;

  variable_state() = default;
  explicit variable_state(tensor v, bool needs_grad = false)
      : value(std::move(v)), requires_grad(needs_grad) {}

  bool has_grad() const noexcept { return has_grad_; }
  /// How many gradient contributions this value has received since it was made (never
  /// reset): data-parallel training learns from it which backward step finishes a
  /// parameter's gradient, and checks that none arrived after it sent the gradient off.
  std::uint64_t grad_updates() const noexcept { return grad_updates_; }

  /// Adds `g` to the gradient (the first contribution is moved in, not added).
  /// Every path to this value contributes: a reused layer, a tied weight.
  void accumulate_grad(tensor&& g);
  void accumulate_grad(const tensor& g) { accumulate_grad(tensor(g)); }

  void zero_grad() noexcept {
    grad = tensor();
    has_grad_ = false;
  }

 private:
  bool has_grad_ = false;
  std::uint64_t grad_updates_ = 0;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/variable_state.ipp"
#endif
