#pragma once
/// \file conv2d_transpose.hpp
/// `xq::conv2d_transpose`: the transposed 2-D convolution (Keras Conv2DTranspose, TF's
/// conv2d_transpose): the gradient of a convolution with respect to its input, used as a
/// learned upsampling (decoders, the hourglass of an optical-flow network). Its kernel is
/// (KH, KW, F, C) — output channels F before input channels C, as Keras stores it — and
/// its output is H * stride (`same`) or H * stride + max(KH' - stride, 0) (`valid`, KH' the
/// dilated kernel), Keras's sizes without `output_padding`.
///
/// Computed as the convolution's adjoint on the portable path: the input times the kernel
/// matrix transposed gives every window's contribution (one GEMM), which `col2im` adds into
/// the output; the backward pass is `im2col` of dy, then a GEMM for dx (the forward
/// convolution of dy) and one for the kernel.
///
/// \code
///   xq::conv2d_transpose up(32, 3);  // 32 filters, 3x3
///   up.strides(2).padding(xq::padding::same);
///   xq::var y = up(x);               // (N, 2H, 2W, 32)
/// \endcode

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "conv2d.hpp"
#include "window_layer.hpp"

namespace xq {

namespace ops {

/// The transposed convolution of NHWC `x` with kernel `w` (KH, KW, F, C) and optional
/// bias `b` (F,). `path` names the caller in errors.
XQ_DECL var conv2d_transpose(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                             const std::string& path = "conv2d_transpose");

}  // namespace ops

/// Transposed convolution layer. The kernel (KH, KW, F, C), "kernel", is built on the first
/// call from the input's channels, Glorot-uniform with Keras's fans (fan_in = KH*KW*F,
/// fan_out = KH*KW*C, read from the kernel's shape as Keras reads them); the bias (F,),
/// "bias", starts at 0.
class conv2d_transpose : public window_layer<conv2d_transpose> {
 public:
  XQ_SPECIAL_MEMBERS(conv2d_transpose)
  /// `filters` output channels, a `kernel_size` window (`3` or `{3, 5}`).
  XQ_DECL explicit conv2d_transpose(std::size_t filters = 1, size2 kernel_size = 1);

  XQ_DECL var call(const var& x);
  /// Builds the parameters from `x`'s channels unless built (what the first call does).
  XQ_DECL void ensure_built(const var& x);
  /// The layer's op with `kernel` and `bias` (undefined: none) in place of its own
  /// parameters: how a quantized twin runs it with a fake-quantized kernel.
  XQ_DECL var call_with(const var& x, const var& kernel, const var& bias) const;
  /// Creates the parameters for `in_channels` input channels.
  XQ_DECL void build(std::size_t in_channels);

  std::size_t filters() const noexcept { return filters_; }

 private:
  std::size_t filters_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/conv2d_transpose.ipp"
#endif
