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
XQ_DECL var concatenate(const std::vector<var>& inputs, int axis = -1,
                        const std::string& path = "concatenate");

}  // namespace ops

/// Merge layer: concatenation along `axis` (default -1, the channels).
class concatenate : public layer<concatenate> {
 public:
  XQ_SPECIAL_MEMBERS(concatenate)
  static constexpr layer_role role = layer_role::merge;
  explicit concatenate(int axis = -1) : layer<concatenate>("concatenate"), axis_(axis) {}
  XQ_DECL var call(const var& a, const var& b) const;
  XQ_DECL var call(const std::vector<var>& inputs) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
  int axis() const noexcept { return axis_; }

 private:
  int axis_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/concatenate.ipp"
#endif
