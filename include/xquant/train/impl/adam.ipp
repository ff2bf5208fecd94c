#pragma once
/// \file adam.ipp
/// Adam's and AdamW's code (train/adam.hpp).

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "../adam.hpp"
#include "../../kernels/math.hpp"
#include "../../kernels/parallel.hpp"

namespace xq {

namespace detail {

enum class weight_decay_kind { none, l2, decoupled };

/// The per-step numbers of one parameter's update (adam::step computes them).
struct adam_constants {
  float w_avg, beta2, one_minus_beta2, eps, l2, decay_scale, neg_step_size, bc2_sqrt;
  /// ATen's vectorized lerp (m = lerp(m, g, w_avg)) takes one of two fused forms, chosen
  /// by the weight so that both ends are exact: fma(w, g - m, m) when |w| < 0.5.
  bool lerp_from_self;
};

/// Adam's update of elements [begin, end), written once over a value type V (float, or an
/// xsimd batch: the same IEEE operations in the same order, so the same bits). As a plain
/// loop it was not vectorized: std::sqrt may set errno, so GCC keeps a call per element.
template <weight_decay_kind Decay, bool Amsgrad>
void adam_update_run(const adam_constants& k, float* w, const float* grad, float* m, float* v, float* v_max,
                     std::size_t begin, std::size_t end) {
  const auto element = [&k](auto& wj, auto g, auto& mj, auto& vj, auto* v_max_j) {
    using V = std::decay_t<decltype(g)>;
    using std::sqrt;  // float; xsimd::sqrt by argument-dependent lookup for batches
    if constexpr (Decay == weight_decay_kind::decoupled) wj = wj * V(k.decay_scale);
    if constexpr (Decay == weight_decay_kind::l2) g = math::fma(wj, V(k.l2), g);
    const V weight(k.w_avg), diff = g - mj;
    mj = k.lerp_from_self ? math::fma(weight, diff, mj) : math::fma(weight - V(1.0f), diff, g);
    vj = vj * V(k.beta2) + V(k.one_minus_beta2) * g * g;
    V second = vj;
    if constexpr (Amsgrad) second = *v_max_j = math::max(*v_max_j, vj);
    (void)v_max_j;
    const V denom = sqrt(second) / V(k.bc2_sqrt) + V(k.eps);
    wj = wj + V(k.neg_step_size) * mj / denom;
  };
  using batch = xsimd::batch<float>;
  constexpr std::size_t lanes = batch::size;
  std::size_t j = begin;
  for (; j + lanes <= end; j += lanes) {
    batch wj = batch::load_unaligned(w + j), mj = batch::load_unaligned(m + j), vj = batch::load_unaligned(v + j);
    batch mx = Amsgrad ? batch::load_unaligned(v_max + j) : batch(0.0f);
    element(wj, batch::load_unaligned(grad + j), mj, vj, &mx);
    wj.store_unaligned(w + j);
    mj.store_unaligned(m + j);
    vj.store_unaligned(v + j);
    if (Amsgrad) mx.store_unaligned(v_max + j);
  }
  for (; j < end; ++j) element(w[j], grad[j], m[j], v[j], Amsgrad ? v_max + j : nullptr);
}

/// Adam's update of n elements: vectorized, and split over the threads when large
/// (elementwise: the bits never depend on the split).
inline void adam_update(weight_decay_kind decay, bool amsgrad, const adam_constants& k, float* w, const float* grad,
                        float* m, float* v, float* v_max, std::size_t n) {
  kernels::parallel_for(n, 64, [&](std::size_t b, std::size_t e) {
    switch (decay) {
      case weight_decay_kind::none:
        return amsgrad ? adam_update_run<weight_decay_kind::none, true>(k, w, grad, m, v, v_max, b, e)
                       : adam_update_run<weight_decay_kind::none, false>(k, w, grad, m, v, v_max, b, e);
      case weight_decay_kind::l2:
        return amsgrad ? adam_update_run<weight_decay_kind::l2, true>(k, w, grad, m, v, v_max, b, e)
                       : adam_update_run<weight_decay_kind::l2, false>(k, w, grad, m, v, v_max, b, e);
      case weight_decay_kind::decoupled:
        return amsgrad ? adam_update_run<weight_decay_kind::decoupled, true>(k, w, grad, m, v, v_max, b, e)
                       : adam_update_run<weight_decay_kind::decoupled, false>(k, w, grad, m, v, v_max, b, e);
    }
  });
}

}  // namespace detail

XQ_DECL adam::adam(std::vector<parameter_ptr> params, adam_options options)
    : adam(std::move(params), std::move(options), false, "xq::adam") {}

XQ_DECL adam::adam(std::vector<parameter_ptr> params, adam_options options, bool decoupled, const char* where)
    : params_(std::move(params)), options_(std::move(options)), state_(params_.size()),
      decoupled_(decoupled), where_(where) {
  detail::check_parameter_list(params_, where_);
  // NaN passes a test written `x < 0`; each option is checked finite and in range.
  if (options_.learning_rate.is_constant())
    detail::check_hyper_parameter(where_, "learning_rate", options_.learning_rate(0));
  if (!(options_.beta1 >= 0.0 && options_.beta1 < 1.0))
    throw argument_error(where_, "beta1 in [0, 1)", detail::concat(options_.beta1));
  if (!(options_.beta2 >= 0.0 && options_.beta2 < 1.0))
    throw argument_error(where_, "beta2 in [0, 1)", detail::concat(options_.beta2));
  detail::check_hyper_parameter(where_, "epsilon", options_.epsilon);
  detail::check_hyper_parameter(where_, "weight_decay", options_.weight_decay);
}

XQ_DECL void adam::step() {
  detail::check_finite_gradients(params_, where_);
  const double lr = detail::checked_schedule_value(where_, "learning_rate", options_.learning_rate, iterations_);
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
    const detail::adam_constants k{w_avg,           f_beta2, one_minus_beta2, eps,        l2,
                                   decay_scale,     neg_step_size, f_bc2_sqrt, std::abs(w_avg) < 0.5f};
    detail::adam_update(decay ? (decoupled_ ? detail::weight_decay_kind::decoupled : detail::weight_decay_kind::l2)
                              : detail::weight_decay_kind::none,
                        v_max != nullptr, k, w, grad, m, v, v_max, p.value.size());
    // Keras applies `var.constraint` after each update (Larq's WeightClip on latent weights).
    p.apply_constraint();
  }
  ++iterations_;
}

XQ_DECL void adam::zero_grad() {
  for (auto& p : params_) p->zero_grad();
}

XQ_DECL adamw::adamw(std::vector<parameter_ptr> params, adamw_options options)
    : adam(std::move(params), to_adam(std::move(options)), true, "xq::adamw") {}

XQ_DECL adam_options adamw::to_adam(adamw_options o) {
  return {std::move(o.learning_rate), o.beta1, o.beta2, o.epsilon, o.weight_decay, o.amsgrad};
}

}  // namespace xq
