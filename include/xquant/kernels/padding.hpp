#pragma once
/// \file padding.hpp
/// Where a sliding window (a convolution kernel, a pooling window) may sit over an
/// NHWC input: TensorFlow's `valid` / `same` padding, the output size and the
/// zeros added before the first row and column, with stride and dilation.
///
/// The rules are TF's (`GetWindowedOutputSizeVerbose`), so shapes and results
/// match Keras: with k' = (k - 1) * dilation + 1 the dilated window extent,
///  - valid: out = (in - k' + stride) / stride, no padding;
///  - same:  out = ceil(in / stride), total padding max((out - 1) * stride + k' - in, 0),
///           of which floor(total / 2) goes before (top, left) and the rest after.

#include <array>
#include <cstddef>
#include <string>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/shape_check.hpp"
#include "../core/tensor.hpp"

namespace xq {

/// How a window treats the input's border (Keras's `padding` argument).
enum class padding {
  valid,  ///< windows lie entirely inside the input
  same,   ///< zero padding so that out = ceil(in / stride)
};

/// "valid" or "same".
inline const char* to_string(padding p) noexcept { return p == padding::same ? "same" : "valid"; }

/// Two sizes (height, width) of a window, a stride or a dilation: one number for
/// both (`3`), a pair (`{3, 2}`) or a `std::array`.
struct size2 {
  std::array<std::size_t, 2> hw;
  size2(std::size_t both) : hw{both, both} {}                        // NOLINT: implicit on purpose
  size2(std::size_t h, std::size_t w) : hw{h, w} {}                  // NOLINT
  size2(const std::array<std::size_t, 2>& a) : hw(a) {}              // NOLINT
  operator std::array<std::size_t, 2>() const noexcept { return hw; }  // NOLINT
};

/// Strides, padding and dilation of a 2-D window op (what `ops::conv2d` takes).
struct conv2d_geometry {
  std::array<std::size_t, 2> strides{1, 1};
  xq::padding padding = xq::padding::valid;
  std::array<std::size_t, 2> dilation{1, 1};
};

/// One spatial axis of a window op, resolved.
struct window_axis {
  std::size_t out = 0;         ///< output size (0: the input is too small)
  std::size_t pad_before = 0;  ///< implicit zeros before the first input element
  std::size_t pad_after = 0;   ///< implicit zeros after the last one
};

/// The extent a window of `k` taps covers with dilation `d`.
constexpr std::size_t dilated_extent(std::size_t k, std::size_t d) noexcept { return (k - 1) * d + 1; }

/// TF's output size and padding for one axis (see the file comment).
/// `stride` and `dilation` must be at least 1.
inline window_axis resolve_axis(std::size_t in, std::size_t k, std::size_t stride, std::size_t dilation,
                                padding p) noexcept {
  window_axis a;
  const std::size_t extent = dilated_extent(k, dilation);
  if (p == padding::valid) {
    a.out = in >= extent ? (in - extent) / stride + 1 : 0;
    return a;
  }
  a.out = (in + stride - 1) / stride;
  if (a.out == 0) return a;
  const std::size_t span = (a.out - 1) * stride + extent;
  const std::size_t total = span > in ? span - in : 0;
  a.pad_before = total / 2;  // TF puts an odd zero after (bottom, right), not before
  a.pad_after = total - a.pad_before;
  return a;
}

/// Every size of a 2-D window over an NHWC batch, padding rules applied; what
/// the im2col and pooling kernels loop over.
struct window2d {
  std::size_t batch = 0, in_h = 0, in_w = 0, channels = 0;
  std::size_t k_h = 1, k_w = 1;
  std::size_t stride_h = 1, stride_w = 1;
  std::size_t dilation_h = 1, dilation_w = 1;
  std::size_t out_h = 0, out_w = 0;
  std::size_t pad_top = 0, pad_left = 0;

  /// Elements of one im2col row: k_h * k_w * channels (the HWIO kernel's first three axes).
  std::size_t patch_size() const noexcept { return k_h * k_w * channels; }
  /// Output pixels of the whole batch: batch * out_h * out_w (im2col rows).
  std::size_t out_pixels() const noexcept { return batch * out_h * out_w; }
  /// Whether a window is the pixel itself (1x1, stride 1, no padding): the input is
  /// already the im2col matrix.
  bool is_pointwise() const noexcept {
    return k_h == 1 && k_w == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 && pad_left == 0 &&
           out_h == in_h && out_w == in_w;
  }
};

/// Resolves a (k_h, k_w) window with `geometry` over an NHWC input of shape `x_shape`
/// (rank 4, already checked). Throws `shape_error` naming `path` when the input is
/// too small for one window, e.g. "conv: expected input of shape (N, H >= 5, W >= 5, C)
/// for a 3x3 window with dilation (2, 2) and valid padding, given (1, 4, 9, 3)" (a
/// window can be larger than the input only with `same` padding).
template <class Shape>
window2d resolve_window(const std::string& path, const Shape& x_shape, std::size_t k_h, std::size_t k_w,
                        const conv2d_geometry& geometry) {
  window2d g;
  g.batch = x_shape[0];
  g.in_h = x_shape[1];
  g.in_w = x_shape[2];
  g.channels = x_shape[3];
  g.k_h = k_h;
  g.k_w = k_w;
  g.stride_h = geometry.strides[0];
  g.stride_w = geometry.strides[1];
  g.dilation_h = geometry.dilation[0];
  g.dilation_w = geometry.dilation[1];
  const window_axis h = resolve_axis(g.in_h, k_h, g.stride_h, g.dilation_h, geometry.padding);
  const window_axis w = resolve_axis(g.in_w, k_w, g.stride_w, g.dilation_w, geometry.padding);
  if (h.out == 0 || w.out == 0) {
    const bool same = geometry.padding == padding::same;
    const std::size_t min_h = same ? 1 : dilated_extent(k_h, g.dilation_h);
    const std::size_t min_w = same ? 1 : dilated_extent(k_w, g.dilation_w);
    const std::string dilated =
        g.dilation_h == 1 && g.dilation_w == 1
            ? std::string()
            : detail::concat(" with dilation (", g.dilation_h, ", ", g.dilation_w, ")");
    throw shape_error(path,
                      detail::concat("input of shape (N, H >= ", min_h, ", W >= ", min_w, ", C) for a ", k_h, "x",
                                     k_w, " window", dilated, " and ", to_string(geometry.padding), " padding"),
                      detail::shape_string(x_shape));
  }
  g.out_h = h.out;
  g.out_w = w.out;
  g.pad_top = h.pad_before;
  g.pad_left = w.pad_before;
  return g;
}

namespace detail {

/// Throws `argument_error` unless both sizes are at least 1 (kernel sizes, strides, dilations).
XQ_DECL std::array<std::size_t, 2> positive_size2(const std::string& where, const char* what, size2 s);

/// The window geometry of a pooling op over x (rank 4 checked here).
template <class Shape>
window2d pool_window(const std::string& path, const Shape& x_shape, size2 pool_size, size2 strides, xq::padding p) {
  require_shape(path, x_shape, {any('N'), any('H'), any('W'), any('C')});
  const auto k = positive_size2(path, "pool_size", pool_size);
  conv2d_geometry geometry;
  geometry.strides = positive_size2(path, "strides", strides);
  geometry.padding = p;
  return resolve_window(path, x_shape, k[0], k[1], geometry);
}

}  // namespace detail
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/padding.ipp"
#endif
