#pragma once
/// \file var.hpp
/// `xq::var`: the value that flows through layers, with a slot for its gradient.

#include <memory>
#include <utility>

#include "../config.hpp"
#include "parameter.hpp"
#include "variable_state.hpp"

namespace xq {

/// A handle to a value and its gradient. Copies share one state (like a Python
/// reference), so a backward step recorded on the tape finds the same value the
/// forward step produced. A `var` made from a parameter aliases the parameter:
/// gradients flow into `parameter::grad`.
class var {
 public:
  var() = default;
  /// A leaf value. `requires_grad`: whether backward should compute its gradient
  /// (true for inputs of a gradient check; false for data).
  XQ_DECL explicit var(tensor value, bool requires_grad = false);
  /// A view of a parameter (shares its value and gradient).
  var(const parameter_ptr& p)  // NOLINT: implicit on purpose, layers pass weights as vars
      : state_(p, static_cast<variable_state*>(p.get())) {}
  explicit var(std::shared_ptr<variable_state> state) : state_(std::move(state)) {}

  bool defined() const noexcept { return static_cast<bool>(state_); }
  const tensor& value() const { return state_->value; }
  tensor& value() { return state_->value; }
  /// The gradient accumulated by backward; empty means zero.
  const tensor& grad() const { return state_->grad; }
  bool requires_grad() const noexcept { return state_ && state_->requires_grad; }
  const tensor::shape_type& shape() const { return state_->value.shape(); }
  std::size_t dimension() const { return state_->value.dimension(); }
  std::size_t size() const { return state_->value.size(); }

  /// The shared state (for backward closures and the tape).
  const std::shared_ptr<variable_state>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<variable_state> state_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/var.ipp"
#endif
