#pragma once
/// \file sgd.hpp
/// `xq::sgd`: stochastic gradient descent with momentum, Nesterov momentum and L2
/// weight decay, with PyTorch's update formulas and defaults (torch.optim.SGD):
///
///     g  = grad + weight_decay * w
///     b  = g                                   (first step with a gradient)
///     b  = momentum * b + (1 - dampening) * g  (later steps)
///     g  = nesterov ? g + momentum * b : b     (when momentum != 0)
///     w -= lr * g
///     w  = constraint(w)                       (if the parameter has one, as Keras)
///
/// Keras's SGD differs: it keeps v = momentum * v - lr * g (the learning rate
/// inside the buffer, so a changing rate acts differently), Nesterov is
/// w += momentum * v - lr * g, and its weight_decay is decoupled (w -= lr * wd * w).
/// With a constant rate and no weight decay the two give the same weights up to rounding.
///
/// Rounding follows PyTorch's vectorized CPU kernels: each `add(x, alpha=a)` is one
/// fused multiply-add, so the weights match PyTorch's bit for bit
/// (tests/data/golden/optimizers.json).
///
/// \code
///   xq::sgd opt(xq::trainable_parameters(model), {0.1f, 0.9f});   // lr, momentum
///   ... tape.backward(loss); opt.step(); opt.zero_grad();
/// \endcode

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/parameter.hpp"
#include "../core/tensor.hpp"
#include "detail/parameter_list.hpp"
#include "schedule.hpp"

namespace xq {

/// Options of `xq::sgd` (PyTorch's names and defaults; `dampening` too).
struct sgd_options {
  learning_rate_schedule learning_rate = 0.01f;
  double momentum = 0.0;
  bool nesterov = false;
  double weight_decay = 0.0;  ///< L2 added to the gradient (coupled, as in PyTorch)
  double dampening = 0.0;
};

/// One parameter's SGD state: the momentum buffer (torch's "momentum_buffer"),
/// absent until the parameter's first step with momentum.
struct sgd_state {
  tensor momentum_buffer;
  bool has_momentum_buffer = false;
};

/// Stochastic gradient descent (PyTorch's formulas, see the file comment).
class sgd {
 public:
  /// `params`: usually `xq::trainable_parameters(model)` (each parameter once).
  /// Throws argument_error naming an option that is NaN, infinite or out of range.
  explicit sgd(std::vector<parameter_ptr> params, sgd_options options = {});

  /// Updates every parameter that has a gradient; one without is left alone
  /// (its state too), as PyTorch skips parameters whose grad is None.
  /// A NaN or infinite gradient throws argument_error naming the parameter, before
  /// any weight or state changes.
  /// So does a schedule whose value for this step is NaN, infinite or out of range (naming the step).
  void step();

  /// Drops every parameter's gradient (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();

  /// The rate the next `step()` uses.
  float learning_rate() const { return options_.learning_rate(iterations_); }
  /// Number of `step()` calls so far (Keras's `optimizer.iterations`; schedules read it).
  std::size_t iterations() const noexcept { return iterations_; }
  /// Restores the step count (checkpoints).
  void set_iterations(std::size_t n) noexcept { iterations_ = n; }

  const std::vector<parameter_ptr>& parameters() const noexcept { return params_; }
  const sgd_options& options() const noexcept { return options_; }
  /// Per-parameter state, in the order of `parameters()` (for checkpoints).
  const std::vector<sgd_state>& state() const noexcept { return state_; }
  std::vector<sgd_state>& state() noexcept { return state_; }

 private:
  std::vector<parameter_ptr> params_;
  sgd_options options_;
  std::vector<sgd_state> state_;
  std::size_t iterations_ = 0;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/sgd.ipp"
#endif
