#pragma once
/// \file upsampling2d.ipp
/// upsampling2d's code (layers/upsampling2d.hpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "../../core/shape_check.hpp"
#include "../upsampling2d.hpp"

namespace xq {

namespace detail {

/// One output coordinate's two source pixels and the weight of the second, as TF's
/// `compute_interpolation_weights` with its HalfPixelScaler computes them (in float).
struct bilinear_tap {
  std::size_t lower, upper;
  float lerp;
};

inline std::vector<bilinear_tap> bilinear_taps(std::size_t in, std::size_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<bilinear_tap> taps(out);
  for (std::size_t i = 0; i < out; ++i) {
    const float at = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float below = std::floor(at);
    const auto lower = std::max<std::int64_t>(static_cast<std::int64_t>(below), 0);
    const auto upper = std::min<std::int64_t>(static_cast<std::int64_t>(std::ceil(at)), std::int64_t(in) - 1);
    taps[i] = {std::size_t(lower), std::size_t(upper), at - below};
  }
  return taps;
}

}  // namespace detail

namespace ops {

XQ_DECL var upsampling2d(const var& x, std::size_t size_h, std::size_t size_w, interpolation mode,
                         const std::string& path) {
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  if (size_h == 0 || size_w == 0)
    throw argument_error(path, "upsampling factors of at least 1", detail::concat(size_h, " x ", size_w));
  const std::size_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const std::size_t oh = h * size_h, ow = w * size_w;
  tensor y = tensor::from_shape({n, oh, ow, c});
  const float* src = x.value().data();
  float* dst = y.data();

  if (mode == interpolation::nearest) {
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j) {
          const float* from = src + ((b * h + i / size_h) * w + j / size_w) * c;
          std::copy(from, from + c, dst + ((b * oh + i) * ow + j) * c);
        }
    return make_result(std::move(y), needs_grad(x), [x, n, h, w, c, size_h, size_w, oh, ow](const tensor& dy) {
      // Keras repeats rows, then columns: the gradient sums the columns' copies first.
      tensor dx = tensor::from_shape(x.shape());
      std::fill(dx.begin(), dx.end(), 0.0f);
      std::vector<float> row(c);
      for (std::size_t b = 0; b < n; ++b)
        for (std::size_t i = 0; i < oh; ++i)
          for (std::size_t jj = 0; jj < w; ++jj) {
            std::fill(row.begin(), row.end(), 0.0f);
            for (std::size_t dj = 0; dj < size_w; ++dj) {
              const float* g = dy.data() + ((b * oh + i) * ow + jj * size_w + dj) * c;
              for (std::size_t k = 0; k < c; ++k) row[k] += g[k];
            }
            float* to = dx.data() + ((b * h + i / size_h) * w + jj) * c;
            for (std::size_t k = 0; k < c; ++k) to[k] += row[k];
          }
      add_grad(x, std::move(dx));
    });
  }

  const auto ty = detail::bilinear_taps(h, oh), tx = detail::bilinear_taps(w, ow);
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i) {
      const float* top = src + (b * h + ty[i].lower) * w * c;
      const float* bottom = src + (b * h + ty[i].upper) * w * c;
      for (std::size_t j = 0; j < ow; ++j) {
        const std::size_t l = tx[j].lower * c, r = tx[j].upper * c;
        const float xl = tx[j].lerp, yl = ty[i].lerp;
        float* out = dst + ((b * oh + i) * ow + j) * c;
        for (std::size_t k = 0; k < c; ++k) {
          const float upper_row = top[l + k] + (top[r + k] - top[l + k]) * xl;
          const float lower_row = bottom[l + k] + (bottom[r + k] - bottom[l + k]) * xl;
          out[k] = upper_row + (lower_row - upper_row) * yl;
        }
      }
    }
  return make_result(std::move(y), needs_grad(x), [x, n, h, w, c, oh, ow, ty, tx](const tensor& dy) {
    // TF's ResizeBilinearGrad: each output gradient spread over its four source pixels.
    tensor dx = tensor::from_shape(x.shape());
    std::fill(dx.begin(), dx.end(), 0.0f);
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t i = 0; i < oh; ++i) {
        float* top = dx.data() + (b * h + ty[i].lower) * w * c;
        float* bottom = dx.data() + (b * h + ty[i].upper) * w * c;
        const float yl = ty[i].lerp, yk = 1.0f - yl;
        for (std::size_t j = 0; j < ow; ++j) {
          const std::size_t l = tx[j].lower * c, r = tx[j].upper * c;
          const float xl = tx[j].lerp, xk = 1.0f - xl;
          const float* g = dy.data() + ((b * oh + i) * ow + j) * c;
          for (std::size_t k = 0; k < c; ++k) {
            top[l + k] += g[k] * yk * xk;
            top[r + k] += g[k] * yk * xl;
            bottom[l + k] += g[k] * yl * xk;
            bottom[r + k] += g[k] * yl * xl;
          }
        }
      }
    add_grad(x, std::move(dx));
  });
}

}  // namespace ops

XQ_DEFINE_SPECIAL_MEMBERS(upsampling2d)

XQ_DECL upsampling2d::upsampling2d(std::size_t size_h, std::size_t size_w, interpolation mode)
    : layer<upsampling2d>("up_sampling2d"), size_h_(size_h), size_w_(size_w), mode_(mode) {
  if (size_h == 0 || size_w == 0)
    throw argument_error("up_sampling2d", "upsampling factors of at least 1", detail::concat(size_h, " x ", size_w));
}

}  // namespace xq
