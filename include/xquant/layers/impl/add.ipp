#pragma once
/// \file add.ipp
/// The add layer's code (layers/add.hpp).

#include <algorithm>

#include "../add.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(add)

namespace detail {

XQ_DECL void require_same_input_shapes(const std::string& path, const std::vector<var>& inputs) {
  if (inputs.empty()) throw argument_error(path, "at least one input", "none");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw argument_error(path, concat("a defined var as input ", i), "an empty var");
  const auto& s0 = inputs[0].shape();
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const auto& si = inputs[i].shape();
    if (!(si.size() == s0.size() && std::equal(s0.begin(), s0.end(), si.begin())))
      throw shape_error(path, concat("input ", i, " of shape ", shape_string(s0), " (the shape of input 0)"),
                        shape_string(si));
  }
}

}  // namespace detail

namespace ops {

XQ_DECL var add(const std::vector<var>& inputs, const std::string& path) {
  detail::require_same_input_shapes(path, inputs);
  tensor y = inputs[0].value();
  float* yp = y.data();
  const std::size_t n = y.size();
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    const float* xp = inputs[k].value().data();
    for (std::size_t i = 0; i < n; ++i) yp[i] += xp[i];
  }
  // The same var twice (a + a) gets two contributions: add_grad accumulates.
  return detail::traced_function("add", layer_role::merge, inputs,
                                 make_result(std::move(y), needs_grad(inputs), [inputs](const tensor& dy) {
                                   for (const var& x : inputs)
                                     if (x.requires_grad()) add_grad(x, tensor(dy));
                                 }));
}

XQ_DECL var add(const var& a, const var& b, const std::string& path) { return add({a, b}, path); }

}  // namespace ops

XQ_DECL var add::call(const var& a, const var& b) const { return ops::add({a, b}, path()); }

XQ_DECL var add::call(const std::vector<var>& inputs) const { return ops::add(inputs, path()); }

}  // namespace xq
