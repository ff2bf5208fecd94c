#pragma once
/// \file model_access.ipp
/// The deployment passes over a type-erased model (deploy/model_access.hpp).

#include <algorithm>
#include <set>
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

XQ_DECL std::set<const variable_state*> constant_values(const model_access& m,
                                                        const std::vector<std::size_t>& sample_shape,
                                                        const graph_trace& trace, const variable_state* input) {
  std::set<const variable_state*> constants;
  auto unmade = [&](const variable_state* s) { return s != input && !trace.producer(s); };
  bool any = false;
  for (const traced_call& c : trace.calls())
    for (const variable_state* s : c.inputs) any = any || unmade(s);
  if (!any) return constants;
  graph_trace second;
  {
    const tape recorded;
    const training_mode inference(false);
    tensor ones = xq::detail::zeros_tensor(batch_of_one(sample_shape));
    std::fill(ones.begin(), ones.end(), 1.0f);
    const var x(std::move(ones), true);
    m.call(m.model, x);
  }
  const auto& a = trace.calls();
  const auto& b = second.calls();
  if (a.size() != b.size()) return constants;  // forward code that depends on the input's values
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].type != b[i].type || a[i].path != b[i].path || a[i].inputs.size() != b[i].inputs.size()) return {};
    for (std::size_t k = 0; k < a[i].inputs.size(); ++k) {
      const variable_state* s = a[i].inputs[k];
      const variable_state* t = b[i].inputs[k];
      if (unmade(s) && !t->requires_grad && s->value.shape() == t->value.shape() &&
          std::equal(s->value.begin(), s->value.end(), t->value.begin()))
        constants.insert(s);
    }
  }
  return constants;
}

}  // namespace xq::deploy::detail
