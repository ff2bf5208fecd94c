#pragma once
/// \file sgd.ipp
/// SGD's code (train/sgd.hpp).

#include <cmath>
#include <utility>
#include <vector>

#include "../sgd.hpp"

namespace xq {

XQ_DECL sgd::sgd(std::vector<parameter_ptr> params, sgd_options options)
    : params_(std::move(params)), options_(std::move(options)), state_(params_.size()) {
  detail::check_parameter_list(params_, "xq::sgd");
  // NaN passes a test written `x < 0`; each option is checked finite and in range.
  if (options_.learning_rate.is_constant())
    detail::check_hyper_parameter("xq::sgd", "learning_rate", options_.learning_rate(0));
  detail::check_hyper_parameter("xq::sgd", "momentum", options_.momentum);
  detail::check_hyper_parameter("xq::sgd", "weight_decay", options_.weight_decay);
  // PyTorch checks no range; outside [0, 1] the buffer adds a negative or amplified share.
  detail::check_hyper_parameter("xq::sgd", "dampening", options_.dampening, 0.0, 1.0);
  if (options_.nesterov && (options_.momentum <= 0.0 || options_.dampening != 0.0))
    throw argument_error("xq::sgd", "momentum > 0 and dampening 0 with nesterov",
                         detail::concat("momentum ", options_.momentum, ", dampening ", options_.dampening));
}

XQ_DECL void sgd::step() {
  detail::check_finite_gradients(params_, "xq::sgd");
  const float lr = detail::checked_schedule_value("xq::sgd", "learning_rate", options_.learning_rate, iterations_);
  const auto momentum = static_cast<float>(options_.momentum);
  const auto decay = static_cast<float>(options_.weight_decay);
  const auto keep = static_cast<float>(1.0 - options_.dampening);
  const float neg_lr = -lr;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    parameter& p = *params_[i];
    if (!p.has_grad()) continue;
    float* w = p.value.data();
    const float* grad = p.grad.data();
    const std::size_t n = p.value.size();
    if (options_.momentum == 0.0) {
      for (std::size_t j = 0; j < n; ++j) {
        float g = grad[j];
        if (decay != 0.0f) g = std::fma(w[j], decay, g);
        w[j] = std::fma(g, neg_lr, w[j]);
      }
      p.apply_constraint();
      continue;
    }
    sgd_state& s = state_[i];
    const bool first = !s.has_momentum_buffer;
    if (first) {
      s.momentum_buffer = tensor::from_shape(p.value.shape());
      s.has_momentum_buffer = true;
    } else {
      detail::check_state_shape("xq::sgd", p, s.momentum_buffer, "a momentum buffer");
    }
    float* b = s.momentum_buffer.data();
    for (std::size_t j = 0; j < n; ++j) {
      float g = grad[j];
      if (decay != 0.0f) g = std::fma(w[j], decay, g);
      b[j] = first ? g : std::fma(g, keep, b[j] * momentum);
      g = options_.nesterov ? std::fma(b[j], momentum, g) : b[j];
      w[j] = std::fma(g, neg_lr, w[j]);
    }
    p.apply_constraint();
  }
  ++iterations_;
}

XQ_DECL void sgd::zero_grad() {
  for (auto& p : params_) p->zero_grad();
}

}  // namespace xq
