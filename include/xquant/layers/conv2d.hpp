#pragma once
/// \file conv2d.hpp
/// `xq::conv2d`: 2-D convolution over NHWC inputs with an HWIO kernel (Keras
/// Conv2D, no activation): strides, `valid`/`same` padding (TF's rules, see
/// padding.hpp) and dilation.
///
/// \code
///   xq::conv2d conv = xq::conv2d(64, 3).strides(2).padding(xq::padding::same).name("stem");
///   xq::var y = conv(x);   // x (N, H, W, C) -> y (N, ceil(H/2), ceil(W/2), 64)
/// \endcode
///
/// Computed as im2col + GEMM: cols [N*OH*OW, KH*KW*C] x kernel [KH*KW*C, F] is the
/// NHWC output, done in blocks of images that keep the columns in cache. A 1x1,
/// stride-1 convolution without padding skips im2col (the input already is the column
/// matrix). Backward reuses the forward's column matrix: dkernel = colsᵀ·dy,
/// dx = col2im(dy·kernelᵀ) block by block, dbias = column sums of dy.

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "../core/layer.hpp"
#include "../core/op_observer.hpp"
#include "../core/random.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../kernels/conv_backend.hpp"
#include "../kernels/gemm.hpp"
#include "../kernels/im2col.hpp"
#include "../kernels/onednn_conv.hpp"
#include "../kernels/padding.hpp"
#include "../kernels/workspace.hpp"
#include "window_layer.hpp"

/// Bytes of column matrix per block of conv2d's lowered GEMMs (detail::images_per_block).
/// Measured on 2 Zen 4 cores (1 MiB L2 each) with OpenBLAS, 3x3 32->64 conv on 64 14x14
/// images, forward + backward (min of 40): 1 MiB 10.6 ms, 2 MiB 10.0 ms, 4 MiB 9.6 ms,
/// unblocked 10.8 ms. Fewer, larger GEMM calls also suffer less when a core is busy.
#ifndef XQ_CONV_BLOCK_BYTES
#define XQ_CONV_BLOCK_BYTES (std::size_t(4) << 20)
#endif

namespace xq {

namespace detail {

/// Images per block of the lowered GEMMs: about XQ_CONV_BLOCK_BYTES of column matrix,
/// so im2col's output is still in cache when the GEMM reads it, and the input-gradient
/// columns when col2im reads them; blocks are balanced (64 images at 18 per block run as
/// 4 blocks of 16, not 3 of 18 and 1 of 10).
XQ_DECL std::size_t images_per_block(const window2d& g);

}  // namespace detail

namespace ops {

/// 2-D convolution of x (N, H, W, C) with kernel w (KH, KW, C, F) [+ bias b (F,)] on the
/// tape; output (N, OH, OW, F). `path` names the caller in errors. `w` may be any var
/// (a fake-quantized kernel, say): its gradient flows back through it.
XQ_DECL var conv2d(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                   const std::string& path = "conv2d");

/// ops::conv2d whose sums (the convolution without its bias, shape (N, OH, OW, F)) the
/// caller computed with a faster kernel for special operands (wrappers/xnor_forward.hpp:
/// XNOR-popcount of ±1 values, bit-identical to the float kernels' sums); the bias is
/// added and the backward is conv2d's.
XQ_DECL var conv2d_with_sums(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                             tensor sums, const std::string& path = "conv2d");

}  // namespace ops

/// 2-D convolution layer (Keras Conv2D without activation). The kernel (KH, KW, C, F),
/// "kernel", is built on the first call from the input's channels, Glorot-uniform with
/// Keras's fans (fan_in = KH*KW*C, fan_out = KH*KW*F); the bias (F,), "bias", starts at 0.
class conv2d : public window_layer<conv2d> {
 public:
  XQ_SPECIAL_MEMBERS(conv2d)
  static constexpr layer_role role = layer_role::conv;
  /// `filters` output channels, a `kernel_size` window (`3` or `{3, 5}`).
  XQ_DECL explicit conv2d(std::size_t filters = 1, size2 kernel_size = 1);

  XQ_DECL var call(const var& x);

  /// Builds the parameters from `x`'s channels unless built (what the first call does).
  XQ_DECL void ensure_built(const var& x);
  /// The layer's convolution with `kernel` and `bias` (undefined: none) in place of its
  /// own parameters: how a quantized twin runs it with a fake-quantized (or folded) kernel.
  XQ_DECL var call_with(const var& x, const var& kernel, const var& bias) const;

  /// Creates the parameters for `in_channels` input channels (the first call does it).
  XQ_DECL void build(std::size_t in_channels);

  std::size_t filters() const noexcept { return filters_; }

 private:
  std::size_t filters_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/conv2d.ipp"
#endif
