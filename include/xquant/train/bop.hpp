#pragma once
/// \file bop.hpp
/// `xq::bop`: the Binary Optimizer (Helwegen et al., "Latent Weights Do Not Exist",
/// NeurIPS 2019), Larq's `lq.optimizers.Bop`, number for number. Bop keeps no latent
/// weights: it flips a binary weight when an exponential moving average of its
/// gradient is strong enough and points the way the weight already points. Per
/// parameter, with `m` starting at zero:
///
///     m = m + gamma * (grad - m)                               (Larq: m.assign_add)
///     w = larq_sign(-tf_sign(w * m - threshold) * w)
///
/// where tf_sign(0) = 0 and larq_sign(0) = +1. So a ±1 weight flips exactly when
/// w * m > threshold (|m| > threshold and sign(m) == sign(w)), keeps its value when
/// w * m < threshold, and becomes +1 when w * m == threshold. Every operation rounds to
/// float32 on its own, in TF's order (one multiply, one add, never fused: the library's
/// -ffp-contract=off), so m and w match Larq's bit for bit, NaN and infinities included
/// (tests/data/golden/larq_bop.json, tools/gen_golden_larq_bop.py).
///
/// Like Larq, Bop is meant for the binary weights only; `xq::case_optimizer` with
/// `xq::binary_parameters(model)` gives it those and another optimizer the rest:
///
/// \code
///   xq::case_optimizer opt(xq::bop(xq::binary_parameters(model), {1e-6f, 1e-3f}),  // threshold, gamma
///                          xq::adam(xq::non_binary_parameters(model), {0.01f}));
/// \endcode
///
/// `gamma` and `threshold` are constants or schedules of the step count (Larq accepts
/// a Keras `LearningRateSchedule` for both, called with `optimizer.iterations`, the
/// updates done before this one), as an optimizer's learning rate here (schedule.hpp).

#include <cstddef>
#include <limits>
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

/// Options of `xq::bop` (Larq's names and defaults). Each is a number or a
/// `float(std::size_t step)` schedule (the type is the optimizers' learning-rate one).
struct bop_options {
  learning_rate_schedule threshold = 1e-8f;  ///< how strong the averaged gradient must be to flip a weight
  learning_rate_schedule gamma = 1e-4f;      ///< the moving average's adaptivity rate
};

/// One parameter's Bop state: Larq's slot "m" (the gradients' moving average),
/// present once the parameter had its first update (`step > 0`).
struct bop_state {
  std::size_t step = 0;  ///< updates this parameter received
  tensor m;
};

namespace detail {
/// tf.sign: -1, 0 or +1; NaN stays NaN (unlike larq::sign, 0 gives 0).
inline float tf_sign(float x) noexcept {
  return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : std::numeric_limits<float>::quiet_NaN());
}
}  // namespace detail

/// Larq's Bop (see the file comment).
class bop {
 public:
  /// `params`: usually `xq::binary_parameters(model)` (each parameter once).
  /// Throws argument_error naming an option that is NaN, infinite or out of range.
  explicit bop(std::vector<parameter_ptr> params, bop_options options = {});

  /// Updates every parameter that has a gradient, then applies its constraint; one
  /// without is left alone, its m too (Keras applies gradients only to variables
  /// that have one). The step count advances either way.
  /// A NaN or infinite gradient throws argument_error naming the parameter, before
  /// any weight or state changes.
  /// So does a schedule whose value for this step is NaN, infinite or out of range (naming the step).
  void step();

  /// Drops every parameter's gradient.
  void zero_grad();

  /// The gamma the next `step()` uses.
  float gamma() const { return options_.gamma(iterations_); }
  /// The threshold the next `step()` uses.
  float threshold() const { return options_.threshold(iterations_); }
  /// Number of `step()` calls so far (Keras's `optimizer.iterations`; schedules read it).
  std::size_t iterations() const noexcept { return iterations_; }
  /// Restores the step count (checkpoints).
  void set_iterations(std::size_t n) noexcept { iterations_ = n; }

  const std::vector<parameter_ptr>& parameters() const noexcept { return params_; }
  const bop_options& options() const noexcept { return options_; }
  /// Per-parameter state, in the order of `parameters()` (for checkpoints).
  const std::vector<bop_state>& state() const noexcept { return state_; }
  std::vector<bop_state>& state() noexcept { return state_; }

 private:
  std::vector<parameter_ptr> params_;
  bop_options options_;
  std::vector<bop_state> state_;
  std::size_t iterations_ = 0;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/bop.ipp"
#endif
