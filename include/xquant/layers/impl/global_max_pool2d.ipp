#pragma once
/// \file global_max_pool2d.ipp
/// global_max_pool2d's code (layers/global_max_pool2d.hpp).

#include <algorithm>

#include "../global_max_pool2d.hpp"
#include "../../kernels/branchless.hpp"
#include "../../kernels/im2col.hpp"
#include "../../kernels/parallel.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(global_max_pool2d)

namespace ops {

XQ_DECL var global_max_pool2d(const var& x, bool keepdims, const std::string& path) {
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  const std::size_t n_images = x.shape()[0], pixels = x.shape()[1] * x.shape()[2], c = x.shape()[3];
  if (pixels == 0) throw shape_error(path, "input with H, W >= 1", detail::shape_string(x.shape()));
  const bool threads = detail::batch_threads(x.size());

  tensor y = keepdims ? tensor::from_shape({n_images, std::size_t(1), std::size_t(1), c})
                      : tensor::from_shape({n_images, c});
  const float* xp = x.value().data();
  float* yp = y.data();
  kernels::parallel_for_items(n_images, threads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t n = begin; n < end; ++n) {
      float* yr = yp + n * c;
      const float* xr = xp + n * pixels * c;
      std::copy(xr, xr + c, yr);
      for (std::size_t p = 1; p < pixels; ++p) {
        XQ_OMP_SIMD
        for (std::size_t k = 0; k < c; ++k)  // by masks: no masked stores (branchless.hpp)
          yr[k] = kernels::branchless_select(xr[p * c + k] > yr[k], xr[p * c + k], yr[k]);
      }
    }
  });

  // Backward compares x with the output to find the maxima (TF's _MinOrMaxGrad); the
  // output is N*C floats, so the step keeps its own copy.
  const bool record = needs_grad(x);
  tensor kept = record ? y : tensor();
  return make_result(std::move(y), record, [x, kept, n_images, pixels, c, threads](const tensor& dy) {
    tensor dx = tensor::from_shape(x.shape());
    float* dxp = dx.data();
    const float* xp = x.value().data();
    const float* yp = kept.data();
    const float* dyp = dy.data();
    kernels::parallel_for_items(n_images, threads, [&](std::size_t begin, std::size_t end) {
      std::vector<float> share(c);
      for (std::size_t n = begin; n < end; ++n) {
        const float* xr = xp + n * pixels * c;
        const float* yr = yp + n * c;
        std::fill(share.begin(), share.end(), 0.0f);
        for (std::size_t p = 0; p < pixels; ++p) {
          XQ_OMP_SIMD
          for (std::size_t k = 0; k < c; ++k) share[k] += xr[p * c + k] == yr[k] ? 1.0f : 0.0f;
        }
        for (std::size_t k = 0; k < c; ++k) share[k] = 1.0f / share[k];  // TF: (indicators / count) * dy
        float* dxr = dxp + n * pixels * c;
        const float* dyr = dyp + n * c;
        for (std::size_t p = 0; p < pixels; ++p) {
          XQ_OMP_SIMD
          for (std::size_t k = 0; k < c; ++k) dxr[p * c + k] = xr[p * c + k] == yr[k] ? share[k] * dyr[k] : 0.0f;
        }
      }
    });
    add_grad(x, std::move(dx));
  });
}

}  // namespace ops

XQ_DECL var global_max_pool2d::call(const var& x) { return ops::global_max_pool2d(x, keepdims_, path()); }

}  // namespace xq
