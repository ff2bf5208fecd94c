#pragma once
/// \file concatenate.hpp
/// `xq::concatenate`: joins inputs along one axis (Keras Concatenate; default the
/// last, channels in NHWC). Negative axes count from the end. Every other axis
/// must match input 0's.
///
/// \code
///   xq::concatenate cat;                          // axis -1
///   xq::var y = cat({branch_1, branch_2, branch_3});
///   xq::var z = xq::ops::concatenate({a, b}, 0);  // along the batch
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

/// "(2, ?, 4)": `shape` with axis `axis` shown as any size.
template <class Shape>
std::string shape_string_except(const Shape& shape, std::size_t axis) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += i == axis ? std::string("?") : std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace detail

namespace ops {

/// Joins `inputs` along `axis` (negative: from the end). `path` names the caller in errors.
inline var concatenate(const std::vector<var>& inputs, int axis = -1,
                       const std::string& path = "concatenate") {
  if (inputs.empty()) throw argument_error(path, "at least one input", "none");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw argument_error(path, detail::concat("a defined var as input ", i), "an empty var");
  const auto& s0 = inputs[0].shape();
  const long rank = static_cast<long>(s0.size());
  if (axis >= rank || axis < -rank)
    throw shape_error(
        path,
        detail::concat("inputs of rank at least ", axis < 0 ? -static_cast<long>(axis) : axis + 1L,
                       " to concatenate along axis ", axis),
        detail::shape_string(s0));
  const std::size_t ax = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  for (std::size_t k = 1; k < inputs.size(); ++k) {
    const auto& sk = inputs[k].shape();
    bool ok = sk.size() == s0.size();
    for (std::size_t i = 0; ok && i < s0.size(); ++i) ok = i == ax || sk[i] == s0[i];
    if (!ok)
      throw shape_error(path,
                        detail::concat("input ", k, " of shape ", detail::shape_string_except(s0, ax),
                                       " (input 0's shape on every axis but ", ax, ")"),
                        detail::shape_string(sk));
  }

  // Each input is `outer` blocks of `width[k]` contiguous values; the output
  // interleaves them block by block.
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < ax; ++i) outer *= s0[i];
  for (std::size_t i = ax + 1; i < s0.size(); ++i) inner *= s0[i];
  std::vector<std::size_t> width(inputs.size());
  std::size_t total = 0, along = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    width[k] = inputs[k].shape()[ax] * inner;
    total += width[k];
    along += inputs[k].shape()[ax];
  }
  tensor::shape_type y_shape = s0;
  y_shape[ax] = along;
  tensor y = tensor::from_shape(y_shape);
  {
    float* yp = y.data();
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        const float* src = inputs[k].value().data() + o * width[k];
        yp = std::copy(src, src + width[k], yp);
      }
  }
  var out = make_result(std::move(y), needs_grad(inputs), [inputs, width, outer, total](const tensor& dy) {
    std::size_t offset = 0;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      if (inputs[k].requires_grad()) {
        tensor dx = tensor::from_shape(inputs[k].shape());
        float* dxp = dx.data();
        for (std::size_t o = 0; o < outer; ++o) {
          const float* src = dy.data() + o * total + offset;
          dxp = std::copy(src, src + width[k], dxp);
        }
        add_grad(inputs[k], std::move(dx));
      }
      offset += width[k];
    }
  });
  return detail::traced_function("concatenate", layer_role::merge, inputs, std::move(out));
}

}  // namespace ops

/// Merge layer: concatenation along `axis` (default -1, the channels).
class concatenate : public layer<concatenate> {
 public:
  static constexpr layer_role role = layer_role::merge;
  explicit concatenate(int axis = -1) : layer<concatenate>("concatenate"), axis_(axis) {}
  var call(const var& a, const var& b) const { return ops::concatenate({a, b}, axis_, path()); }
  var call(const std::vector<var>& inputs) const { return ops::concatenate(inputs, axis_, path()); }
  std::vector<parameter_ptr> parameters() const { return {}; }
  int axis() const noexcept { return axis_; }

 private:
  int axis_;
};

}  // namespace xq
