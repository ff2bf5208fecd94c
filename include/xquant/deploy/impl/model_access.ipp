#pragma once
/// \file model_access.ipp
/// The deployment passes over a type-erased model (deploy/model_access.hpp).

#include <vector>

#include "../../core/mode.hpp"
#include "../../core/tape.hpp"
#include "../../core/tensor.hpp"
#include "../model_access.hpp"

namespace xq::deploy::detail {

/// (1, sample_shape...).
inline tensor::shape_type batch_of_one(const std::vector<std::size_t>& sample_shape) {
  tensor::shape_type shape{1};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  return shape;
}

XQ_DECL void build_and_describe(const model_access& m, const std::vector<std::size_t>& sample_shape,
                                layer_table& table) {
  xq::detail::set_paths(m.ref, "");  // the trace records paths
  {
    const no_grad nothing_recorded;
    const training_mode inference(false);
    m.call(m.model, var(xq::detail::zeros_tensor(batch_of_one(sample_shape))));
  }
  xq::detail::set_paths(m.ref, "");  // lazy layers built by the pass: their parameters' names
  m.describe(m.model, table);
}

XQ_DECL void traced_pass(const model_access& m, const std::vector<std::size_t>& sample_shape, var& input,
                         var& output) {
  const no_grad nothing_recorded;
  const training_mode inference(false);
  input = var(xq::detail::zeros_tensor(batch_of_one(sample_shape)));
  output = m.call(m.model, input);
}

}  // namespace xq::deploy::detail
