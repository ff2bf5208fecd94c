#pragma once
/// \file slicing.hpp
/// A range of one axis (`ops::slice`, and the `xq::slice` layer) and a tensor cut into
/// pieces along one axis (`ops::split`: `tf.split`), for any axis: a channel group of
/// NHWC features, the query/key/value thirds of a fused projection. Gradients are dy
/// placed back into zeros of x's shape.
///
/// \code
///   xq::var flow = xq::ops::slice(decoded, -1, 0, 2);           // channels [0, 2)
///   auto qkv = xq::ops::split(projected, -1, 3);                 // three equal parts
///   auto parts = xq::ops::split(x, 1, std::vector<std::size_t>{2, 5});  // sizes 2 and 5
/// \endcode

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

/// An `end` that means the end of the axis (Python's `x[2:]`).
inline constexpr std::size_t to_end = static_cast<std::size_t>(-1);

namespace ops {

/// Elements [begin, end) of `axis` (negative: from the end; `end` = to_end: the axis's
/// length); every other axis whole.
XQ_DECL var slice(const var& x, int axis, std::size_t begin, std::size_t end, const std::string& path = "slice");

/// `x` cut along `axis` into `count` equal parts (the axis must divide).
XQ_DECL std::vector<var> split(const var& x, int axis, std::size_t count, const std::string& path = "split");

/// `x` cut along `axis` into parts of `sizes` (they must add up to the axis).
XQ_DECL std::vector<var> split(const var& x, int axis, const std::vector<std::size_t>& sizes,
                               const std::string& path = "split");

}  // namespace ops

/// Slice layer: elements [begin, end) of one axis; no parameters. By default the whole
/// last axis (a default constructor is what a composite's quantized twin needs).
class slice : public layer<slice> {
 public:
  XQ_SPECIAL_MEMBERS(slice)
  explicit slice(int axis = -1, std::size_t begin = 0, std::size_t end = to_end)
      : layer<slice>("slice"), axis_(axis), begin_(begin), end_(end) {}
  var call(const var& x) const { return ops::slice(x, axis_, begin_, end_, path()); }
  std::vector<parameter_ptr> parameters() const { return {}; }
  int axis() const noexcept { return axis_; }
  std::size_t begin() const noexcept { return begin_; }
  std::size_t end() const noexcept { return end_; }

 private:
  int axis_;
  std::size_t begin_, end_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/slicing.ipp"
#endif
