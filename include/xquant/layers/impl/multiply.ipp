#pragma once
/// \file multiply.ipp
/// multiply's code (layers/multiply.hpp).

#include "../multiply.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(multiply)

namespace ops {

XQ_DECL var multiply(const std::vector<var>& inputs, const std::string& path) {
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

XQ_DECL var multiply(const var& a, const var& b, const std::string& path) {
  return multiply({a, b}, path);
}

}  // namespace ops

XQ_DECL var multiply::call(const var& a, const var& b) const { return ops::multiply({a, b}, path()); }

XQ_DECL var multiply::call(const std::vector<var>& inputs) const { return ops::multiply(inputs, path()); }

}  // namespace xq
