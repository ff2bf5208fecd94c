#pragma once
/// \file multiply.hpp
/// `xq::multiply`: the elementwise product of inputs of one shape (Keras
/// Multiply, no broadcasting), e.g. a gate: `multiply(features, ops::sigmoid(g))`.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "add.hpp"  // detail::require_same_input_shapes, shared by the merge layers

namespace xq {

namespace ops {

/// Product of `inputs` (all of one shape), left to right. Input i's gradient
/// is dy times the product of the others.
XQ_DECL var multiply(const std::vector<var>& inputs, const std::string& path = "multiply");

/// a * b elementwise (same shapes).
XQ_DECL var multiply(const var& a, const var& b, const std::string& path = "multiply");

}  // namespace ops

/// Merge layer: elementwise product of its inputs (Keras Multiply).
class multiply : public layer<multiply> {
 public:
  XQ_SPECIAL_MEMBERS(multiply)
  static constexpr layer_role role = layer_role::merge;
  multiply() : layer<multiply>("multiply") {}
  XQ_DECL var call(const var& a, const var& b) const;
  XQ_DECL var call(const std::vector<var>& inputs) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/multiply.ipp"
#endif
