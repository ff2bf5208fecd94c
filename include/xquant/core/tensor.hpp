#pragma once
/// \file tensor.hpp
/// The tensor types of the operator API: row-major xtensor containers, whose
/// contiguous storage the kernels walk directly.

#include <cstddef>
#include <string>

#include <xtensor/xarray.hpp>
#include <xtensor/xtensor.hpp>

#include "../config.hpp"
#include "error.hpp"

namespace xq {

using tensor = xt::xarray<float>;          ///< any rank, row-major
using vector = xt::xtensor<float, 1>;      ///< per-channel parameters
using mask_tensor = xt::xarray<bool>;      ///< gradient masks, one byte each

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
