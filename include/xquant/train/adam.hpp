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

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

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
  explicit adam(std::vector<parameter_ptr> params, adam_options options = {})
      : adam(std::move(params), std::move(options), false, "xq::adam") {}

  /// Updates every parameter that has a gradient; one without is left alone, its
  /// step count too (as PyTorch skips parameters whose grad is None).
  void step() {
    const double lr = learning_rate();
    const double beta1 = options_.beta1, beta2 = options_.beta2;
    const auto w_avg = static_cast<float>(1.0 - beta1);  // lerp weight
    const auto f_beta2 = static_cast<float>(beta2);
    const auto one_minus_beta2 = static_cast<float>(1.0 - beta2);
    const auto eps = static_cast<float>(options_.epsilon);
    const auto l2 = static_cast<float>(options_.weight_decay);
    const auto decay_scale = static_cast<float>(1.0 - lr * options_.weight_decay);
    const bool decay = options_.weight_decay != 0.0;

    for (std::size_t i = 0; i < params_.size(); ++i) {
      parameter& p = *params_[i];
      if (!p.has_grad()) continue;
      adam_state& s = state_[i];
      if (s.step == 0) {
        s.exp_avg = xt::zeros<float>(p.value.shape());
        s.exp_avg_sq = xt::zeros<float>(p.value.shape());
        if (options_.amsgrad) s.max_exp_avg_sq = xt::zeros<float>(p.value.shape());
      } else {
        detail::check_state_shape(where_, p, s.exp_avg, "exp_avg");
        detail::check_state_shape(where_, p, s.exp_avg_sq, "exp_avg_sq");
        if (options_.amsgrad) detail::check_state_shape(where_, p, s.max_exp_avg_sq, "max_exp_avg_sq");
      }
      ++s.step;
      const double t = static_cast<double>(s.step);
      const double step_size = lr / (1.0 - std::pow(beta1, t));
      const double bias_correction2_sqrt = std::pow(1.0 - std::pow(beta2, t), 0.5);
      const auto neg_step_size = static_cast<float>(-step_size);
      const auto f_bc2_sqrt = static_cast<float>(bias_correction2_sqrt);

      float* w = p.value.data();
      const float* grad = p.grad.data();
      float* m = s.exp_avg.data();
      float* v = s.exp_avg_sq.data();
      float* v_max = options_.amsgrad ? s.max_exp_avg_sq.data() : nullptr;
      for (std::size_t j = 0, n = p.value.size(); j < n; ++j) {
        float g = grad[j];
        if (decay) {
          if (decoupled_) w[j] = w[j] * decay_scale;
          else g = std::fma(w[j], l2, g);
        }
        m[j] = lerp(m[j], g, w_avg);
        v[j] = v[j] * f_beta2 + one_minus_beta2 * g * g;
        float second = v[j];
        if (v_max) second = v_max[j] = std::max(v_max[j], v[j]);
        const float denom = std::sqrt(second) / f_bc2_sqrt + eps;
        w[j] = w[j] + neg_step_size * m[j] / denom;
      }
      // Keras applies `var.constraint` after each update (Larq's WeightClip on latent weights).
      p.apply_constraint();
    }
    ++iterations_;
  }

  /// Drops every parameter's gradient (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad() {
    for (auto& p : params_) p->zero_grad();
  }

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
  adam(std::vector<parameter_ptr> params, adam_options options, bool decoupled, const char* where)
      : params_(std::move(params)), options_(std::move(options)), state_(params_.size()),
        decoupled_(decoupled), where_(where) {
    detail::check_parameter_list(params_, where_);
    if (options_.learning_rate.is_constant() && options_.learning_rate(0) < 0.0f)
      throw argument_error(where_, "learning_rate >= 0", detail::concat(options_.learning_rate(0)));
    if (!(options_.beta1 >= 0.0 && options_.beta1 < 1.0))
      throw argument_error(where_, "beta1 in [0, 1)", detail::concat(options_.beta1));
    if (!(options_.beta2 >= 0.0 && options_.beta2 < 1.0))
      throw argument_error(where_, "beta2 in [0, 1)", detail::concat(options_.beta2));
    if (!(options_.epsilon >= 0.0))
      throw argument_error(where_, "epsilon >= 0", detail::concat(options_.epsilon));
    if (!(options_.weight_decay >= 0.0))
      throw argument_error(where_, "weight_decay >= 0", detail::concat(options_.weight_decay));
  }

 private:
  // ATen's vectorized lerp: one of two fused forms, chosen by the weight, so both ends are exact.
  static float lerp(float self, float end, float weight) noexcept {
    return std::abs(weight) < 0.5f ? std::fma(weight, end - self, self) : std::fma(weight - 1.0f, end - self, end);
  }

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
  explicit adamw(std::vector<parameter_ptr> params, adamw_options options = {})
      : adam(std::move(params), to_adam(std::move(options)), true, "xq::adamw") {}

 private:
  static adam_options to_adam(adamw_options o) {
    return {std::move(o.learning_rate), o.beta1, o.beta2, o.epsilon, o.weight_decay, o.amsgrad};
  }
};

}  // namespace xq
