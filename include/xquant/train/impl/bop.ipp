#pragma once
/// \file bop.ipp
/// Bop's code (train/bop.hpp).

#include <utility>
#include <vector>

#include "../../numerics/larq_math.hpp"
#include "../bop.hpp"

namespace xq {

XQ_DECL bop::bop(std::vector<parameter_ptr> params, bop_options options)
    : params_(std::move(params)), options_(std::move(options)), state_(params_.size()) {
  detail::check_parameter_list(params_, "xq::bop");
  // Larq checks nothing; a negative or non-finite constant is a typo, not a choice.
  if (options_.threshold.is_constant()) detail::check_hyper_parameter("xq::bop", "threshold", options_.threshold(0));
  if (options_.gamma.is_constant()) detail::check_hyper_parameter("xq::bop", "gamma", options_.gamma(0), 0.0, 1.0);
}

XQ_DECL void bop::step() {
  detail::check_finite_gradients(params_, "xq::bop");
  // A schedule's values are checked at each step, before anything moves.
  const float gamma = detail::checked_schedule_value("xq::bop", "gamma", options_.gamma, iterations_, 0.0, 1.0);
  const float threshold = detail::checked_schedule_value("xq::bop", "threshold", options_.threshold, iterations_);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    parameter& p = *params_[i];
    if (!p.has_grad()) continue;
    bop_state& s = state_[i];
    if (s.step == 0) s.m = xt::zeros<float>(p.value.shape());  // Larq's slots start at zero
    else detail::check_state_shape("xq::bop", p, s.m, "m");
    ++s.step;
    float* w = p.value.data();
    const float* g = p.grad.data();
    float* m = s.m.data();
    for (std::size_t j = 0, n = p.value.size(); j < n; ++j) {
      // m.assign_add(gamma * (grad - m)): sub, mul, add, each rounded.
      const float delta = gamma * (g[j] - m[j]);
      m[j] = m[j] + delta;
      // lq.math.sign(-tf.sign(var * m_t - threshold) * var)
      const float s_j = detail::tf_sign(w[j] * m[j] - threshold);
      w[j] = larq::sign(-s_j * w[j]);
    }
    p.apply_constraint();
  }
  ++iterations_;
}

XQ_DECL void bop::zero_grad() {
  for (auto& p : params_) p->zero_grad();
}

}  // namespace xq
