#pragma once
/// \file pad2d.ipp
/// pad2d's code (layers/pad2d.hpp).

#include <algorithm>

#include "../pad2d.hpp"

namespace xq::ops {

XQ_DECL var pad2d(const var& x, std::size_t top, std::size_t bottom, std::size_t left, std::size_t right, float value,
                  const std::string& path) {
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
