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

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace detail {

/// Throws unless there is at least one input and all have input 0's shape
/// (shared by add and multiply).
XQ_DECL void require_same_input_shapes(const std::string& path, const std::vector<var>& inputs);

}  // namespace detail

namespace ops {

/// Sum of `inputs` (all of one shape). Each input's gradient is the output's.
XQ_DECL var add(const std::vector<var>& inputs, const std::string& path = "add");

/// a + b (same shapes).
XQ_DECL var add(const var& a, const var& b, const std::string& path = "add");

}  // namespace ops

/// Merge layer: elementwise sum of its inputs (Keras Add).
class add : public layer<add> {
 public:
  XQ_SPECIAL_MEMBERS(add)
  static constexpr layer_role role = layer_role::merge;
  add() : layer<add>("add") {}
  XQ_DECL var call(const var& a, const var& b) const;
  XQ_DECL var call(const std::vector<var>& inputs) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/add.ipp"
#endif
