#pragma once
/// \file correlation.ipp
/// The correlation's code (layers/correlation.hpp).

#include <algorithm>

#include "../../core/op_observer.hpp"
#include "../../core/shape_check.hpp"
#include "../../kernels/im2col.hpp"
#include "../../kernels/parallel.hpp"
#include "../correlation.hpp"

namespace xq {

namespace ops {

XQ_DECL var correlation(const var& a, const var& b, std::size_t max_displacement, const std::string& path) {
  detail::require_shape(path, a.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  detail::require_same_shapes(path, a.shape(), b.shape(), "a second feature map");
  const detail::correlation_shape s{a.shape()[0], a.shape()[1],      a.shape()[2],
                                    a.shape()[3], max_displacement, 2 * max_displacement + 1};
  const std::size_t k_all = s.span * s.span;
  tensor y = tensor::from_shape({s.n, s.h, s.w, k_all});
  std::fill(y.begin(), y.end(), 0.0f);  // displacements that leave the image stay 0
  const float inv_c = s.c ? 1.0f / static_cast<float>(s.c) : 0.0f;
  const float* pa = a.value().data();
  const float* pb = b.value().data();
  float* py = y.data();
  kernels::parallel_for_items(s.n, detail::batch_threads(s.work()), [&](std::size_t begin, std::size_t end) {
    for (std::size_t n = begin; n < end; ++n) {
      const float* an = pa + n * s.image();
      const float* bn = pb + n * s.image();
      float* yn = py + n * s.volume();
      detail::correlation_sums<float>(s, an, bn, [&](std::size_t at, float sum) { yn[at] = sum * inv_c; });
    }
  });
  // For xq::summarize: C multiply-adds per displacement and pixel.
  notify_op(path, "correlation", y.shape(), {k_all, s.c});

  return make_result(std::move(y), needs_grad(a, b), [a, b, s, k_all, inv_c](const tensor& dy) {
    const bool want_a = needs_grad(a), want_b = needs_grad(b);
    tensor da = want_a ? tensor::from_shape(a.shape()) : tensor();
    tensor db = want_b ? tensor::from_shape(b.shape()) : tensor();
    if (want_a) std::fill(da.begin(), da.end(), 0.0f);
    if (want_b) std::fill(db.begin(), db.end(), 0.0f);
    const float* pa = a.value().data();
    const float* pb = b.value().data();
    const float* pg = dy.data();
    // Images are independent: each thread owns whole images of both gradients.
    kernels::parallel_for_items(s.n, detail::batch_threads(2 * s.work()), [&](std::size_t begin, std::size_t end) {
      for (std::size_t n = begin; n < end; ++n) {
        const float* an = pa + n * s.image();
        const float* bn = pb + n * s.image();
        const float* gn = pg + n * s.volume();
        float* dan = want_a ? da.data() + n * s.image() : nullptr;
        float* dbn = want_b ? db.data() + n * s.image() : nullptr;
        detail::for_each_partner(s, [&](std::size_t i, std::size_t j, std::size_t k, std::size_t i2, std::size_t j2) {
          const float g = gn[(i * s.w + j) * k_all + k] * inv_c;
          const std::size_t at = (i * s.w + j) * s.c, partner = (i2 * s.w + j2) * s.c;
          if (dan) {
            XQ_OMP_SIMD
            for (std::size_t c = 0; c < s.c; ++c) dan[at + c] += g * bn[partner + c];
          }
          if (dbn) {
            XQ_OMP_SIMD
            for (std::size_t c = 0; c < s.c; ++c) dbn[partner + c] += g * an[at + c];
          }
        });
      }
    });
    if (want_a) add_grad(a, std::move(da));
    if (want_b) add_grad(b, std::move(db));
  });
}

}  // namespace ops

XQ_DEFINE_SPECIAL_MEMBERS(correlation)

XQ_DECL correlation::correlation(std::size_t max_displacement)
    : layer<correlation>("correlation"), max_displacement_(max_displacement) {}

XQ_DECL var correlation::call(const std::vector<var>& inputs) const {
  if (inputs.size() != 2)
    throw argument_error(path(), "two feature maps (2 inputs)", detail::concat(inputs.size(), " inputs"));
  return ops::correlation(inputs[0], inputs[1], max_displacement_, path());
}

}  // namespace xq
