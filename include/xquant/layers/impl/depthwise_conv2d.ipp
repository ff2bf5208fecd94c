#pragma once
/// \file depthwise_conv2d.ipp
/// depthwise_conv2d's code (layers/depthwise_conv2d.hpp).

#include <algorithm>

#include "../depthwise_conv2d.hpp"
#include "../../core/op_observer.hpp"
#include "../../core/random.hpp"
#include "../../kernels/im2col.hpp"
#include "../../kernels/parallel.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(depthwise_conv2d)

namespace detail {

XQ_DECL void repeat_channels(const float* x, std::size_t pixels, std::size_t c, std::size_t m, float* out) {
  for (std::size_t p = 0; p < pixels; ++p, x += c)
    for (std::size_t k = 0; k < c; ++k, out += m) std::fill(out, out + m, x[k]);
}

XQ_DECL depthwise_input::depthwise_input(const tensor& x, std::size_t c, std::size_t m) : data(x.data()) {
  if (m == 1) return;
  repeated.resize(x.size() * m);
  repeat_channels(x.data(), x.size() / c, c, m, repeated.data());
  data = repeated.data();
}

XQ_DECL void depthwise_forward(const float* x, const float* w, const float* b, const window2d& g, float* y) {
  const std::size_t c = g.channels, image_in = g.in_h * g.in_w * c, image_out = g.out_h * g.out_w * c;
  kernels::parallel_for_items(
      g.batch, batch_threads(g.batch * image_out * g.k_h * g.k_w), [&](std::size_t begin, std::size_t end) {
        for (std::size_t n = begin; n < end; ++n) {
          const float* xn = x + n * image_in;
          float* yr = y + n * image_out;
          for (std::size_t oh = 0; oh < g.out_h; ++oh)
            for (std::size_t ow = 0; ow < g.out_w; ++ow, yr += c) {
              std::fill(yr, yr + c, 0.0f);
              for_each_tap(g, oh, ow, [&](std::size_t i, std::size_t j, std::size_t pixel) {
                const float* xr = xn + pixel * c;
                const float* wr = w + (i * g.k_w + j) * c;
                XQ_OMP_SIMD
                for (std::size_t k = 0; k < c; ++k) yr[k] += xr[k] * wr[k];
              });
              if (b) {  // after the taps, as TF's separate BiasAdd
                XQ_OMP_SIMD
                for (std::size_t k = 0; k < c; ++k) yr[k] += b[k];
              }
            }
        }
      });
}

XQ_DECL void depthwise_filter_grad(const float* x, const float* dy, const window2d& g, float* dw) {
  const std::size_t c = g.channels, taps = g.k_h * g.k_w;
  const std::size_t image_in = g.in_h * g.in_w * c, image_out = g.out_h * g.out_w * c;
  std::vector<float> partial(g.batch * taps * c, 0.0f);
  kernels::parallel_for_items(g.batch, batch_threads(g.batch * image_out * taps), [&](std::size_t begin,
                                                                                     std::size_t end) {
    for (std::size_t n = begin; n < end; ++n) {
      const float* xn = x + n * image_in;
      const float* dyr = dy + n * image_out;
      float* dwn = partial.data() + n * taps * c;
      for (std::size_t oh = 0; oh < g.out_h; ++oh)
        for (std::size_t ow = 0; ow < g.out_w; ++ow, dyr += c)
          for_each_tap(g, oh, ow, [&](std::size_t i, std::size_t j, std::size_t pixel) {
            const float* xr = xn + pixel * c;
            float* dwr = dwn + (i * g.k_w + j) * c;
            XQ_OMP_SIMD
            for (std::size_t k = 0; k < c; ++k) dwr[k] += xr[k] * dyr[k];
          });
    }
  });
  std::fill(dw, dw + taps * c, 0.0f);
  for (std::size_t n = 0; n < g.batch; ++n) {
    const float* src = partial.data() + n * taps * c;
    XQ_OMP_SIMD
    for (std::size_t i = 0; i < taps * c; ++i) dw[i] += src[i];
  }
}

XQ_DECL void depthwise_input_grad(const float* dy, const float* w, const window2d& g, float* dx) {
  const std::size_t c = g.channels, image_in = g.in_h * g.in_w * c, image_out = g.out_h * g.out_w * c;
  kernels::parallel_for_items(
      g.batch, batch_threads(g.batch * image_out * g.k_h * g.k_w), [&](std::size_t begin, std::size_t end) {
        for (std::size_t n = begin; n < end; ++n) {
          float* dxn = dx + n * image_in;
          std::fill(dxn, dxn + image_in, 0.0f);
          const float* dyr = dy + n * image_out;
          for (std::size_t oh = 0; oh < g.out_h; ++oh)
            for (std::size_t ow = 0; ow < g.out_w; ++ow, dyr += c)
              for_each_tap(g, oh, ow, [&](std::size_t i, std::size_t j, std::size_t pixel) {
                float* dxr = dxn + pixel * c;
                const float* wr = w + (i * g.k_w + j) * c;
                XQ_OMP_SIMD
                for (std::size_t k = 0; k < c; ++k) dxr[k] += dyr[k] * wr[k];
              });
        }
      });
}

}  // namespace detail

