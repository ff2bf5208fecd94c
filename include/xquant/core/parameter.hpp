#pragma once
/// \file parameter.hpp
/// A layer's weight: a named, shareable value with a gradient.

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "../config.hpp"
#include "variable_state.hpp"

namespace xq {

/// A trainable weight (or non-trainable state such as batch-norm moving
/// statistics). Held by `std::shared_ptr`, so two layers can use one weight and
/// the optimizer still steps it once with the sum of both uses' gradients.
class parameter : public variable_state {
 public:
  /// `short_name` is the name inside its layer ("kernel", "bias", "moving_mean").
  parameter(std::string short_name, tensor initial_value, bool is_trainable = true)
      : variable_state(std::move(initial_value), is_trainable),
        short_name_(std::move(short_name)), name_(short_name_), trainable_(is_trainable) {}

  /// Full path name, e.g. "block_1/conv/kernel" (set by `xq::set_paths`).
  const std::string& name() const noexcept { return name_; }
  /// Name inside the owning layer, e.g. "kernel".
  const std::string& short_name() const noexcept { return short_name_; }
  /// Updates the full name after the owning layer's path changed.
  void set_owner_path(const std::string& layer_path);

  /// Optimizers step only trainable parameters; gradients reach only them.
  bool trainable() const noexcept { return trainable_; }
  void set_trainable(bool on) noexcept {
    trainable_ = on;
    requires_grad = on;
  }

  /// A projection applied to the value after every optimizer update (Keras's
  /// `kernel_constraint`, e.g. Larq's weight clipping of latent binary weights).
  /// Empty: none. Every optimizer calls `apply_constraint()` after it steps the value.
  using constraint_function = std::function<void(tensor& value)>;
  void set_constraint(constraint_function c) { constraint_ = std::move(c); }
  const constraint_function& constraint() const noexcept { return constraint_; }
  void apply_constraint() {
    if (constraint_) constraint_(value);
  }

 private:
  std::string short_name_, name_;
  bool trainable_;
  constraint_function constraint_;
};

using parameter_ptr = std::shared_ptr<parameter>;

/// Makes a parameter (trainable unless told otherwise).
inline parameter_ptr make_parameter(std::string short_name, tensor value, bool trainable = true) {
  return std::make_shared<parameter>(std::move(short_name), std::move(value), trainable);
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/parameter.ipp"
#endif
