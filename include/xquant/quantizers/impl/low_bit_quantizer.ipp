#pragma once
/// \file low_bit_quantizer.ipp
/// The low-bit quantizers' shared code (quantizers/low_bit_quantizer.hpp).

#include <cstddef>

#include "../low_bit_quantizer.hpp"

namespace xq {

XQ_DECL tensor::shape_type low_bit_state_shape(const tensor::shape_type& x_shape, int axis, std::size_t blocks) {
  if (x_shape.empty()) return {1};
  tensor::shape_type s = x_shape;
  const long r = long(s.size());
  const long a = axis < 0 ? axis + r : axis;
  if (a >= 0 && a < r) s[std::size_t(a)] = blocks;
  return s;
}

}  // namespace xq
