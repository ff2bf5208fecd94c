#pragma once
/// \file losses.ipp
/// The losses' code (train/losses.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

#include "../losses.hpp"
#include "../metrics.hpp"

namespace xq {

namespace detail {

XQ_DECL tensor scalar_tensor(double v) {
  tensor t = tensor::from_shape(tensor::shape_type{});
  t.data()[0] = static_cast<float>(v);
  return t;
}

XQ_DECL void require_loss_shapes(const char* loss, const var& pred, const var& targets) {
  if (pred.shape() != targets.shape())
    throw shape_error(loss,
                      concat("targets of shape ", shape_string(pred.shape()), " (the predictions' shape)"),
                      shape_string(targets.shape()));
  if (pred.size() == 0) throw argument_error(loss, "at least one prediction", "an empty tensor");
}

}  // namespace detail

XQ_DECL var sparse_softmax_cross_entropy_fn::operator()(const var& logits, const var& labels) const {
  static const char* const where = "sparse_softmax_cross_entropy";
  const auto rows = detail::class_rows(where, "logits", logits.shape(), labels.shape());
  const std::size_t n = rows.first, k = rows.second;  // (a lambda below captures them: no structured binding)
  if (n == 0 || k == 0)
    throw shape_error(where, "logits with at least one row and one class",
                      detail::shape_string(logits.shape()));
  const float* y = labels.value().data();
  for (std::size_t i = 0; i < n; ++i)
    if (!(y[i] >= 0.0f && y[i] < static_cast<float>(k) && std::floor(y[i]) == y[i]))
      throw argument_error(where, detail::concat("labels that are integers in [0, ", k, ")"),
                           detail::concat(y[i], " at index ", i));

  const bool record = needs_grad(logits);
  tensor probs = record ? tensor::from_shape(logits.shape()) : tensor();
  const float* x = logits.value().data();
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const float* row = x + i * k;
    const float top = *std::max_element(row, row + k);
    double sum = 0.0;
    for (std::size_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(row[j] - top));
    const auto label = static_cast<std::size_t>(y[i]);
    total += std::log(sum) - static_cast<double>(row[label] - top);
    if (record) {
      float* p = probs.data() + i * k;
      for (std::size_t j = 0; j < k; ++j)
        p[j] = static_cast<float>(std::exp(static_cast<double>(row[j] - top)) / sum);
    }
  }
  var targets = labels;
  return make_result(detail::scalar_tensor(total / static_cast<double>(n)), record,
                     [logits, targets, probs = std::move(probs), n, k](const tensor& dy) {
                       const auto scale = static_cast<float>(static_cast<double>(dy.data()[0]) /
                                                             static_cast<double>(n));
                       tensor dx = tensor::from_shape(logits.shape());
                       const float* p = probs.data();
                       const float* y = targets.value().data();
                       float* d = dx.data();
                       for (std::size_t i = 0; i < n; ++i) {
                         const auto label = static_cast<std::size_t>(y[i]);
                         for (std::size_t j = 0; j < k; ++j)
                           d[i * k + j] = (p[i * k + j] - (j == label ? 1.0f : 0.0f)) * scale;
                       }
                       add_grad(logits, std::move(dx));
                     });
}

XQ_DECL var binary_cross_entropy_fn::operator()(const var& pred, const var& targets, bool from_logits) const {
  static const char* const where = "binary_cross_entropy";
  detail::require_loss_shapes(where, pred, targets);
  const std::size_t n = pred.size();
  const float* p = pred.value().data();
  const float* z = targets.value().data();
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double zi = z[i];
    if (from_logits) {
      const double xi = p[i];
      total += std::max(xi, 0.0) - xi * zi + std::log1p(std::exp(-std::abs(xi)));
    } else {
      const double c = std::clamp(p[i], eps, hi);
      total += -(zi * std::log(c) + (1.0 - zi) * std::log(1.0 - c));
    }
  }
  const bool record = needs_grad(pred, targets);
  return make_result(
      detail::scalar_tensor(total / static_cast<double>(n)), record,
      [pred, targets, from_logits, n](const tensor& dy) {
        const double scale = static_cast<double>(dy.data()[0]) / static_cast<double>(n);
        const float* p = pred.value().data();
        const float* z = targets.value().data();
        tensor dp = pred.requires_grad() ? tensor::from_shape(pred.shape()) : tensor();
        tensor dz = targets.requires_grad() ? tensor::from_shape(targets.shape()) : tensor();
        for (std::size_t i = 0; i < n; ++i) {
          const double zi = z[i];
          if (from_logits) {
            const double xi = p[i];
            const double sig = 1.0 / (1.0 + std::exp(-xi));
            if (pred.requires_grad()) dp.data()[i] = static_cast<float>((sig - zi) * scale);
            if (targets.requires_grad()) dz.data()[i] = static_cast<float>(-xi * scale);
          } else {
            const bool inside = p[i] >= eps && p[i] <= hi;
            const double c = std::clamp(p[i], eps, hi);
            if (pred.requires_grad())
              dp.data()[i] = inside ? static_cast<float>((-zi / c + (1.0 - zi) / (1.0 - c)) * scale) : 0.0f;
            if (targets.requires_grad())
              dz.data()[i] = static_cast<float>(-(std::log(c) - std::log(1.0 - c)) * scale);
          }
        }
        if (pred.requires_grad()) add_grad(pred, std::move(dp));
        if (targets.requires_grad()) add_grad(targets, std::move(dz));
      });
}

XQ_DECL var mean_squared_error_fn::operator()(const var& pred, const var& targets) const {
  static const char* const where = "mean_squared_error";
  detail::require_loss_shapes(where, pred, targets);
  const std::size_t n = pred.size();
  const float* p = pred.value().data();
  const float* t = targets.value().data();
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(p[i]) - static_cast<double>(t[i]);
    total += d * d;
  }
  const bool record = needs_grad(pred, targets);
  return make_result(detail::scalar_tensor(total / static_cast<double>(n)), record,
                     [pred, targets, n](const tensor& dy) {
                       const double scale = 2.0 * static_cast<double>(dy.data()[0]) / static_cast<double>(n);
                       const float* p = pred.value().data();
                       const float* t = targets.value().data();
                       tensor d = tensor::from_shape(pred.shape());
                       for (std::size_t i = 0; i < n; ++i)
                         d.data()[i] = static_cast<float>((static_cast<double>(p[i]) - t[i]) * scale);
                       if (targets.requires_grad()) add_grad(targets, tensor(-d));
                       if (pred.requires_grad()) add_grad(pred, std::move(d));
                     });
}

}  // namespace xq