namespace ops {

XQ_DECL var depthwise_conv2d(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                             const std::string& path) {
  if (w.dimension() != 4)
    throw shape_error(path, "depthwise kernel of rank 4 (KH, KW, C, M)", detail::shape_string(w.shape()));
  const std::size_t kh = w.shape()[0], kw = w.shape()[1], c = w.shape()[2], mult = w.shape()[3];
  const std::size_t cm = c * mult;
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::exactly(c)});
  if (b) detail::require_shape(path, b->shape(), {detail::exactly(cm)}, "bias");
  detail::positive_size2(path, "strides", geometry.strides);
  detail::positive_size2(path, "dilation", geometry.dilation);
  window2d g = resolve_window(path, x.shape(), kh, kw, geometry);
  g.channels = cm;  // the kernels below see the repeated input: multiplier 1 over C*M channels

  tensor y = tensor::from_shape({g.batch, g.out_h, g.out_w, cm});
  {
    const detail::depthwise_input in(x.value(), c, mult);
    detail::depthwise_forward(in.data, w.value().data(), b ? b->value().data() : nullptr, g, y.data());
  }
  notify_op(path, "depthwise_conv2d", y.shape(), w.shape());  // for xq::summarize's MAC count

  const bool record = b ? needs_grad(x, w, *b) : needs_grad(x, w);
  const var bias = b ? *b : var();
  return make_result(std::move(y), record, [x, w, bias, g, c, mult](const tensor& dy) {
    if (w.requires_grad()) {
      const detail::depthwise_input in(x.value(), c, mult);
      tensor dw = tensor::from_shape(w.shape());
      detail::depthwise_filter_grad(in.data, dy.data(), g, dw.data());
      add_grad(w, std::move(dw));
    }
    if (bias.defined() && bias.requires_grad()) {
      tensor db = xt::zeros<float>({g.channels});
      kernels::add_column_sums(dy.data(), g.out_pixels(), g.channels, db.data());
      add_grad(bias, std::move(db));
    }
    if (x.requires_grad()) {
      tensor dx = tensor::from_shape(x.shape());
      if (mult == 1) {
        detail::depthwise_input_grad(dy.data(), w.value().data(), g, dx.data());
      } else {  // the repeated channels' gradients, then each channel's M copies added in order
        std::vector<float> repeated(x.size() * mult);
        detail::depthwise_input_grad(dy.data(), w.value().data(), g, repeated.data());
        const float* src = repeated.data();
        float* dst = dx.data();
        for (std::size_t i = 0, n = x.size(); i < n; ++i, src += mult) {
          float s = src[0];
          for (std::size_t j = 1; j < mult; ++j) s += src[j];
          dst[i] = s;
        }
      }
      add_grad(x, std::move(dx));
    }
  });
}

}  // namespace ops

XQ_DECL var depthwise_conv2d::call(const var& x) {
  ensure_built(x);
  return call_with(x, kernel_, bias_ ? var(bias_) : var());
}

XQ_DECL void depthwise_conv2d::ensure_built(const var& x) {
  if (kernel_) return;
  detail::require_shape(path(), x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  build(x.shape()[3]);
}

XQ_DECL var depthwise_conv2d::call_with(const var& x, const var& kernel, const var& bias) const {
  return ops::depthwise_conv2d(x, kernel, bias.defined() ? &bias : nullptr, geometry_, path());
}

XQ_DECL void depthwise_conv2d::build(std::size_t in_channels) {
  if (in_channels == 0) throw shape_error(path(), "input with at least 1 channel", "0 channels");
  const std::size_t taps = kernel_size_[0] * kernel_size_[1];
  kernel_ = make_parameter("depthwise_kernel",
                           glorot_uniform({kernel_size_[0], kernel_size_[1], in_channels, depth_multiplier_},
                                          taps * in_channels, taps * depth_multiplier_));
  if (use_bias_) bias_ = make_parameter("bias", xt::zeros<float>({in_channels * depth_multiplier_}));
  name_parameters();
}

}  // namespace xq
