#pragma once
/// \file quant_window_layer.ipp
/// pad_same_with_value's code (wrappers/quant_window_layer.hpp).

#include "../quant_window_layer.hpp"
#include "../../layers/pad2d.hpp"

namespace xq {

namespace detail {

XQ_DECL void pad_same_with_value(var& x, conv2d_geometry& geometry, std::size_t k_h, std::size_t k_w, float pad_value,
                                 const std::string& path) {
  if (geometry.padding != padding::same || pad_value == 0.0f) return;
  require_shape(path, x.shape(), {any('N'), any('H'), any('W'), any('C')});
  (void)resolve_window(path, x.shape(), k_h, k_w, geometry);  // the shape errors of a same conv
  const window_axis h = resolve_axis(x.shape()[1], k_h, geometry.strides[0], geometry.dilation[0], padding::same);
  const window_axis w = resolve_axis(x.shape()[2], k_w, geometry.strides[1], geometry.dilation[1], padding::same);
  x = ops::pad2d(x, h.pad_before, h.pad_after, w.pad_before, w.pad_after, pad_value, path);
  geometry.padding = padding::valid;
}

}  // namespace detail

}  // namespace xq
