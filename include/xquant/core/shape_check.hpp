#pragma once
/// \file shape_check.hpp
/// The checks at every layer's entry: a wrong rank or size raises `xq::shape_error`
/// naming the layer path, the expected shape and the given one, e.g.
/// "block_1/conv: expected input of shape (N, H, W, 16), given (64, 28, 28, 8)".

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "../config.hpp"
#include "tensor.hpp"
#include "error.hpp"

namespace xq::detail {

/// One expected axis: a fixed size, or any size shown by its letter.
struct axis_spec {
  std::int64_t size;  // < 0: any size
  char letter;
};
inline axis_spec any(char letter) { return {-1, letter}; }
inline axis_spec exactly(std::size_t n, char letter = '?') { return {static_cast<std::int64_t>(n), letter}; }

/// "(N, H, W, 16)": the axes as an error message shows them.
XQ_DECL std::string describe(const std::vector<axis_spec>& axes);

/// Throws unless `shape` matches `axes` (rank and every fixed size).
template <class Shape>
void require_shape(const std::string& path, const Shape& shape, const std::vector<axis_spec>& axes,
                   const char* what = "input") {
  bool ok = shape.size() == axes.size();
  for (std::size_t i = 0; ok && i < axes.size(); ++i)
    ok = axes[i].size < 0 || static_cast<std::int64_t>(shape[i]) == axes[i].size;
  if (!ok)
    throw shape_error(path, concat(what, " of shape ", describe(axes)), shape_string(shape));
}

/// Throws unless two inputs have the same shape.
template <class ShapeA, class ShapeB>
void require_same_shapes(const std::string& path, const ShapeA& a, const ShapeB& b, const char* what) {
  bool ok = a.size() == b.size();
  for (std::size_t i = 0; ok && i < a.size(); ++i) ok = a[i] == b[i];
  if (!ok) throw shape_error(path, concat(what, " of shape ", shape_string(a)), shape_string(b));
}

}  // namespace xq::detail

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/shape_check.ipp"
#endif
