#pragma once
/// \file pad2d.hpp
/// `ops::pad2d`: constant padding of NHWC images on the tape (the gradient is dy cropped
/// back to x's shape): what `tf.pad(x, paddings, constant_values=value)` computes, used
/// for Larq's `pad_values`.

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include "../core/shape_check.hpp"
#include "../core/tape.hpp"

namespace xq::ops {

/// x (N, H, W, C) with `top`/`bottom` rows and `left`/`right` columns of `value` around
/// each image.
inline var pad2d(const var& x, std::size_t top, std::size_t bottom, std::size_t left, std::size_t right, float value,
                 const std::string& path = "pad2d") {
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  const std::size_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const std::size_t oh = h + top + bottom, ow = w + left + right;
  tensor y = tensor::from_shape({n, oh, ow, c});
  std::fill(y.begin(), y.end(), value);
  const float* src = x.value().data();
  float* dst = y.data();
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < h; ++i)
      std::copy(src + ((b * h + i) * w) * c, src + ((b * h + i) * w + w) * c, dst + ((b * oh + i + top) * ow + left) * c);
  return make_result(std::move(y), needs_grad(x), [x, n, h, w, c, top, left, oh, ow](const tensor& dy) {
    tensor dx = tensor::from_shape(x.shape());
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t i = 0; i < h; ++i) {
        const float* from = dy.data() + ((b * oh + i + top) * ow + left) * c;
        std::copy(from, from + w * c, dx.data() + ((b * h + i) * w) * c);
      }
    add_grad(x, std::move(dx));
  });
}

}  // namespace xq::ops
