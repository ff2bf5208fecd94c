#pragma once
/// \file default_metric.ipp
/// The automatic metric's code (train/default_metric.hpp).

#include "../default_metric.hpp"

namespace xq {

XQ_DECL double automatic_metric_fn::operator()(const tensor& outputs, const tensor& targets) const {
  const tensor::shape_type& s = outputs.shape();
  const tensor::shape_type& l = targets.shape();
  bool class_shapes = s.size() >= 2;
  if (class_shapes) {
    tensor::shape_type lead(s.begin(), s.end() - 1);
    tensor::shape_type with_one = lead;
    with_one.push_back(1);
    class_shapes = l == lead || l == with_one;
  }
  if (!class_shapes)
    throw shape_error("the default metric (accuracy)",
                      "class scores (..., K) and labels (...) for accuracy, the default metric of a loss xquant "
                      "does not know (for a regression set fit_options::metric = nullptr, or pass a metric; a loss "
                      "type names its own with a specialization of xq::default_metric<Loss>)",
                      detail::concat("outputs ", detail::shape_string(s), " and targets ", detail::shape_string(l)));
  return sparse_categorical_accuracy(outputs, targets);
}

}  // namespace xq
