#pragma once
/// \file distillation.ipp
/// distillation's code (train/distillation.hpp).

#include <algorithm>
#include <cmath>
#include <vector>

#include "../distillation.hpp"
#include "../../core/error.hpp"
#include "../../core/shape_check.hpp"

namespace xq {

XQ_DECL var softened_kl_divergence(const var& student_logits, const tensor& teacher_logits, float temperature) {
  static const char* const where = "xq::softened_kl_divergence";
  if (!(temperature > 0.0f) || !std::isfinite(temperature))
    throw argument_error(where, "a positive temperature", std::to_string(temperature));
  if (student_logits.shape() != teacher_logits.shape())
    throw shape_error(where, "teacher logits of the student's shape " + detail::shape_string(student_logits.shape()),
                      detail::shape_string(teacher_logits.shape()));
  if (student_logits.dimension() == 0 || student_logits.size() == 0)
    throw shape_error(where, "logits with a class axis and at least one row", detail::shape_string(student_logits.shape()));
  const std::size_t k = student_logits.shape().back(), rows = student_logits.size() / k;
  const double t = temperature;
  const float* s = student_logits.value().data();
  const float* q = teacher_logits.data();
  const bool record = needs_grad(student_logits);
  tensor diff = record ? tensor::from_shape(student_logits.shape()) : tensor();
  std::vector<double> ps(k), pt(k);
  double total = 0.0;
  // log-sum-exp with the row's maximum subtracted: large logits do not overflow.
  const auto softmax = [&](const float* row, std::vector<double>& p) {
    double top = row[0];
    for (std::size_t j = 1; j < k; ++j) top = std::max(top, double(row[j]));
    double sum = 0.0;
    for (std::size_t j = 0; j < k; ++j) sum += (p[j] = std::exp((double(row[j]) - top) / t));
    for (std::size_t j = 0; j < k; ++j) p[j] /= sum;
    return top / t + std::log(sum);  // log Σ exp(row / T)
  };
  for (std::size_t r = 0; r < rows; ++r) {
    const float* sr = s + r * k;
    const float* qr = q + r * k;
    const double ls = softmax(sr, ps), lt = softmax(qr, pt);
    double kl = 0.0;
    for (std::size_t j = 0; j < k; ++j)
      if (pt[j] > 0.0) kl += pt[j] * ((double(qr[j]) / t - lt) - (double(sr[j]) / t - ls));
    total += kl;
    if (record)
      for (std::size_t j = 0; j < k; ++j) diff.data()[r * k + j] = float(ps[j] - pt[j]);
  }
  const double scale = t * t / double(rows);
  return make_result(detail::scalar_tensor(total * scale), record,
                     [student_logits, diff = std::move(diff), t, rows](const tensor& dy) {
                       const float g = float(double(dy.data()[0]) * t / double(rows));
                       tensor dx = tensor::from_shape(diff.shape());
                       for (std::size_t i = 0; i < diff.size(); ++i) dx.data()[i] = diff.data()[i] * g;
                       add_grad(student_logits, std::move(dx));
                     });
}

namespace detail {

XQ_DECL var weighted_loss_sum(const var& a, float wa, const var& b, float wb) {
  const bool with_b = b.defined();
  if (a.size() != 1 || (with_b && b.size() != 1))
    throw shape_error("xq::distillation_loss", "scalar losses", shape_string(with_b && a.size() == 1 ? b.shape() : a.shape()));
  double v = double(wa) * double(a.value().data()[0]);
  if (with_b) v += double(wb) * double(b.value().data()[0]);
  const bool record = with_b ? needs_grad(a, b) : needs_grad(a);
  return make_result(scalar_tensor(v), record, [a, wa, b, wb, with_b](const tensor& dy) {
    const float g = dy.data()[0];
    if (a.requires_grad()) add_grad(a, scalar_tensor(double(wa) * g));
    if (with_b && b.requires_grad()) add_grad(b, scalar_tensor(double(wb) * g));
  });
}

XQ_DECL var distillation_term(const var& student, const tensor& teacher, const distillation_options& o) {
  if (o.kind == distillation_kind::mse) return mean_squared_error(student, var(teacher));
  return softened_kl_divergence(student, teacher, o.temperature);
}

}  // namespace detail

}  // namespace xq
