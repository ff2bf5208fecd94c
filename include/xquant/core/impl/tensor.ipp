#pragma once
/// \file tensor.ipp
/// core/tensor.hpp's compiled code: compiled by every translation unit in header-only mode,
/// once in <xquant/src.hpp> in separate mode.

#include "../tensor.hpp"

namespace xq::detail {

XQ_DECL tensor zeros_tensor(const tensor::shape_type& shape) {
  tensor t = tensor::from_shape(shape);
  t.fill(0.0f);
  return t;
}

}  // namespace xq::detail
