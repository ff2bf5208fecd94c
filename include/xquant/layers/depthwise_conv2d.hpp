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
class depthwise_conv2d : public layer<depthwise_conv2d> {
 public:
  XQ_SPECIAL_MEMBERS(depthwise_conv2d)
  static constexpr layer_role role = layer_role::conv;
  /// A `kernel_size` window (`3` or `{3, 5}`), `depth_multiplier` filters per input channel.
  explicit depthwise_conv2d(size2 kernel_size = 1, std::size_t depth_multiplier = 1)
      : layer<depthwise_conv2d>("depthwise_conv2d"),
        kernel_size_(detail::positive_size2("depthwise_conv2d", "kernel_size", kernel_size)),
        depth_multiplier_(depth_multiplier) {
    if (depth_multiplier == 0) throw argument_error("depthwise_conv2d", "depth_multiplier of at least 1", "0");
  }

  /// Window step (`2` or `{2, 1}`); default 1.
  depthwise_conv2d& strides(size2 s) {
    geometry_.strides = detail::positive_size2(path(), "strides", s);
    return *this;
  }
  /// `xq::padding::valid` (default) or `same`.
  depthwise_conv2d& padding(xq::padding p) {
    geometry_.padding = p;
    return *this;
  }
  /// Spacing between kernel taps (`2` or `{2, 1}`); default 1.
  depthwise_conv2d& dilation(size2 d) {
    geometry_.dilation = detail::positive_size2(path(), "dilation", d);
    return *this;
  }
  /// Whether the layer adds a bias (default true); set before the first call.
  depthwise_conv2d& use_bias(bool on) {
    if (kernel_ && on != use_bias_)
      throw argument_error(path(), "use_bias set before the layer is built", "a built layer");
    use_bias_ = on;
    return *this;
  }

  XQ_DECL var call(const var& x);

  /// Builds the parameters from `x`'s channels unless built (what the first call does).
  XQ_DECL void ensure_built(const var& x);
  /// The layer's depthwise convolution with `kernel` and `bias` (undefined: none) in place of its
  /// own parameters: how a quantized twin runs it with a fake-quantized (or folded) kernel.
  XQ_DECL var call_with(const var& x, const var& kernel, const var& bias) const;

  /// Creates the parameters for `in_channels` input channels (the first call does it).
  XQ_DECL void build(std::size_t in_channels);

  std::vector<parameter_ptr> parameters() const { return {kernel_, bias_}; }
  /// Each stored parameter slot, null ones included (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(kernel_);
    f(bias_);
  }
  /// The depthwise kernel (KH, KW, C, M).
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  std::array<std::size_t, 2> kernel_size() const noexcept { return kernel_size_; }
  std::size_t depth_multiplier() const noexcept { return depth_multiplier_; }
  std::array<std::size_t, 2> strides() const noexcept { return geometry_.strides; }
  xq::padding padding() const noexcept { return geometry_.padding; }
  std::array<std::size_t, 2> dilation() const noexcept { return geometry_.dilation; }
  bool use_bias() const noexcept { return use_bias_; }
  const conv2d_geometry& geometry() const noexcept { return geometry_; }

 private:
  std::array<std::size_t, 2> kernel_size_;
  std::size_t depth_multiplier_;
  conv2d_geometry geometry_;
  bool use_bias_ = true;
  parameter_ptr kernel_, bias_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/depthwise_conv2d.ipp"
#endif
