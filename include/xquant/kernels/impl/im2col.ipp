#pragma once
/// \file im2col.ipp
/// The code of kernels/im2col.hpp: compiled by every translation unit that includes it in
/// header-only mode, once in <xquant/src.hpp> in separate mode (config.hpp).

#include "../im2col.hpp"

namespace xq::kernels {

XQ_DECL void add_column_sums(const float* m, std::size_t rows, std::size_t cols, float* sums) {
  for (std::size_t r = 0; r < rows; ++r, m += cols) {
    XQ_OMP_SIMD
    for (std::size_t j = 0; j < cols; ++j) sums[j] += m[j];
  }
}

XQ_DECL void im2col_images(const float* x, const window2d& g, float* cols, std::size_t begin, std::size_t end) {
  const std::size_t c = g.channels, k = g.patch_size();
  const std::size_t image_in = g.in_h * g.in_w * c, image_rows = g.out_h * g.out_w;
  for (std::size_t n = begin; n < end; ++n) {
    const float* xn = x + n * image_in;
    float* row = cols + n * image_rows * k;
    for (std::size_t oh = 0; oh < g.out_h; ++oh) {
      const auto ih0 = static_cast<std::ptrdiff_t>(oh * g.stride_h) - static_cast<std::ptrdiff_t>(g.pad_top);
      const xq::detail::tap_range rows = xq::detail::valid_taps(ih0, g.k_h, g.dilation_h, g.in_h);
      for (std::size_t ow = 0; ow < g.out_w; ++ow, row += k) {
        const auto iw0 = static_cast<std::ptrdiff_t>(ow * g.stride_w) - static_cast<std::ptrdiff_t>(g.pad_left);
        const xq::detail::tap_range taps = xq::detail::valid_taps(iw0, g.k_w, g.dilation_w, g.in_w);
        for (std::size_t kh = 0; kh < g.k_h; ++kh) {
          float* dst = row + kh * g.k_w * c;
          if (kh < rows.lo || kh >= rows.hi) {
            xq::detail::zero_run(dst, g.k_w * c);
            continue;
          }
          const std::size_t ih = static_cast<std::size_t>(ih0 + static_cast<std::ptrdiff_t>(kh * g.dilation_h));
          xq::detail::zero_run(dst, taps.lo * c);
          xq::detail::zero_run(dst + taps.hi * c, (g.k_w - taps.hi) * c);
          if (taps.hi == taps.lo) continue;
          const float* src =
              xn + (ih * g.in_w + static_cast<std::size_t>(iw0 + static_cast<std::ptrdiff_t>(taps.lo * g.dilation_w))) * c;
          if (g.dilation_w == 1) {  // the taps are adjacent pixels: one contiguous run
            xq::detail::copy_run(dst + taps.lo * c, src, (taps.hi - taps.lo) * c);
          } else {
            for (std::size_t kw = taps.lo; kw < taps.hi; ++kw, src += g.dilation_w * c)
              xq::detail::copy_run(dst + kw * c, src, c);
          }
        }
      }
    }
  }
}

XQ_DECL void im2col(const float* x, const window2d& g, float* cols) {
  parallel_for_items(g.batch, xq::detail::worth_threads(g),
                     [&](std::size_t begin, std::size_t end) { im2col_images(x, g, cols, begin, end); });
}

XQ_DECL void col2im_images(const float* cols, const window2d& g, float* dx, std::size_t begin, std::size_t end) {
  const std::size_t c = g.channels, k = g.patch_size();
  const std::size_t image_in = g.in_h * g.in_w * c, image_rows = g.out_h * g.out_w;
  for (std::size_t n = begin; n < end; ++n) {
    float* dxn = dx + n * image_in;
    std::fill(dxn, dxn + image_in, 0.0f);
    const float* row = cols + n * image_rows * k;
    for (std::size_t oh = 0; oh < g.out_h; ++oh) {
      const auto ih0 = static_cast<std::ptrdiff_t>(oh * g.stride_h) - static_cast<std::ptrdiff_t>(g.pad_top);
      const xq::detail::tap_range rows = xq::detail::valid_taps(ih0, g.k_h, g.dilation_h, g.in_h);
      for (std::size_t ow = 0; ow < g.out_w; ++ow, row += k) {
        const auto iw0 = static_cast<std::ptrdiff_t>(ow * g.stride_w) - static_cast<std::ptrdiff_t>(g.pad_left);
        const xq::detail::tap_range taps = xq::detail::valid_taps(iw0, g.k_w, g.dilation_w, g.in_w);
        if (taps.hi == taps.lo) continue;
        for (std::size_t kh = rows.lo; kh < rows.hi; ++kh) {
          const std::size_t ih = static_cast<std::size_t>(ih0 + static_cast<std::ptrdiff_t>(kh * g.dilation_h));
          const float* src = row + (kh * g.k_w + taps.lo) * c;
          float* dst =
              dxn + (ih * g.in_w + static_cast<std::size_t>(iw0 + static_cast<std::ptrdiff_t>(taps.lo * g.dilation_w))) * c;
          if (g.dilation_w == 1) {  // one contiguous run in both
            const std::size_t len = (taps.hi - taps.lo) * c;
            XQ_OMP_SIMD
            for (std::size_t i = 0; i < len; ++i) dst[i] += src[i];
          } else {
            for (std::size_t kw = taps.lo; kw < taps.hi; ++kw, src += c, dst += g.dilation_w * c) {
              XQ_OMP_SIMD
              for (std::size_t i = 0; i < c; ++i) dst[i] += src[i];
            }
          }
        }
      }
    }
  }
}

XQ_DECL void col2im(const float* cols, const window2d& g, float* dx) {
  parallel_for_items(g.batch, xq::detail::worth_threads(g),
                     [&](std::size_t begin, std::size_t end) { col2im_images(cols, g, dx, begin, end); });
}

}  // namespace xq::kernels
