#pragma once
/// \file broadcasting.hpp
/// Elementwise add, subtract and multiply of two tensors of broadcastable shapes (NumPy's
/// and TF's rule: shapes aligned at the last axis, each axis equal or 1 in one of them),
/// the `+`, `-` and `*` operators on vars, and the `xq::subtract` layer (Keras Subtract).
/// Each gradient is summed over the axes its operand was broadcast along.
///
/// `xq::add` and `xq::multiply` stay strict (one shape for every input), so a residual
/// branch whose shape drifted is an error at its path; broadcasting is asked for by name.
///
/// \code
///   xq::var h = x + position;             // (N, T, D) + (T, D)
///   xq::var scaled = scores * inv_norm;   // (N, H, T, T) * (N, H, T, 1)
///   xq::var d = xq::subtract()(a, b);     // a - b, a layer
/// \endcode

#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace detail {

/// The broadcast shape of `a` and `b`; a shape_error at `path` when they do not broadcast.
XQ_DECL tensor::shape_type broadcast_shape(const std::string& path, const tensor::shape_type& a,
                                           const tensor::shape_type& b);

/// `g` (of a broadcast shape) summed over the axes that `shape` was broadcast along, as
/// `shape`: the gradient of a broadcast operand. Taken by value: a gradient that already
/// has the shape is moved through, not copied.
XQ_DECL tensor reduce_to_shape(tensor g, const tensor::shape_type& shape);

}  // namespace detail

namespace ops {

/// a + b, broadcast. `path` names the caller in errors.
XQ_DECL var broadcast_add(const var& a, const var& b, const std::string& path = "broadcast_add");
/// a - b, broadcast.
XQ_DECL var broadcast_subtract(const var& a, const var& b, const std::string& path = "subtract");
/// a * b, broadcast.
XQ_DECL var broadcast_multiply(const var& a, const var& b, const std::string& path = "broadcast_multiply");

}  // namespace ops

inline var operator+(const var& a, const var& b) { return ops::broadcast_add(a, b); }
inline var operator-(const var& a, const var& b) { return ops::broadcast_subtract(a, b); }
inline var operator*(const var& a, const var& b) { return ops::broadcast_multiply(a, b); }

/// Merge layer: a - b of its two inputs, broadcast (Keras Subtract).
class subtract : public layer<subtract> {
 public:
  XQ_SPECIAL_MEMBERS(subtract)
  static constexpr layer_role role = layer_role::merge;
  subtract() : layer<subtract>("subtract") {}
  var call(const var& a, const var& b) const { return ops::broadcast_subtract(a, b, path()); }
  XQ_DECL var call(const std::vector<var>& inputs) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/broadcasting.ipp"
#endif
