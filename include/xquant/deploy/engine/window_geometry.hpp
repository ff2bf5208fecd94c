#pragma once
/// \file window_geometry.hpp
/// `xq::deploy::window_geometry`: the window of a convolution or pooling op of the integer
/// engine — its size, strides, dilation and explicit padding (top, left, bottom, right),
/// from the layer's Keras padding at the lowered input size.

#include <array>
#include <cstddef>
#include <string>

#include "../../config.hpp"

namespace xq::deploy {

struct window_geometry {
  std::array<std::size_t, 2> window{1, 1}, strides{1, 1}, dilation{1, 1};
  std::array<std::size_t, 4> pads{0, 0, 0, 0};
  /// The output extent along axis `a` (0: rows, 1: columns) for an input extent `in`.
  XQ_DECL std::size_t output_extent(std::size_t in, int a) const noexcept;
};

/// "3x3 stride 1x1 pads 1,1,1,1" (dilation and pads only where not trivial).
XQ_DECL std::string describe(const window_geometry& g);

/// The largest window, stride, dilation and pad a saved model may hold (integer_model_file.hpp).
inline constexpr std::size_t max_window_extent = 4096;

/// Throws argument_error naming `where` unless every window, stride and dilation is at
/// least 1 and every one of them and every pad at most max_window_extent.
XQ_DECL void check_window(const window_geometry& g, const std::string& where);

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/window_geometry.ipp"
#endif
