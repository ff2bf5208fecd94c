#pragma once
/// \file conv_backend.hpp
/// Which code computes a float convolution (conv2d forward, input gradient, kernel and
/// bias gradients): the portable lowering to im2col + a BLAS GEMM (im2col.hpp, gemm.hpp),
/// or oneDNN's convolution primitives (onednn_conv.hpp) when xquant was built with oneDNN
/// (CMake finds `dnnl`: Debian's libdnnl-dev; XQ_HAVE_ONEDNN=1).
///
/// `automatic` (the default) takes oneDNN where it is built in and the results need not
/// be the same bits on every thread count, im2col + GEMM otherwise:
///  - oneDNN's direct AVX2 kernels ran the CNN's 28x28x1 -> 32 conv 2.6-4.9x and its
///    14x14x32 -> 64 conv 1.25-1.3x faster than the lowering on one Zen 3 core, 11-14x and
///    1.4-1.5x on two (bench/README.md, "The convolution backends");
///  - its kernel gradient splits the batch over the threads and adds the partial sums, so
///    its bits depend on the thread count: deterministic mode (threads.hpp) keeps the
///    lowering, whose GEMMs are cut the same way on any thread count.
/// im2col + GEMM stays the reference: tests/kernels/test_conv_backend.cpp checks that
/// both agree within float rounding (strides, dilation, padding, bias, one input channel,
/// a 1x3 window). A pointwise conv is one GEMM on either backend (conv2d.ipp).
///
/// \code
///   xq::kernels::conv_backend_scope oracle(xq::kernels::conv_backend::im2col_gemm);
/// \endcode

#include <atomic>
#include <string>

#include "../core/error.hpp"
#include "padding.hpp"
#include "threads.hpp"

#ifndef XQ_HAVE_ONEDNN
#define XQ_HAVE_ONEDNN 0
#endif

namespace xq::kernels {

enum class conv_backend {
  automatic,    ///< oneDNN when built in and not in deterministic mode, else im2col_gemm
  im2col_gemm,  ///< the portable lowering: im2col (col2im) and BLAS GEMMs; the oracle
  onednn,       ///< oneDNN's convolution primitives (only in a build with oneDNN)
};

/// Whether this build has oneDNN's convolutions.
constexpr bool onednn_available() noexcept { return XQ_HAVE_ONEDNN != 0; }

}  // namespace xq::kernels

// (In xq::detail, as threads.hpp's helpers: an xq::kernels::detail would hide xq::detail
// from the kernels headers that name `detail::` unqualified.)
namespace xq::detail {
inline std::atomic<kernels::conv_backend>& conv_backend_setting() {
  static std::atomic<kernels::conv_backend> b{kernels::conv_backend::automatic};
  return b;
}
}  // namespace xq::detail

namespace xq::kernels {

/// The process-wide choice (like deterministic mode).
inline conv_backend current_conv_backend() noexcept {
  return xq::detail::conv_backend_setting().load(std::memory_order_relaxed);
}

/// Sets the process-wide choice. Asking for oneDNN in a build without it throws
/// `argument_error` (nothing is changed).
inline void set_conv_backend(conv_backend b) {
  if (b == conv_backend::onednn && !onednn_available())
    throw argument_error("set_conv_backend", "a backend this build has (automatic or im2col_gemm)",
                         "onednn: xquant was built without oneDNN (install libdnnl-dev and reconfigure)");
  xq::detail::conv_backend_setting().store(b, std::memory_order_relaxed);
}

/// Sets the backend for its scope and restores the previous one (process-wide).
class conv_backend_scope {
 public:
  explicit conv_backend_scope(conv_backend b) : previous_(current_conv_backend()) { set_conv_backend(b); }
  ~conv_backend_scope() { xq::detail::conv_backend_setting().store(previous_, std::memory_order_relaxed); }
  conv_backend_scope(const conv_backend_scope&) = delete;
  conv_backend_scope& operator=(const conv_backend_scope&) = delete;

 private:
  conv_backend previous_;
};

/// Whether oneDNN computes a convolution of geometry `g` now: the setting, deterministic
/// mode, and a geometry oneDNN takes (its bottom / right padding, implied by the output
/// size, must not be negative: a strided `valid` window that leaves input rows unread).
inline bool use_onednn(const window2d& g) {
  if (!onednn_available()) return false;
  const conv_backend b = current_conv_backend();
  if (b == conv_backend::im2col_gemm || (b == conv_backend::automatic && deterministic())) return false;
  if (g.batch == 0 || g.out_h == 0 || g.out_w == 0) return false;
  const auto reach = [](std::size_t out, std::size_t stride, std::size_t k, std::size_t dilation) {
    return (out - 1) * stride + (k - 1) * dilation + 1;
  };
  return reach(g.out_h, g.stride_h, g.k_h, g.dilation_h) >= g.in_h + g.pad_top &&
         reach(g.out_w, g.stride_w, g.k_w, g.dilation_w) >= g.in_w + g.pad_left;
}

}  // namespace xq::kernels
