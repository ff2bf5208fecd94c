#pragma once
/// \file separable_conv2d.hpp
/// `xq::separable_conv2d`: Keras SeparableConv2D, a depthwise convolution (each input
/// channel through `depth_multiplier` filters of its own, no bias) followed by a 1x1
/// convolution to `filters` channels that adds the bias. Weights as Keras's:
/// `depthwise.kernel()` (KH, KW, C, M), `pointwise.kernel()` (1, 1, C*M, F),
/// `pointwise.bias()` (F,), Glorot-uniform with Keras's fans.
///
/// \code
///   auto sep = xq::separable_conv2d(64, 3).strides(2).padding(xq::padding::same);
///   xq::var y = sep(x);                    // (N, H, W, C) -> (N, H/2, W/2, 64)
///   xq::sequential<xq::separable_conv2d<>, xq::relu> block(sep, xq::relu());
/// \endcode
///
/// A composite of the two layers, because that is what it is everywhere downstream:
/// TFLite's converter and ONNX run it as two convolutions. So its quantized twin is
/// theirs (NVIDIA's scheme: the input and the per-channel kernel of each, the pointwise
/// input being the depthwise output), the integer engine and the ONNX exporter lower it
/// as two ops, and the summary counts both ops' MACs. A class template over its two
/// children's types (the library's rule for composites), so `quantize_t` rebuilds it
/// over their twins; `xq::separable_conv2d<>` names the float type.

#include <cstddef>

#include "../core/children.hpp"
#include "../core/var.hpp"
#include "conv2d.hpp"
#include "depthwise_conv2d.hpp"

namespace xq {

template <class Depthwise = depthwise_conv2d, class Pointwise = conv2d>
class separable_conv2d {
 public:
  Depthwise depthwise;
  Pointwise pointwise;
  XQ_CHILDREN(depthwise, pointwise)

  separable_conv2d() = default;
  /// `filters` output channels, a `kernel_size` window (`3` or `{3, 5}`),
  /// `depth_multiplier` depthwise filters per input channel.
  explicit separable_conv2d(std::size_t filters, size2 kernel_size = 1, std::size_t depth_multiplier = 1)
      : depthwise(depthwise_conv2d(kernel_size, depth_multiplier).use_bias(false)), pointwise(conv2d(filters, 1)) {}

  /// Window step of the depthwise convolution (`2` or `{2, 1}`); default 1.
  separable_conv2d& strides(size2 s) {
    depthwise.strides(s);
    return *this;
  }
  /// `xq::padding::valid` (default) or `same`, of the depthwise convolution.
  separable_conv2d& padding(xq::padding p) {
    depthwise.padding(p);
    return *this;
  }
  /// Spacing between the depthwise kernel's taps (`2` or `{2, 1}`); default 1.
  separable_conv2d& dilation(size2 d) {
    depthwise.dilation(d);
    return *this;
  }
  /// Whether the pointwise convolution adds the bias (default true); before the first call.
  separable_conv2d& use_bias(bool on) {
    pointwise.use_bias(on);
    return *this;
  }

  var operator()(const var& x) { return pointwise(depthwise(x)); }
};

}  // namespace xq
