#pragma once
/// \file schedule.hpp
/// Learning-rate schedules: functions of the optimizer's step count (Keras's
/// `LearningRateSchedule`, called with `optimizer.iterations`, the number of
/// updates done before this one). Any `float(std::size_t)` callable is a schedule;
/// these are the common ones.
///
/// \code
///   xq::adam opt(params, {xq::cosine_decay{1e-3f, 10000}});
///   xq::sgd  sgd(params, {xq::linear_warmup(500, xq::step_decay{0.1f, 2000, 0.5f})});
/// \endcode

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "../config.hpp"
#include "../core/error.hpp"

namespace xq {

/// The same rate at every step.
struct constant_schedule {
  float value = 1e-3f;
  float operator()(std::size_t /*step*/) const noexcept { return value; }
};

/// `initial * gamma^floor(step / step_size)` (PyTorch's StepLR, counted in steps;
/// Keras's ExponentialDecay with staircase=True).
struct step_decay {
  float initial = 0.1f;
  std::size_t step_size = 1000;
  float gamma = 0.1f;

  float operator()(std::size_t step) const;
};

/// Keras's CosineDecay (without its warmup; see `linear_warmup`):
/// `initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)`.
/// After `decay_steps` the rate stays at `initial * alpha`.
struct cosine_decay {
  float initial = 1e-3f;
  std::size_t decay_steps = 1000;
  float alpha = 0.0f;

  float operator()(std::size_t step) const;
};

/// Linear warmup in front of another schedule (Keras CosineDecay's `warmup_steps`,
/// generalised): for `step < steps` the rate goes linearly from `start` to
/// `after(0)`; from then on it is `after(step - steps)`, so the wrapped schedule
/// starts where the warmup ends.
template <class Schedule>
struct warmup_schedule {
  std::size_t steps;
  Schedule after;
  float start = 0.0f;

  float operator()(std::size_t step) const {
    if (step >= steps) return static_cast<float>(after(step - steps));
    const double target = after(0);
    const double fraction = static_cast<double>(step) / static_cast<double>(steps);
    return static_cast<float>((target - start) * fraction + start);
  }
};

/// `warmup_schedule` with its type deduced: `xq::linear_warmup(500, xq::cosine_decay{1e-3f, 10000})`.
template <class Schedule>
warmup_schedule<std::decay_t<Schedule>> linear_warmup(std::size_t steps, Schedule&& after, float start = 0.0f) {
  return {steps, std::forward<Schedule>(after), start};
}

/// An optimizer's learning rate: a constant or a schedule of the step count.
/// Converts implicitly from a number and from any `float(std::size_t)` callable,
/// so options read `{0.01f}` or `{xq::cosine_decay{...}}`.
class learning_rate_schedule {
 public:
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  learning_rate_schedule(T constant)  // NOLINT: implicit on purpose
      : constant_(static_cast<float>(constant)) {}

  template <class F, std::enable_if_t<!std::is_arithmetic_v<std::decay_t<F>> &&
                                          !std::is_same_v<std::decay_t<F>, learning_rate_schedule> &&
                                          std::is_invocable_r_v<float, const std::decay_t<F>&, std::size_t>,
                                      int> = 0>
  learning_rate_schedule(F&& schedule)  // NOLINT: implicit on purpose
      : schedule_(std::forward<F>(schedule)) {}

  /// The rate for the update that follows `step` earlier updates.
  float operator()(std::size_t step) const { return schedule_ ? schedule_(step) : constant_; }
  bool is_constant() const noexcept { return !schedule_; }

 private:
  float constant_ = 0.0f;
  std::function<float(std::size_t)> schedule_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/schedule.ipp"
#endif
