#pragma once
/// \file im2col.hpp
/// im2col and col2im for NHWC batches: the lowering that turns a convolution into
/// one GEMM. Row r = (n, oh, ow) of the column matrix holds the input patch under
/// output pixel (n, oh, ow) in (kh, kw, c) order, zeros where the window hangs over
/// the padding, so
///   cols [N*OH*OW, KH*KW*C]  x  kernel HWIO viewed as [KH*KW*C, F]  =  y [N*OH*OW, F],
/// which is already the NHWC output.
///
/// Both run in parallel over the batch: each image's rows (im2col) and each image's
/// input gradient (col2im) belong to one thread, so results never depend on the
/// thread count.

#include <algorithm>
#include <cstddef>

#include "../config.hpp"
#include "padding.hpp"
#include "parallel.hpp"
#include "threads.hpp"

namespace xq::detail {

/// The kw taps [lo, hi) whose input column lies inside [0, in_w) for an output
/// column whose first tap reads input column `first` (may be negative).
struct tap_range {
  std::size_t lo, hi;
};
inline tap_range valid_taps(std::ptrdiff_t first, std::size_t taps, std::size_t dilation, std::size_t in) {
  const auto d = static_cast<std::ptrdiff_t>(dilation);
  const auto n = static_cast<std::ptrdiff_t>(in);
  std::ptrdiff_t lo = 0, hi = static_cast<std::ptrdiff_t>(taps);
  // (No division when d == 1: this runs once per output pixel in the direct kernels.)
  if (first < 0) lo = std::min(hi, d == 1 ? -first : (-first + d - 1) / d);  // first tap at or after 0
  const std::ptrdiff_t room = n - 1 - first;                                 // tap t fits while t*d <= room
  const std::ptrdiff_t last_ok = room < 0 ? -1 : (d == 1 ? room : room / d);
  hi = std::max(lo, std::min(hi, last_ok + 1));
  return {static_cast<std::size_t>(lo), static_cast<std::size_t>(hi)};
}

/// Whether a per-image loop over `work` elements is worth threads (XQ_PARALLEL_ITEMS_THRESHOLD).
/// Never next to a BLAS with a pthreads pool of its own: after an OpenMP region, libgomp's
/// idle workers spin for milliseconds (its default wait policy) on the cores the BLAS's
/// threads need for the GEMM that follows. On 2 cores, OpenMP im2col/col2im around
/// OpenBLAS GEMMs made a 3x3 32->64 conv step on 64 14x14 images 1.7x slower (21 ms
/// against 12.5 ms) than doing them on the caller's thread.
inline bool batch_threads(std::size_t work) {
  return work >= XQ_PARALLEL_ITEMS_THRESHOLD && !kernels::blas_has_thread_pool();
}
inline bool worth_threads(const window2d& g) { return batch_threads(g.out_pixels() * g.patch_size()); }

/// Calls `tap(kh, kw, pixel)` for every tap of output pixel (oh, ow) that lies on the
/// input, in (kh, kw) order; `pixel` = ih * in_w + iw, the tap's pixel in its image.
/// Taps over the padding are skipped (direct kernels: depthwise, pooling).
template <class Tap>
void for_each_tap(const window2d& g, std::size_t oh, std::size_t ow, Tap&& tap) {
  const auto ih0 = static_cast<std::ptrdiff_t>(oh * g.stride_h) - static_cast<std::ptrdiff_t>(g.pad_top);
  const auto iw0 = static_cast<std::ptrdiff_t>(ow * g.stride_w) - static_cast<std::ptrdiff_t>(g.pad_left);
  const tap_range rows = valid_taps(ih0, g.k_h, g.dilation_h, g.in_h);
  const tap_range cols = valid_taps(iw0, g.k_w, g.dilation_w, g.in_w);
  for (std::size_t kh = rows.lo; kh < rows.hi; ++kh) {
    const auto ih = static_cast<std::size_t>(ih0 + static_cast<std::ptrdiff_t>(kh * g.dilation_h));
    for (std::size_t kw = cols.lo; kw < cols.hi; ++kw) {
      const auto iw = static_cast<std::size_t>(iw0 + static_cast<std::ptrdiff_t>(kw * g.dilation_w));
      tap(kh, kw, ih * g.in_w + iw);
    }
  }
}

/// Copies / zeroes a run of floats. Runs here are short (a tap's channels: 3 floats for
/// a 3x3 kernel on one channel), where a memcpy/memset call per run cost more than the
/// copy (17% of a 28x28x1 -> 32 conv step).
XQ_ALWAYS_INLINE void copy_run(float* dst, const float* src, std::size_t n) {
  XQ_OMP_SIMD
  for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
}
XQ_ALWAYS_INLINE void zero_run(float* dst, std::size_t n) {
  XQ_OMP_SIMD
  for (std::size_t i = 0; i < n; ++i) dst[i] = 0.0f;
}

}  // namespace xq::detail

namespace xq::kernels {

/// Adds the `rows` rows of the row-major matrix `m` (rows x cols) into `sums`, row after
/// row (a bias gradient: the order never depends on threads).
XQ_DECL void add_column_sums(const float* m, std::size_t rows, std::size_t cols, float* sums);

/// Images [begin, end) of `im2col`, on the caller's thread.
XQ_DECL void im2col_images(const float* x, const window2d& g, float* cols, std::size_t begin, std::size_t end);

/// Writes the column matrix of the NHWC batch `x` (shape batch, in_h, in_w, channels)
/// into `cols` (out_pixels() x patch_size(), row-major). Every element is written.
XQ_DECL void im2col(const float* x, const window2d& g, float* cols);

/// Images [begin, end) of `col2im`, on the caller's thread.
XQ_DECL void col2im_images(const float* cols, const window2d& g, float* dx, std::size_t begin, std::size_t end);

/// The adjoint of `im2col`: overwrites `dx` (batch, in_h, in_w, channels) with the
/// sum, over every window that covers an input element, of its `cols` entry.
/// Within an image the sum runs in (oh, ow, kh, kw) order whatever the threads.
XQ_DECL void col2im(const float* cols, const window2d& g, float* dx);

}  // namespace xq::kernels

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/im2col.ipp"
#endif
