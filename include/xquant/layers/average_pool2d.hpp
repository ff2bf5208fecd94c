#pragma once
/// \file average_pool2d.hpp
/// `xq::average_pool2d`: the mean of each window (Keras AveragePooling2D). With
/// `same` padding a window that hangs over the border is the mean of its input
/// elements only (TF divides by the number of non-padded elements, not by the
/// window size).
///
/// \code
///   xq::average_pool2d pool(2);                                   // 2x2, stride 2, valid
///   xq::average_pool2d pool3(3, 2, xq::padding::same);            // 3x3, stride 2, same
/// \endcode

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "../core/layer.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../kernels/im2col.hpp"
#include "../kernels/parallel.hpp"
#include "../kernels/padding.hpp"

namespace xq {

namespace ops {

/// Average pooling of x (N, H, W, C) with a `pool_size` window every `strides` pixels
/// on the tape; output (N, OH, OW, C). `path` names the caller in errors.
inline var average_pool2d(const var& x, size2 pool_size, size2 strides, xq::padding p = xq::padding::valid,
                          const std::string& path = "average_pooling2d") {
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

/// Average pooling layer (Keras AveragePooling2D). No parameters.
class average_pool2d : public layer<average_pool2d> {
 public:
  static constexpr layer_role role = layer_role::pool;
  /// A `pool_size` window (`2` or `{2, 3}`) every `strides` pixels (default: `pool_size`).
  explicit average_pool2d(size2 pool_size = 2) : average_pool2d(pool_size, pool_size) {}
  average_pool2d(size2 pool_size, xq::padding p) : average_pool2d(pool_size, pool_size, p) {}
  average_pool2d(size2 pool_size, size2 strides, xq::padding p = xq::padding::valid)
      : layer<average_pool2d>("average_pooling2d"),
        pool_size_(detail::positive_size2("average_pooling2d", "pool_size", pool_size)),
        strides_(detail::positive_size2("average_pooling2d", "strides", strides)), padding_(p) {}

  /// Window step (`2` or `{2, 1}`).
  average_pool2d& strides(size2 s) {
    strides_ = detail::positive_size2(path(), "strides", s);
    return *this;
  }
  /// `xq::padding::valid` (default) or `same`.
  average_pool2d& padding(xq::padding p) {
    padding_ = p;
    return *this;
  }

  var call(const var& x) { return ops::average_pool2d(x, pool_size_, strides_, padding_, path()); }

  std::vector<parameter_ptr> parameters() const { return {}; }
  std::array<std::size_t, 2> pool_size() const noexcept { return pool_size_; }
  std::array<std::size_t, 2> strides() const noexcept { return strides_; }
  xq::padding padding() const noexcept { return padding_; }

 private:
  std::array<std::size_t, 2> pool_size_, strides_;
  xq::padding padding_;
};

}  // namespace xq
