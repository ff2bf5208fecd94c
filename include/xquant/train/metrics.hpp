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
#include <utility>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/var.hpp"
#include "../core/tensor.hpp"

namespace xq {

namespace detail {

/// Rows and classes of class scores (..., K) against labels (...) or (..., 1), the
/// shapes Keras's sparse losses and metrics take ((N, K) with (N,) for a classifier,
/// (B, T, K) with (B, T) for a sequence model). Returns {rows, K}; a shape_error at
/// `where` naming `what` ("logits", "scores") when the shapes do not fit.
XQ_DECL std::pair<std::size_t, std::size_t> class_rows(const char* where, const char* what,
                                                       const tensor::shape_type& scores,
                                                       const tensor::shape_type& labels);

}  // namespace detail

/// Fraction of rows whose arg-max matches the label; see `sparse_categorical_accuracy`.
struct sparse_categorical_accuracy_fn {
  /// `scores` (N, K) (logits or probabilities), `labels` (N,) or (N, 1) class ids; or
  /// any (..., K) with labels (...) / (..., 1), every position a row.
  /// The arg-max takes the first maximum on ties (as numpy/TF argmax do); a
  /// label that is no class id simply never matches. Returns a value in [0, 1].
  double operator()(const tensor& scores, const tensor& labels) const;
  double operator()(const var& scores, const tensor& labels) const { return (*this)(scores.value(), labels); }
};

/// Accuracy of class scores (N, K) against class ids (N,): Keras's sparse_categorical_accuracy.
inline constexpr sparse_categorical_accuracy_fn sparse_categorical_accuracy{};

/// Fraction of elements on the right side of a threshold; see `binary_accuracy`.
struct binary_accuracy_fn {
  /// `pred > threshold` counts as 1, and matches a target of 1 (Keras's
  /// binary_accuracy). For logits pass threshold 0. Returns a value in [0, 1].
  double operator()(const tensor& pred, const tensor& targets, float threshold = 0.5f) const;
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

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/metrics.ipp"
#endif
