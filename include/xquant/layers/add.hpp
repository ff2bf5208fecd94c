#pragma once
/// \file add.hpp
/// `xq::add`: the elementwise sum of inputs of one shape (Keras Add; no
/// broadcasting, so a residual branch whose shape drifted is caught at its path).
///
/// \code
///   xq::add merge;
///   xq::var y = merge(shortcut, branch);          // two inputs
///   xq::var z = merge({a, b, c});                  // n inputs
///   xq::var w = xq::ops::add(a, b);                // functional
/// \endcode

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace detail {

/// Throws unless there is at least one input and all have input 0's shape
/// (shared by add and multiply).
inline void require_same_input_shapes(const std::string& path, const std::vector<var>& inputs) {
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

/// Sum of `inputs` (all of one shape). Each input's gradient is the output's.
inline var add(const std::vector<var>& inputs, const std::string& path = "add") {
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

/// a + b (same shapes).
inline var add(const var& a, const var& b, const std::string& path = "add") { return add({a, b}, path); }

}  // namespace ops

/// Merge layer: elementwise sum of its inputs (Keras Add).
class add : public layer<add> {
 public:
  static constexpr layer_role role = layer_role::merge;
  add() : layer<add>("add") {}
  var call(const var& a, const var& b) const { return ops::add({a, b}, path()); }
  var call(const std::vector<var>& inputs) const { return ops::add(inputs, path()); }
  std::vector<parameter_ptr> parameters() const { return {}; }
};

}  // namespace xq
