#pragma once
/// \file metrics.ipp
/// The accuracy metrics' code (train/metrics.hpp).

#include <cstddef>

#include "../metrics.hpp"

namespace xq {

XQ_DECL double sparse_categorical_accuracy_fn::operator()(const tensor& scores, const tensor& labels) const {
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

XQ_DECL double binary_accuracy_fn::operator()(const tensor& pred, const tensor& targets, float threshold) const {
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

}  // namespace xq
