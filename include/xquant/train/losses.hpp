#pragma once
/// \file losses.hpp
/// Losses: a prediction and targets in, a scalar `xq::var` (shape `()`) out,
/// recorded on the tape, averaged over the batch (Keras's default
/// "sum over batch size" reduction). Each is a function object, so it can be
/// called directly or handed to `xq::fit`:
///
/// \code
///   xq::var loss = xq::sparse_softmax_cross_entropy(model(x), labels);
///   xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, options);
/// \endcode
///
/// Targets are data: no gradient flows into labels. (Binary cross-entropy and
/// mean squared error do pass a gradient to targets that require one.)
/// Sums over the batch are taken in double.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>

#include "../core/error.hpp"
#include "../core/tape.hpp"
#include "../core/var.hpp"
#include "../core/tensor.hpp"

namespace xq {

namespace detail {

/// A 0-d tensor holding `v`.
inline tensor scalar_tensor(double v) {
  tensor t = tensor::from_shape(tensor::shape_type{});
  t.data()[0] = static_cast<float>(v);
  return t;
}

/// Targets of a loss must have the prediction's shape.
inline void require_loss_shapes(const char* loss, const var& pred, const var& targets) {
  if (pred.shape() != targets.shape())
    throw shape_error(loss,
                      concat("targets of shape ", shape_string(pred.shape()), " (the predictions' shape)"),
                      shape_string(targets.shape()));
  if (pred.size() == 0) throw argument_error(loss, "at least one prediction", "an empty tensor");
}

}  // namespace detail

/// Softmax + cross-entropy against integer class ids, fused (TF's
/// sparse_softmax_cross_entropy_with_logits, Keras's
/// SparseCategoricalCrossentropy(from_logits=True)); see `sparse_softmax_cross_entropy`.
struct sparse_softmax_cross_entropy_fn {
  /// `logits` (N, K); `labels` (N,) or (N, 1), floats holding class ids in [0, K).
  /// Loss = mean over rows of logsumexp(row) - row[label]; the max is subtracted
  /// before exp, so huge logits do not overflow. Gradient: (softmax - onehot) / N.
  var operator()(const var& logits, const var& labels) const {
    static const char* const where = "sparse_softmax_cross_entropy";
    if (logits.dimension() != 2)
      throw shape_error(where, "logits of shape (N, K)", detail::shape_string(logits.shape()));
    const std::size_t n = logits.shape()[0], k = logits.shape()[1];
    const auto& ls = labels.shape();
    const bool labels_fit = (labels.dimension() == 1 && ls[0] == n) ||
                            (labels.dimension() == 2 && ls[0] == n && ls[1] == 1);
    if (!labels_fit)
      throw shape_error(where,
                        detail::concat("labels of shape (", n, ",) for logits of shape ",
                                       detail::shape_string(logits.shape())),
                        detail::shape_string(ls));
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
  var operator()(const var& logits, const tensor& labels) const { return (*this)(logits, var(labels)); }
};

/// Mean softmax cross-entropy of logits (N, K) against class ids (N,).
inline constexpr sparse_softmax_cross_entropy_fn sparse_softmax_cross_entropy{};

/// Binary cross-entropy with Keras's semantics; see `binary_cross_entropy`.
struct binary_cross_entropy_fn {
  static constexpr float eps = 1e-7f;      ///< keras.backend.epsilon()
  static constexpr float hi = 1.0f - eps;  ///< 1 - epsilon in float, as Keras computes it

  /// Mean over all elements. Probabilities (`from_logits` false) are clipped to
  /// [1e-7, 1 - 1e-7] first, as Keras does (no gradient outside the clip range,
  /// as TF's clip_by_value); logits use the stable
  /// max(x, 0) - x * z + log(1 + exp(-|x|)) form (TF's sigmoid_cross_entropy_with_logits).
  var operator()(const var& pred, const var& targets, bool from_logits = false) const {
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
  var operator()(const var& pred, const tensor& targets, bool from_logits = false) const {
    return (*this)(pred, var(targets), from_logits);
  }
};

/// Mean binary cross-entropy of probabilities (or logits) against 0/1 targets of the same shape.
inline constexpr binary_cross_entropy_fn binary_cross_entropy{};

/// Mean squared error; see `mean_squared_error`.
struct mean_squared_error_fn {
  /// mean((pred - targets)^2) over all elements; gradient 2 (pred - targets) / size.
  var operator()(const var& pred, const var& targets) const {
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
  var operator()(const var& pred, const tensor& targets) const { return (*this)(pred, var(targets)); }
};

/// Mean squared error between predictions and targets of the same shape.
inline constexpr mean_squared_error_fn mean_squared_error{};

}  // namespace xq
