#pragma once
/// \file cropping2d.ipp
/// crop2d's code (layers/cropping2d.hpp).

#include <algorithm>

#include "../../core/shape_check.hpp"
#include "../cropping2d.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(cropping2d)

namespace ops {

XQ_DECL var crop2d(const var& x, std::size_t top, std::size_t bottom, std::size_t left, std::size_t right,
                   const std::string& path) {
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  const std::size_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  if (top + bottom >= h || left + right >= w)
    throw shape_error(path,
                      detail::concat("an image larger than the cropping: more than ", top + bottom, " rows and ",
                                     left + right, " columns"),
                      detail::shape_string(x.shape()));
  const std::size_t oh = h - top - bottom, ow = w - left - right;
  tensor y = tensor::from_shape({n, oh, ow, c});
  const float* src = x.value().data();
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i) {
      const float* from = src + ((b * h + i + top) * w + left) * c;
      std::copy(from, from + ow * c, y.data() + (b * oh + i) * ow * c);
    }
  return make_result(std::move(y), needs_grad(x), [x, n, h, w, c, top, left, oh, ow](const tensor& dy) {
    tensor dx = tensor::from_shape(x.shape());
    std::fill(dx.begin(), dx.end(), 0.0f);
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t i = 0; i < oh; ++i) {
        const float* from = dy.data() + (b * oh + i) * ow * c;
        std::copy(from, from + ow * c, dx.data() + ((b * h + i + top) * w + left) * c);
      }
    add_grad(x, std::move(dx));
  });
}

}  // namespace ops
}  // namespace xq
