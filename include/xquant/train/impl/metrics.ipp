#pragma once
/// \file metrics.ipp
/// The accuracy metrics' code (train/metrics.hpp).

#include <cstddef>

#include "../metrics.hpp"

namespace xq {

XQ_DECL std::pair<std::size_t, std::size_t> detail::class_rows(const char* where, const char* what,
                                                               const tensor::shape_type& scores,
                                                               const tensor::shape_type& labels) {
  if (scores.size() < 2)
    throw shape_error(where, concat(what, " of shape (N, K) or (..., K)"), shape_string(scores));
  const std::size_t k = scores.back();
  std::size_t n = 1;
  for (std::size_t a = 0; a + 1 < scores.size(); ++a) n *= scores[a];
  // Labels are the scores' leading axes, with or without a trailing axis of 1.
  const tensor::shape_type lead(scores.begin(), scores.end() - 1);
  tensor::shape_type with_one = lead;
  with_one.push_back(1);
  if (labels != lead && labels != with_one) {
    std::string want = shape_string(lead);
    if (lead.size() == 1) want = concat("(", lead[0], ",)");
    throw shape_error(where, concat("labels of shape ", want, " for ", what, " of shape ", shape_string(scores)),
                      shape_string(labels));
  }
  return {n, k};
}

XQ_DECL double sparse_categorical_accuracy_fn::operator()(const tensor& scores, const tensor& labels) const {
  const auto [n, k] = detail::class_rows("sparse_categorical_accuracy", "scores", scores.shape(), labels.shape());
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
