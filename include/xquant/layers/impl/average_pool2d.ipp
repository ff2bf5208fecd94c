#pragma once
/// \file average_pool2d.ipp
/// average_pool2d's code (layers/average_pool2d.hpp).

#include <algorithm>

#include "../average_pool2d.hpp"
#include "../../kernels/im2col.hpp"
#include "../../kernels/parallel.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(average_pool2d)

namespace ops {

XQ_DECL var average_pool2d(const var& x, size2 pool_size, size2 strides, xq::padding p,
                           const std::string& path) {
  const window2d g = detail::pool_window(path, x.shape(), pool_size, strides, p);
  const std::size_t c = g.channels, image_in = g.in_h * g.in_w * c, image_out = g.out_h * g.out_w * c;
  const bool threads = detail::batch_threads(g.batch * image_out * g.k_h * g.k_w);

  tensor y = tensor::from_shape({g.batch, g.out_h, g.out_w, c});
  const float* xp = x.value().data();
  float* yp = y.data();
  kernels::parallel_for_items(g.batch, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t n = begin; n < end; ++n) {
      const float* xn = xp + n * image_in;
      float* yr = yp + n * image_out;
      for (std::size_t oh = 0; oh < g.out_h; ++oh)
        for (std::size_t ow = 0; ow < g.out_w; ++ow, yr += c) {
          std::fill(yr, yr + c, 0.0f);
          std::size_t count = 0;
          detail::for_each_tap(g, oh, ow, [&](std::size_t, std::size_t, std::size_t pixel) {
            const float* xr = xn + pixel * c;
            XQ_OMP_SIMD
            for (std::size_t k = 0; k < c; ++k) yr[k] += xr[k];
            ++count;
          });
          // Sum in window order, then divide by the non-padded count: TF's CPU AvgPool.
          const auto divisor = static_cast<float>(count);
          XQ_OMP_SIMD
          for (std::size_t k = 0; k < c; ++k) yr[k] /= divisor;
        }
    }
  });

  return make_result(std::move(y), needs_grad(x), [x, g, threads](const tensor& dy) {
    const std::size_t c = g.channels, image_in = g.in_h * g.in_w * c, image_out = g.out_h * g.out_w * c;
    tensor dx = tensor::from_shape(x.shape());
    float* dxp = dx.data();
    const float* dyp = dy.data();
    kernels::parallel_for_items(g.batch, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t n = begin; n < end; ++n) {
        float* dxn = dxp + n * image_in;
        std::fill(dxn, dxn + image_in, 0.0f);
        const float* dyr = dyp + n * image_out;
        for (std::size_t oh = 0; oh < g.out_h; ++oh)
          for (std::size_t ow = 0; ow < g.out_w; ++ow, dyr += c) {
            std::size_t count = 0;
            detail::for_each_tap(g, oh, ow, [&](std::size_t, std::size_t, std::size_t) { ++count; });
            // TF's AvgPoolGrad: dx += dy * float(1.0 / count), the reciprocal taken in double.
            const auto scale = static_cast<float>(1.0 / static_cast<double>(count));
            detail::for_each_tap(g, oh, ow, [&](std::size_t, std::size_t, std::size_t pixel) {
              float* dxr = dxn + pixel * c;
              XQ_OMP_SIMD
              for (std::size_t k = 0; k < c; ++k) dxr[k] += dyr[k] * scale;
            });
          }
      }
    });
    add_grad(x, std::move(dx));
  });
}

}  // namespace ops

XQ_DECL var average_pool2d::call(const var& x) {
  return ops::average_pool2d(x, pool_size_, strides_, padding_, path());
}

}  // namespace xq
