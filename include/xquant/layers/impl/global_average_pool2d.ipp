#pragma once
/// \file global_average_pool2d.ipp
/// global_average_pool2d's code (layers/global_average_pool2d.hpp).

#include <algorithm>

#include "../global_average_pool2d.hpp"
#include "../../kernels/im2col.hpp"
#include "../../kernels/parallel.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(global_average_pool2d)

namespace ops {

XQ_DECL var global_average_pool2d(const var& x, bool keepdims,
                                  const std::string& path) {
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  const std::size_t n_images = x.shape()[0], pixels = x.shape()[1] * x.shape()[2], c = x.shape()[3];
  if (pixels == 0) throw shape_error(path, "input with H, W >= 1", detail::shape_string(x.shape()));
  const bool threads = detail::batch_threads(x.size());

  tensor y = keepdims ? tensor::from_shape({n_images, std::size_t(1), std::size_t(1), c})
                      : tensor::from_shape({n_images, c});
  const float* xp = x.value().data();
  float* yp = y.data();
  const auto count = static_cast<float>(pixels);
  kernels::parallel_for_items(n_images, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t n = begin; n < end; ++n) {
      float* yr = yp + n * c;
      std::fill(yr, yr + c, 0.0f);
      const float* xr = xp + n * pixels * c;
      for (std::size_t p = 0; p < pixels; ++p, xr += c) {
        XQ_OMP_SIMD
        for (std::size_t k = 0; k < c; ++k) yr[k] += xr[k];
      }
      XQ_OMP_SIMD
      for (std::size_t k = 0; k < c; ++k) yr[k] /= count;  // reduce_mean: sum, then divide
    }
  });

  return make_result(std::move(y), needs_grad(x), [x, n_images, pixels, c, count, threads](const tensor& dy) {
    tensor dx = tensor::from_shape(x.shape());
    float* dxp = dx.data();
    const float* dyp = dy.data();
    kernels::parallel_for_items(n_images, threads, [&](std::size_t begin, std::size_t end) {
      for (std::size_t n = begin; n < end; ++n) {
        float* dxr = dxp + n * pixels * c;
        const float* dyr = dyp + n * c;
        for (std::size_t p = 0; p < pixels; ++p, dxr += c) {
          XQ_OMP_SIMD
          for (std::size_t k = 0; k < c; ++k) dxr[k] = dyr[k] / count;  // TF's mean gradient divides
        }
      }
    });
    add_grad(x, std::move(dx));
  });
}

}  // namespace ops

XQ_DECL var global_average_pool2d::call(const var& x) { return ops::global_average_pool2d(x, keepdims_, path()); }

}  // namespace xq
