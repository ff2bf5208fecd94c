#pragma once
/// \file max_pool2d.ipp
/// max_pool2d's code (layers/max_pool2d.hpp).

#include <algorithm>
#include <cstdint>
#include <memory>

#include "../max_pool2d.hpp"
#include "../../kernels/branchless.hpp"
#include "../../kernels/im2col.hpp"
#include "../../kernels/parallel.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(max_pool2d)

namespace ops {

XQ_DECL var max_pool2d(const var& x, size2 pool_size, size2 strides, xq::padding p,
                       const std::string& path) {
  const window2d g = detail::pool_window(path, x.shape(), pool_size, strides, p);
  const std::size_t c = g.channels, image_in = g.in_h * g.in_w * c, image_out = g.out_h * g.out_w * c;
  const bool threads = detail::batch_threads(g.batch * image_out * g.k_h * g.k_w);
  const bool record = needs_grad(x);

  tensor y = tensor::from_shape({g.batch, g.out_h, g.out_w, c});
  // Per output element: the winning pixel (ih * in_w + iw) in its image; 32 bits are
  // plenty for one image and halve the memory kept until backward.
  std::shared_ptr<std::vector<std::uint32_t>> argmax;
  if (record) argmax = std::make_shared<std::vector<std::uint32_t>>(y.size());
  const float* xp = x.value().data();
  float* yp = y.data();
  std::uint32_t* ap = record ? argmax->data() : nullptr;
  kernels::parallel_for_items(g.batch, threads, [&](std::size_t begin, std::size_t end) {
    std::vector<std::uint32_t> scratch(ap ? 0 : c);
    for (std::size_t n = begin; n < end; ++n) {
      const float* xn = xp + n * image_in;
      float* yr = yp + n * image_out;
      std::uint32_t* ar = ap ? ap + n * image_out : nullptr;
      for (std::size_t oh = 0; oh < g.out_h; ++oh)
        for (std::size_t ow = 0; ow < g.out_w; ++ow, yr += c) {
          std::uint32_t* best = ar ? ar : scratch.data();
          bool first = true;
          detail::for_each_tap(g, oh, ow, [&](std::size_t, std::size_t, std::size_t pixel) {
            const float* xr = xn + pixel * c;
            const auto at = static_cast<std::uint32_t>(pixel);
            if (first) {
              XQ_OMP_SIMD
              for (std::size_t k = 0; k < c; ++k) {
                yr[k] = xr[k];
                best[k] = at;
              }
              first = false;
              return;
            }
            // Strictly greater: the first max stays. Selected by masks (branchless.hpp):
            // as `wins ? x : y` GCC stored through masked stores, 10% of a CNN step.
            XQ_OMP_SIMD
            for (std::size_t k = 0; k < c; ++k) {
              const bool wins = xr[k] > yr[k];
              yr[k] = kernels::branchless_select(wins, xr[k], yr[k]);
              best[k] = kernels::branchless_select(wins, at, best[k]);
            }
          });
          if (ar) ar += c;
        }
    }
  });

  return make_result(std::move(y), record, [x, g, threads, argmax](const tensor& dy) {
    const std::size_t c = g.channels, image_in = g.in_h * g.in_w * c, image_out = g.out_h * g.out_w * c;
    tensor dx = tensor::from_shape(x.shape());
    float* dxp = dx.data();
    const float* dyp = dy.data();
    const std::uint32_t* ap = argmax->data();
    kernels::parallel_for_items(g.batch, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t n = begin; n < end; ++n) {
        // Zeroed then scattered into, one image at a time: the fill (a streaming memset,
        // which reads nothing) leaves the image in cache for the scatter. Writing each
        // pixel once instead (dy where it won, 0 elsewhere) was 1.7x slower: every first
        // write to the fresh buffer read its line from memory.
        float* dxn = dxp + n * image_in;
        std::fill(dxn, dxn + image_in, 0.0f);
        const float* dyr = dyp + n * image_out;
        const std::uint32_t* ar = ap + n * image_out;
        for (std::size_t i = 0; i < image_out; i += c)
          for (std::size_t k = 0; k < c; ++k) dxn[std::size_t(ar[i + k]) * c + k] += dyr[i + k];
      }
    });
    add_grad(x, std::move(dx));
  });
}

}  // namespace ops

XQ_DECL var max_pool2d::call(const var& x) { return ops::max_pool2d(x, pool_size_, strides_, padding_, path()); }

XQ_DECL max_pool2d::max_pool2d(size2 pool_size, size2 strides, xq::padding p)
    : layer<max_pool2d>("max_pooling2d"),
      pool_size_(detail::positive_size2("max_pooling2d", "pool_size", pool_size)),
      strides_(detail::positive_size2("max_pooling2d", "strides", strides)),
      padding_(p) {}

}  // namespace xq
