#pragma once
/// \file depthwise_conv2d.hpp
/// `xq::depthwise_conv2d`: each input channel convolved with its own
/// `depth_multiplier` filters (Keras DepthwiseConv2D, no activation). Kernel
/// (KH, KW, C, M), named "depthwise_kernel" as in Keras; output channel c*M + m
/// is input channel c through filter m, as in Keras and TF.
///
/// \code
///   xq::depthwise_conv2d dw = xq::depthwise_conv2d(3, 2).strides(2).padding(xq::padding::same);
///   xq::var y = dw(x);   // x (N, H, W, C) -> y (N, ceil(H/2), ceil(W/2), 2*C)
/// \endcode
///
/// Direct loops: NHWC keeps channels innermost, so every tap is one contiguous
/// multiply-add over a pixel's channels, which the compiler vectorizes. No GEMM: each
/// output reads only KH*KW inputs. A multiplier M > 1 first repeats each input channel
/// M times, which turns the op into a multiplier-1 one over C*M channels.

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../kernels/padding.hpp"
#include "window_layer.hpp"

namespace xq {

namespace detail {

/// x (pixels, c) -> (pixels, c*m), channel c repeated m times (channel c*m + j reads c):
/// with it a depthwise conv of multiplier m is a multiplier-1 conv over c*m channels,
/// whose taps are plain vectorizable rows.
XQ_DECL void repeat_channels(const float* x, std::size_t pixels, std::size_t c, std::size_t m, float* out);

/// The input's pixels with channels repeated for the multiplier (or the input itself).
struct depthwise_input {
  std::vector<float> repeated;
  const float* data;
  XQ_DECL depthwise_input(const tensor& x, std::size_t c, std::size_t m);
};

/// y = depthwise(x, w) (+ b) with multiplier 1 over g.channels channels.
XQ_DECL void depthwise_forward(const float* x, const float* w, const float* b, const window2d& g, float* y);

/// dw (KH, KW, C) of multiplier 1: one partial sum per image, added in image order, so
/// the result does not depend on the threads.
XQ_DECL void depthwise_filter_grad(const float* x, const float* dy, const window2d& g, float* dw);

/// dx of multiplier 1 (overwritten): each image by one thread, in (oh, ow, kh, kw) order.
XQ_DECL void depthwise_input_grad(const float* dy, const float* w, const window2d& g, float* dx);

}  // namespace detail

namespace ops {

/// Depthwise 2-D convolution of x (N, H, W, C) with kernel w (KH, KW, C, M) [+ bias
/// b (C*M,)] on the tape; output (N, OH, OW, C*M). `path` names the caller in errors.
XQ_DECL var depthwise_conv2d(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                             const std::string& path = "depthwise_conv2d");

}  // namespace ops

/// Depthwise 2-D convolution layer (Keras DepthwiseConv2D without activation). The
/// kernel (KH, KW, C, M), "depthwise_kernel", is built on the first call from the
/// input's channels, Glorot-uniform with Keras's fans (fan_in = KH*KW*C,
/// fan_out = KH*KW*M); the bias (C*M,), "bias", starts at 0.
class depthwise_conv2d : public window_layer<depthwise_conv2d> {
 public:
  XQ_SPECIAL_MEMBERS(depthwise_conv2d)
  static constexpr layer_role role = layer_role::conv;
  /// A `kernel_size` window (`3` or `{3, 5}`), `depth_multiplier` filters per input channel.
  explicit depthwise_conv2d(size2 kernel_size = 1, std::size_t depth_multiplier = 1)
      : window_layer<depthwise_conv2d>("depthwise_conv2d", kernel_size), depth_multiplier_(depth_multiplier) {
    if (depth_multiplier == 0) throw argument_error("depthwise_conv2d", "depth_multiplier of at least 1", "0");
  }

  XQ_DECL var call(const var& x);

  /// Builds the parameters from `x`'s channels unless built (what the first call does).
  XQ_DECL void ensure_built(const var& x);
  /// The layer's depthwise convolution with `kernel` and `bias` (undefined: none) in place of its
  /// own parameters: how a quantized twin runs it with a fake-quantized (or folded) kernel.
  XQ_DECL var call_with(const var& x, const var& kernel, const var& bias) const;

  /// Creates the parameters for `in_channels` input channels (the first call does it).
  XQ_DECL void build(std::size_t in_channels);

  /// The kernel (window_layer::kernel()) is the depthwise kernel (KH, KW, C, M).
  std::size_t depth_multiplier() const noexcept { return depth_multiplier_; }

 private:
  std::size_t depth_multiplier_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/depthwise_conv2d.ipp"
#endif
