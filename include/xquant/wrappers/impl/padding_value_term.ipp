#pragma once
/// \file padding_value_term.ipp
/// add_padding_value_term's code (wrappers/padding_value_term.hpp).

#include <cstddef>
#include <memory>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/shape_check.hpp"
#include "../../kernels/im2col.hpp"
#include "../padding_value_term.hpp"

namespace xq {

namespace detail {

/// An output pixel whose window has taps on the padding, and those taps (kh * k_w + kw).
struct border_pixel {
  std::size_t pixel;  // oh * out_w + ow
  std::vector<std::size_t> taps;
};

/// The border pixels of window `g` (the others see no padding).
XQ_DECL std::vector<border_pixel> border_pixels(const window2d& g) {
  std::vector<border_pixel> out;
  for (std::size_t oh = 0; oh < g.out_h; ++oh) {
    const auto ih0 = static_cast<std::ptrdiff_t>(oh * g.stride_h) - static_cast<std::ptrdiff_t>(g.pad_top);
    const tap_range rows = valid_taps(ih0, g.k_h, g.dilation_h, g.in_h);
    for (std::size_t ow = 0; ow < g.out_w; ++ow) {
      const auto iw0 = static_cast<std::ptrdiff_t>(ow * g.stride_w) - static_cast<std::ptrdiff_t>(g.pad_left);
      const tap_range cols = valid_taps(iw0, g.k_w, g.dilation_w, g.in_w);
      border_pixel b{oh * g.out_w + ow, {}};
      for (std::size_t kh = 0; kh < g.k_h; ++kh)
        for (std::size_t kw = 0; kw < g.k_w; ++kw)
          if (kh < rows.lo || kh >= rows.hi || kw < cols.lo || kw >= cols.hi) b.taps.push_back(kh * g.k_w + kw);
      if (!b.taps.empty()) out.push_back(std::move(b));
    }
  }
  return out;
}

}  // namespace detail

namespace ops {

XQ_DECL var add_padding_value_term(var y, const var& kernel, const window2d& g, float value,
                                   const std::string& path, bool in_value) {
  using detail::any;
  using detail::exactly;
  using detail::require_shape;
  const std::size_t taps = g.k_h * g.k_w, C = g.channels;
  require_shape(path + " (kernel)", kernel.shape(), {exactly(g.k_h), exactly(g.k_w), exactly(C), any('F')});
  const std::size_t F = kernel.shape()[3];
  require_shape(path + " (convolution output)", y.shape(),
                {exactly(g.batch), exactly(g.out_h), exactly(g.out_w), exactly(F)});
  auto borders = std::make_shared<const std::vector<detail::border_pixel>>(detail::border_pixels(g));
  if (borders->empty()) return y;

  const std::size_t image = g.out_h * g.out_w * F;
  if (!in_value) {
    // Per tap and filter: value * the kernel summed over input channels (in double: one
    // rounding per term; integers stay exact).
    const float* k = kernel.value().data();
    std::vector<double> tap_sums(taps * F, 0.0);
    for (std::size_t t = 0; t < taps; ++t)
      for (std::size_t c = 0; c < C; ++c)
        for (std::size_t f = 0; f < F; ++f) tap_sums[t * F + f] += k[(t * C + c) * F + f];
    std::vector<float> term(F);
    float* yp = y.value().data();
    for (const detail::border_pixel& b : *borders) {
      for (std::size_t f = 0; f < F; ++f) {
        double s = 0.0;
        for (const std::size_t t : b.taps) s += tap_sums[t * F + f];
        term[f] = static_cast<float>(static_cast<double>(value) * s);
      }
      for (std::size_t n = 0; n < g.batch; ++n) {
        float* row = yp + n * image + b.pixel * F;
        for (std::size_t f = 0; f < F; ++f) row[f] += term[f];
      }
    }
  }

  if (needs_grad(kernel)) {
    // Recorded after the convolution's step, so it runs first, when y's gradient is whole.
    recording_tape()->record([out = y.state(), kernel, borders, g, value, taps, C, F, image]() {
      if (!out->has_grad()) return;
      const float* dy = out->grad.data();
      std::vector<double> tap_grad(taps * F, 0.0);  // sum of dy over the outputs each tap pads
      for (const detail::border_pixel& b : *borders)
        for (std::size_t n = 0; n < g.batch; ++n) {
          const float* row = dy + n * image + b.pixel * F;
          for (const std::size_t t : b.taps)
            for (std::size_t f = 0; f < F; ++f) tap_grad[t * F + f] += row[f];
        }
      tensor dk = tensor::from_shape(kernel.shape());
      float* dkp = dk.data();
      for (std::size_t t = 0; t < taps; ++t)
        for (std::size_t c = 0; c < C; ++c)
          for (std::size_t f = 0; f < F; ++f)
            dkp[(t * C + c) * F + f] = static_cast<float>(static_cast<double>(value) * tap_grad[t * F + f]);
      add_grad(kernel, std::move(dk));
    });
  }
  return y;
}

}  // namespace ops
}  // namespace xq
