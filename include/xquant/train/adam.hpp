#pragma once
/// \file adam.hpp
/// `xq::adam` and `xq::adamw`, with PyTorch's update formulas and defaults
/// (torch.optim.Adam / AdamW, the single-tensor CPU path), per parameter:
///
///     t += 1                                   (each parameter counts its own steps)
///     g  = grad + weight_decay * w             (Adam: L2 in the gradient)
///     w *= 1 - lr * weight_decay               (AdamW instead: decoupled decay)
///     m  = lerp(m, g, 1 - beta1)               (= beta1 * m + (1 - beta1) * g)
///     v  = beta2 * v + (1 - beta2) * g * g
///     w -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + epsilon)
///     w  = constraint(w)                       (if the parameter has one, as Keras)
///
/// (amsgrad: v in the denominator is the running maximum of v.) Scalars are
/// combined in double and applied in float, in PyTorch's order and with the fused
/// multiply-adds of ATen's vectorized CPU kernels, so m and v match PyTorch's bit
/// for bit. The weights agree to an ulp or so, not always exactly: PyTorch's CPU
/// sqrt (MKL's vector math) is not always correctly rounded
/// (tests/data/golden/optimizers.json).
///
/// Keras differs in two ways: its epsilon defaults to 1e-7 and is added to sqrt(v)
/// before the bias correction (w -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m /
/// (sqrt(v) + epsilon)), and its step count is the optimizer's, not the
/// parameter's. Keras AdamW decays with the same decoupled w -= lr * wd * w
/// (default weight_decay 0.004 there, 0.01 here as in PyTorch).

#include <cmath>
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

/// Options of `xq::adam` (PyTorch's names and defaults).
struct adam_options {
  learning_rate_schedule learning_rate = 1e-3f;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0.0;  ///< L2 added to the gradient (coupled)
  bool amsgrad = false;
};

/// Options of `xq::adamw` (PyTorch's defaults: weight_decay 0.01, decoupled).
struct adamw_options {
  learning_rate_schedule learning_rate = 1e-3f;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0.01;  ///< w *= 1 - lr * weight_decay before the Adam step
  bool amsgrad = false;
};

/// One parameter's Adam state (torch's "step", "exp_avg", "exp_avg_sq",
/// "max_exp_avg_sq"); the tensors exist once `step > 0` (the last one with amsgrad).
struct adam_state {
  std::size_t step = 0;
  tensor exp_avg;
  tensor exp_avg_sq;
  tensor max_exp_avg_sq;
};

/// Adam (PyTorch's formulas, see the file comment); the base of `xq::adamw`.
class adam {
 public:
  /// `params`: usually `xq::trainable_parameters(model)` (each parameter once).
  /// Throws argument_error naming an option that is NaN, infinite or out of range.
  explicit adam(std::vector<parameter_ptr> params, adam_options options = {});

  /// Updates every parameter that has a gradient; one without is left alone, its
  /// step count too (as PyTorch skips parameters whose grad is None).
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
  const adam_options& options() const noexcept { return options_; }
  /// Whether weight decay is decoupled (AdamW).
  bool decoupled_weight_decay() const noexcept { return decoupled_; }
  /// Per-parameter state, in the order of `parameters()` (for checkpoints).
  const std::vector<adam_state>& state() const noexcept { return state_; }
  std::vector<adam_state>& state() noexcept { return state_; }

 protected:
  adam(std::vector<parameter_ptr> params, adam_options options, bool decoupled, const char* where);

 private:
  std::vector<parameter_ptr> params_;
  adam_options options_;
  std::vector<adam_state> state_;
  bool decoupled_;
  const char* where_;
  std::size_t iterations_ = 0;
};

/// AdamW: Adam with decoupled weight decay (PyTorch's AdamW; see the file comment).
class adamw : public adam {
 public:
  explicit adamw(std::vector<parameter_ptr> params, adamw_options options = {});

 private:
  static adam_options to_adam(adamw_options o);
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/adam.ipp"
#endif
