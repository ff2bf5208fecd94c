#pragma once
/// \file onednn_conv.hpp
/// Float conv2d through oneDNN's convolution primitives, on xquant's own layouts: NHWC
/// activations (used in place, no reorder) and HWIO kernels. The kernel is handed to each
/// primitive in the blocked layout that primitive picked (`format_tag::any`), which is
/// what selects oneDNN's direct AVX2 / AVX-512 kernels: with a plain HWIO kernel oneDNN
/// falls back to its own im2col + GEMM ("gemm:jit"), measured 1.6x slower than xquant's.
/// The kernel is reordered into that layout per call (18 K floats for a 3x3 32 -> 64
/// conv, against 0.8 M outputs) and its gradient back to HWIO.
///
/// Primitives are created once per geometry and thread count and kept (a map under a
/// mutex); each keeps a lock while it runs, since its reordered-kernel buffers are its own. oneDNN runs on the
/// OpenMP pool OpenBLAS and xquant's loops use (Debian builds it with OpenMP), with the
/// calling thread's OpenMP thread count.
///
/// Only compiled when XQ_HAVE_ONEDNN is 1 (conv_backend.hpp decides when it is used).

#include <cstddef>

#include "../config.hpp"
#include "conv_backend.hpp"
#include "padding.hpp"

#if XQ_HAVE_ONEDNN

namespace xq::kernels::onednn {

/// y (batch, out_h, out_w, f) = conv(x (batch, in_h, in_w, channels), w (k_h, k_w,
/// channels, f)) + bias (f, may be null). Every element of y is written.
XQ_DECL void conv2d_forward(const window2d& g, std::size_t f, const float* x, const float* w, const float* bias,
                            float* y);

/// dx (the input's shape) = the input gradient for dy (the output's shape). Written.
XQ_DECL void conv2d_backward_data(const window2d& g, std::size_t f, const float* dy, const float* w, float* dx);

/// dw (HWIO) and db (f, may be null) = the kernel and bias gradients. Written.
XQ_DECL void conv2d_backward_weights(const window2d& g, std::size_t f, const float* x, const float* dy, float* dw,
                                     float* db);

/// oneDNN's name for the implementation it picked for the forward of this geometry
/// ("jit:avx2", "gemm:jit", ...): for benchmarks and tests.
XQ_DECL const char* forward_implementation(const window2d& g, std::size_t f, bool bias);

}  // namespace xq::kernels::onednn

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/onednn_conv.ipp"
#endif

#endif  // XQ_HAVE_ONEDNN
