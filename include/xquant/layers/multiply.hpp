#pragma once
/// \file multiply.hpp
/// `xq::multiply`: the elementwise product of inputs of one shape (Keras
/// Multiply, no broadcasting), e.g. a gate: `multiply(features, ops::sigmoid(g))`.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "add.hpp"  // detail::require_same_input_shapes, shared by the merge layers

namespace xq {

namespace ops {

/// Product of `inputs` (all of one shape), left to right. Input i's gradient
/// is dy times the product of the others.
inline var multiply(const std::vector<var>& inputs, const std::string& path = "multiply") {
  detail::require_same_input_shapes(path, inputs);
  tensor y = inputs[0].value();
  float* yp = y.data();
  const std::size_t n = y.size();
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    const float* xp = inputs[k].value().data();
    for (std::size_t i = 0; i < n; ++i) yp[i] *= xp[i];
  }
  return detail::traced_function("multiply", layer_role::merge, inputs,
                                 make_result(std::move(y), needs_grad(inputs), [inputs, n](const tensor& dy) {
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (!inputs[k].requires_grad()) continue;
      tensor dx = dy;
      float* dxp = dx.data();
      for (std::size_t j = 0; j < inputs.size(); ++j) {
        if (j == k) continue;
        const float* xp = inputs[j].value().data();
        for (std::size_t i = 0; i < n; ++i) dxp[i] *= xp[i];
      }
      // a * a: each use adds its own a * dy, 2 a dy in all.
      add_grad(inputs[k], std::move(dx));
    }
  }));
}

/// a * b elementwise (same shapes).
inline var multiply(const var& a, const var& b, const std::string& path = "multiply") {
  return multiply({a, b}, path);
}

}  // namespace ops

/// Merge layer: elementwise product of its inputs (Keras Multiply).
class multiply : public layer<multiply> {
 public:
  static constexpr layer_role role = layer_role::merge;
  multiply() : layer<multiply>("multiply") {}
  var call(const var& a, const var& b) const { return ops::multiply({a, b}, path()); }
  var call(const std::vector<var>& inputs) const { return ops::multiply(inputs, path()); }
  std::vector<parameter_ptr> parameters() const { return {}; }
};

}  // namespace xq
