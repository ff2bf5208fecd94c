#pragma once
/// \file low_bit_quantizer.ipp
/// The low-bit quantizers' shared code (quantizers/low_bit_quantizer.hpp).

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

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

namespace detail {

XQ_DECL quantization_grid blocked_grid(grid_element element, int bits, const tensor::shape_type& shape, int axis,
                                       std::size_t block, std::vector<float> scale, const std::string& where) {
  for (std::size_t i = 0; i < scale.size(); ++i)
    if (!(std::isfinite(scale[i]) && scale[i] > 0.0f))
      throw argument_error(where, "finite positive block scales (a block of finite values)",
                           concat("scale[", i, "] = ", scale[i]));
  quantization_grid g;
  g.element = element;
  g.num_bits = bits;
  g.scale = std::move(scale);
  if (element == grid_element::integer) {
    g.qmin = -(1 << (bits - 1));
    g.qmax = (1 << (bits - 1)) - 1;
  } else {
    g.qmin = g.qmax = 0;
  }
  g.zero_point.assign(g.scale.size(), 0);
  g.dynamic = true;
  const long rank = long(shape.size());
  if (g.scale.size() == 1) return g;  // one scale: per tensor
  g.channel_axis = axis < 0 ? int(axis + rank) : axis;
  g.block_size = block;
  return g;
}

XQ_DECL grid_element grid_element_of(low_bit::element_type t, const std::string& where) {
  switch (t) {
    case low_bit::element_type::e4m3fn: return grid_element::fp8_e4m3fn;
    case low_bit::element_type::e5m2: return grid_element::fp8_e5m2;
    case low_bit::element_type::e3m2: return grid_element::fp6_e3m2;
    case low_bit::element_type::e2m3: return grid_element::fp6_e2m3;
    case low_bit::element_type::e2m1: return grid_element::fp4_e2m1;
    default: break;
  }
  throw argument_error(where, "an element type (fp8, fp6 or fp4)", "a scale type (ue4m3 or e8m0)");
}

}  // namespace detail

}  // namespace xq
