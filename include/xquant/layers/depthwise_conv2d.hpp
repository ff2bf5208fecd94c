#pragma once
/// \file depthwise_conv2d.hpp
/// `xq::depthwise_conv2d`: each input channel convolved with its own
/// `depth_multiplier` filters (Keras DepthwiseConv2D, no activation). Kernel
/// (KH, KW, C, M), named "depthwise_kernel" as in Keras; output channel c*M + m
/// is input channel c through filter m, as in Keras and TF.
///
/// \code
///   xq::depthwise_conv2d dw = xq::depthwise_conv2d(3, 2).strides(2).padding(xq::padding::same);
///   xq::var y = dw(x);   // x (N, H, W, C) -> y (N, ceil(H/2), ceil(W/2), 2*C)
/// \endcode
///
/// Direct loops: NHWC keeps channels innermost, so every tap is one contiguous
/// multiply-add over C*M floats, which the compiler vectorizes. No GEMM: each output
/// reads only KH*KW inputs per channel.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "../core/layer.hpp"
#include "../core/random.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../kernels/im2col.hpp"
#include "../kernels/parallel.hpp"
#include "padding.hpp"

namespace xq {

namespace ops {

/// Depthwise 2-D convolution of x (N, H, W, C) with kernel w (KH, KW, C, M) [+ bias
/// b (C*M,)] on the tape; output (N, OH, OW, C*M). `path` names the caller in errors.
inline var depthwise_conv2d(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                            const std::string& path = "depthwise_conv2d") {
  if (w.dimension() != 4)
    throw shape_error(path, "depthwise kernel of rank 4 (KH, KW, C, M)", detail::shape_string(w.shape()));
  const std::size_t kh = w.shape()[0], kw = w.shape()[1], c = w.shape()[2], mult = w.shape()[3];
  const std::size_t cm = c * mult;
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::exactly(c)});
  if (b) detail::require_shape(path, b->shape(), {detail::exactly(cm)}, "bias");
  detail::positive_size2(path, "strides", geometry.strides);
  detail::positive_size2(path, "dilation", geometry.dilation);
  const window2d g = resolve_window(path, x.shape(), kh, kw, geometry);
  const std::size_t image_in = g.in_h * g.in_w * c, image_out = g.out_h * g.out_w * cm;

  tensor y = tensor::from_shape({g.batch, g.out_h, g.out_w, cm});
  {
    const float* xp = x.value().data();
    const float* wp = w.value().data();
    const float* bp = b ? b->value().data() : nullptr;
    float* yp = y.data();
    kernels::parallel_for_items(
        g.batch, detail::batch_threads(g.batch * image_out * kh * kw), [&](std::size_t begin, std::size_t end) {
          for (std::size_t n = begin; n < end; ++n) {
            const float* xn = xp + n * image_in;
            float* yr = yp + n * image_out;
            for (std::size_t oh = 0; oh < g.out_h; ++oh)
              for (std::size_t ow = 0; ow < g.out_w; ++ow, yr += cm) {
                std::fill(yr, yr + cm, 0.0f);
                detail::for_each_tap(g, oh, ow, [&](std::size_t i, std::size_t j, std::size_t pixel) {
                  const float* xr = xn + pixel * c;
                  const float* wr = wp + (i * g.k_w + j) * cm;
                  if (mult == 1) {
                    for (std::size_t k = 0; k < c; ++k) yr[k] += xr[k] * wr[k];
                  } else {
                    for (std::size_t k = 0; k < c; ++k)
                      for (std::size_t m = 0; m < mult; ++m) yr[k * mult + m] += xr[k] * wr[k * mult + m];
                  }
                });
                if (bp)  // after the taps, as TF's separate BiasAdd
                  for (std::size_t o = 0; o < cm; ++o) yr[o] += bp[o];
              }
          }
        });
  }

  const bool record = b ? needs_grad(x, w, *b) : needs_grad(x, w);
  const var bias = b ? *b : var();
  return make_result(std::move(y), record, [x, w, bias, g, mult](const tensor& dy) {
    const std::size_t c = g.channels, cm = c * mult, taps = g.k_h * g.k_w;
    const std::size_t image_in = g.in_h * g.in_w * c, image_out = g.out_h * g.out_w * cm;
    const bool threads = detail::batch_threads(g.batch * image_out * taps);
    const float* xp = x.value().data();
    const float* wp = w.value().data();
    const float* dyp = dy.data();
    if (w.requires_grad()) {
      // One partial sum per image, added in image order: the result does not depend on threads.
      std::vector<float> partial(g.batch * taps * cm, 0.0f);
      kernels::parallel_for_items(g.batch, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t n = begin; n < end; ++n) {
          const float* xn = xp + n * image_in;
          const float* dyr = dyp + n * image_out;
          float* dwn = partial.data() + n * taps * cm;
          for (std::size_t oh = 0; oh < g.out_h; ++oh)
            for (std::size_t ow = 0; ow < g.out_w; ++ow, dyr += cm)
              detail::for_each_tap(g, oh, ow, [&](std::size_t i, std::size_t j, std::size_t pixel) {
                const float* xr = xn + pixel * c;
                float* dwr = dwn + (i * g.k_w + j) * cm;
                if (mult == 1) {
                  for (std::size_t k = 0; k < c; ++k) dwr[k] += xr[k] * dyr[k];
                } else {
                  for (std::size_t k = 0; k < c; ++k)
                    for (std::size_t m = 0; m < mult; ++m) dwr[k * mult + m] += xr[k] * dyr[k * mult + m];
                }
              });
        }
      });
      tensor dw = xt::zeros<float>(w.shape());
      for (std::size_t n = 0; n < g.batch; ++n) {
        const float* src = partial.data() + n * taps * cm;
        for (std::size_t i = 0; i < taps * cm; ++i) dw.data()[i] += src[i];
      }
      add_grad(w, std::move(dw));
    }
    if (bias.defined() && bias.requires_grad()) {
      tensor db = xt::zeros<float>({cm});
      kernels::add_column_sums(dyp, g.out_pixels(), cm, db.data());
      add_grad(bias, std::move(db));
    }
    if (x.requires_grad()) {
      tensor dx = tensor::from_shape(x.shape());
      float* dxp = dx.data();
      kernels::parallel_for_items(g.batch, threads, [&](std::size_t begin, std::size_t end) {
        for (std::size_t n = begin; n < end; ++n) {
          float* dxn = dxp + n * image_in;
          std::fill(dxn, dxn + image_in, 0.0f);
          const float* dyr = dyp + n * image_out;
          for (std::size_t oh = 0; oh < g.out_h; ++oh)
            for (std::size_t ow = 0; ow < g.out_w; ++ow, dyr += cm)
              detail::for_each_tap(g, oh, ow, [&](std::size_t i, std::size_t j, std::size_t pixel) {
                float* dxr = dxn + pixel * c;
                const float* wr = wp + (i * g.k_w + j) * cm;
                if (mult == 1) {
                  for (std::size_t k = 0; k < c; ++k) dxr[k] += dyr[k] * wr[k];
                } else {
                  for (std::size_t k = 0; k < c; ++k) {
                    float s = 0.0f;
                    for (std::size_t m = 0; m < mult; ++m) s += dyr[k * mult + m] * wr[k * mult + m];
                    dxr[k] += s;
                  }
                }
              });
        }
      });
      add_grad(x, std::move(dx));
    }
  });
}

}  // namespace ops

