#pragma once
/// \file tensor.hpp
/// The tensor types of the operator API: row-major xtensor containers, whose
/// contiguous storage the kernels walk directly, allocated from the tensor memory cache
/// (core/memory.hpp). Create them as `tensor::from_shape(shape)` (uninitialized) or from
/// an expression; an `xt::xarray<float>` converts by copying, as its allocator differs.

#include <cstddef>
#include <string>

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

#include "../config.hpp"
#include "error.hpp"
#include "memory.hpp"

namespace xq {

using tensor = xt::xarray<float, xt::layout_type::row_major, tensor_allocator<float>>;  ///< any rank
using vector = xt::xtensor<float, 1>;  ///< per-channel parameters (small: the system allocator's)
using mask_tensor = xt::xarray<bool, xt::layout_type::row_major, tensor_allocator<bool>>;  ///< one byte each

namespace detail {

template <class Shape>
std::string shape_string(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

template <class A, class B>
void require_same_shape(const char* where, const A& expected, const B& given, const char* what) {
  bool same = expected.dimension() == given.dimension();
  for (std::size_t i = 0; same && i < expected.dimension(); ++i)
    same = expected.shape()[i] == given.shape()[i];
  if (!same)
    throw argument_error(where, concat(what, " of shape ", shape_string(expected.shape())),
                         shape_string(given.shape()));
}

/// A tensor of zeros of `shape`: compiled once (xt::zeros' broadcast expression costs every
/// translation unit that spells it; `build` and `quantize_model` need one per model).
XQ_DECL tensor zeros_tensor(const tensor::shape_type& shape);

}  // namespace detail
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tensor.ipp"
#endif
