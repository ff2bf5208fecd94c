#pragma once
/// \file metrics.hpp
/// Metrics: the fraction of a batch a model gets right (Keras's accuracy
/// metrics), and a running mean to average them over an epoch. Metrics look at
/// values only; they record nothing on the tape.
///
/// \code
///   double acc = xq::sparse_categorical_accuracy(logits.value(), labels);
///   xq::running_mean epoch_acc;
///   epoch_acc.add(acc, batch_size);   // weighted by the batch size
/// \endcode

#include <cstddef>
#include <string>

#include "../core/error.hpp"
#include "../core/var.hpp"
#include "../core/tensor.hpp"

namespace xq {

/// Fraction of rows whose arg-max matches the label; see `sparse_categorical_accuracy`.
struct sparse_categorical_accuracy_fn {
  /// `scores` (N, K) (logits or probabilities), `labels` (N,) or (N, 1) class ids.
  /// The arg-max takes the first maximum on ties (as numpy/TF argmax do); a
  /// label that is no class id simply never matches. Returns a value in [0, 1].
  double operator()(const tensor& scores, const tensor& labels) const {
    static const char* const where = "sparse_categorical_accuracy";
    if (scores.dimension() != 2)
      throw shape_error(where, "scores of shape (N, K)", detail::shape_string(scores.shape()));
    const std::size_t n = scores.shape()[0], k = scores.shape()[1];
    const auto& ls = labels.shape();
    const bool labels_fit = (labels.dimension() == 1 && ls[0] == n) ||
                            (labels.dimension() == 2 && ls[0] == n && ls[1] == 1);
    if (!labels_fit)
      throw shape_error(where,
                        detail::concat("labels of shape (", n, ",) for scores of shape ",
                                       detail::shape_string(scores.shape())),
                        detail::shape_string(ls));
    if (n == 0 || k == 0) return 0.0;
    std::size_t right = 0;
    const float* s = scores.data();
    const float* y = labels.data();
    for (std::size_t i = 0; i < n; ++i) {
      const float* row = s + i * k;
      std::size_t best = 0;
      for (std::size_t j = 1; j < k; ++j)
        if (row[j] > row[best]) best = j;  // strict: the first maximum wins
      if (static_cast<float>(best) == y[i]) ++right;
    }
    return static_cast<double>(right) / static_cast<double>(n);
  }
  double operator()(const var& scores, const tensor& labels) const { return (*this)(scores.value(), labels); }
};

/// Accuracy of class scores (N, K) against class ids (N,): Keras's sparse_categorical_accuracy.
inline constexpr sparse_categorical_accuracy_fn sparse_categorical_accuracy{};

/// Fraction of elements on the right side of a threshold; see `binary_accuracy`.
struct binary_accuracy_fn {
  /// `pred > threshold` counts as 1, and matches a target of 1 (Keras's
  /// binary_accuracy). For logits pass threshold 0. Returns a value in [0, 1].
  double operator()(const tensor& pred, const tensor& targets, float threshold = 0.5f) const {
    if (pred.shape() != targets.shape())
      throw shape_error("binary_accuracy",
                        detail::concat("targets of shape ", detail::shape_string(pred.shape()),
                                       " (the predictions' shape)"),
                        detail::shape_string(targets.shape()));
    const std::size_t n = pred.size();
    if (n == 0) return 0.0;
    std::size_t right = 0;
    const float* p = pred.data();
    const float* z = targets.data();
    for (std::size_t i = 0; i < n; ++i)
      if ((p[i] > threshold ? 1.0f : 0.0f) == z[i]) ++right;
    return static_cast<double>(right) / static_cast<double>(n);
  }
  double operator()(const var& pred, const tensor& targets, float threshold = 0.5f) const {
    return (*this)(pred.value(), targets, threshold);
  }
};

/// Accuracy of probabilities against 0/1 targets of the same shape (threshold 0.5).
inline constexpr binary_accuracy_fn binary_accuracy{};

/// A weighted running mean (in double): the epoch's loss or metric from its batches.
class running_mean {
 public:
  /// Adds `value` with `weight` (usually the batch size).
  void add(double value, double weight = 1.0) noexcept {
    sum_ += value * weight;
    weight_ += weight;
  }
  /// The mean so far; 0 before anything was added.
  double mean() const noexcept { return weight_ > 0.0 ? sum_ / weight_ : 0.0; }
  /// Total weight added (the number of samples when weighted by batch size).
  double weight() const noexcept { return weight_; }
  bool empty() const noexcept { return weight_ == 0.0; }
  void reset() noexcept { sum_ = weight_ = 0.0; }

 private:
  double sum_ = 0.0, weight_ = 0.0;
};

}  // namespace xq