/// Depthwise 2-D convolution layer (Keras DepthwiseConv2D without activation). The
/// kernel (KH, KW, C, M), "depthwise_kernel", is built on the first call from the
/// input's channels, Glorot-uniform with Keras's fans (fan_in = KH*KW*C,
/// fan_out = KH*KW*M); the bias (C*M,), "bias", starts at 0.
class depthwise_conv2d : public layer<depthwise_conv2d> {
 public:
  /// A `kernel_size` window (`3` or `{3, 5}`), `depth_multiplier` filters per input channel.
  explicit depthwise_conv2d(size2 kernel_size = 1, std::size_t depth_multiplier = 1)
      : layer<depthwise_conv2d>("depthwise_conv2d"),
        kernel_size_(detail::positive_size2("depthwise_conv2d", "kernel_size", kernel_size)),
        depth_multiplier_(depth_multiplier) {
    if (depth_multiplier == 0) throw argument_error("depthwise_conv2d", "depth_multiplier of at least 1", "0");
  }

  /// Window step (`2` or `{2, 1}`); default 1.
  depthwise_conv2d& strides(size2 s) {
    geometry_.strides = detail::positive_size2(path(), "strides", s);
    return *this;
  }
  /// `xq::padding::valid` (default) or `same`.
  depthwise_conv2d& padding(xq::padding p) {
    geometry_.padding = p;
    return *this;
  }
  /// Spacing between kernel taps (`2` or `{2, 1}`); default 1.
  depthwise_conv2d& dilation(size2 d) {
    geometry_.dilation = detail::positive_size2(path(), "dilation", d);
    return *this;
  }
  /// Whether the layer adds a bias (default true); set before the first call.
  depthwise_conv2d& use_bias(bool on) {
    if (kernel_ && on != use_bias_)
      throw argument_error(path(), "use_bias set before the layer is built", "a built layer");
    use_bias_ = on;
    return *this;
  }

  var operator()(const var& x) {
    if (!kernel_) {
      detail::require_shape(path(), x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
      build(x.shape()[3]);
    }
    const var b = bias_ ? var(bias_) : var();
    return ops::depthwise_conv2d(x, kernel_, bias_ ? &b : nullptr, geometry_, path());
  }

  /// Creates the parameters for `in_channels` input channels (the first call does it).
  void build(std::size_t in_channels) {
    if (in_channels == 0) throw shape_error(path(), "input with at least 1 channel", "0 channels");
    const std::size_t taps = kernel_size_[0] * kernel_size_[1];
    kernel_ = make_parameter("depthwise_kernel",
                             glorot_uniform({kernel_size_[0], kernel_size_[1], in_channels, depth_multiplier_},
                                            taps * in_channels, taps * depth_multiplier_));
    if (use_bias_) bias_ = make_parameter("bias", xt::zeros<float>({in_channels * depth_multiplier_}));
    name_parameters();
  }

  std::vector<parameter_ptr> parameters() const { return {kernel_, bias_}; }
  /// The depthwise kernel (KH, KW, C, M).
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  std::array<std::size_t, 2> kernel_size() const noexcept { return kernel_size_; }
  std::size_t depth_multiplier() const noexcept { return depth_multiplier_; }
  std::array<std::size_t, 2> strides() const noexcept { return geometry_.strides; }
  xq::padding padding() const noexcept { return geometry_.padding; }
  std::array<std::size_t, 2> dilation() const noexcept { return geometry_.dilation; }
  bool use_bias() const noexcept { return use_bias_; }
  const conv2d_geometry& geometry() const noexcept { return geometry_; }

 private:
  std::array<std::size_t, 2> kernel_size_;
  std::size_t depth_multiplier_;
  conv2d_geometry geometry_;
  bool use_bias_ = true;
  parameter_ptr kernel_, bias_;
};

}  // namespace xq
