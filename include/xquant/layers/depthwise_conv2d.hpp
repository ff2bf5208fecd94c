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
/// multiply-add over a pixel's channels, which the compiler vectorizes. No GEMM: each
/// output reads only KH*KW inputs. A multiplier M > 1 first repeats each input channel
/// M times, which turns the op into a multiplier-1 one over C*M channels.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "../core/layer.hpp"
#include "../core/op_observer.hpp"
#include "../core/random.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../kernels/im2col.hpp"
#include "../kernels/parallel.hpp"
#include "../kernels/padding.hpp"

namespace xq {

namespace detail {

/// x (pixels, c) -> (pixels, c*m), channel c repeated m times (channel c*m + j reads c):
/// with it a depthwise conv of multiplier m is a multiplier-1 conv over c*m channels,
/// whose taps are plain vectorizable rows.
inline void repeat_channels(const float* x, std::size_t pixels, std::size_t c, std::size_t m, float* out) {
  for (std::size_t p = 0; p < pixels; ++p, x += c)
    for (std::size_t k = 0; k < c; ++k, out += m) std::fill(out, out + m, x[k]);
}

/// The input's pixels with channels repeated for the multiplier (or the input itself).
struct depthwise_input {
  std::vector<float> repeated;
  const float* data;
  depthwise_input(const tensor& x, std::size_t c, std::size_t m) : data(x.data()) {
    if (m == 1) return;
    repeated.resize(x.size() * m);
    repeat_channels(x.data(), x.size() / c, c, m, repeated.data());
    data = repeated.data();
  }
};

/// y = depthwise(x, w) (+ b) with multiplier 1 over g.channels channels.
inline void depthwise_forward(const float* x, const float* w, const float* b, const window2d& g, float* y) {
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

/// dw (KH, KW, C) of multiplier 1: one partial sum per image, added in image order, so
/// the result does not depend on the threads.
inline void depthwise_filter_grad(const float* x, const float* dy, const window2d& g, float* dw) {
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

/// dx of multiplier 1 (overwritten): each image by one thread, in (oh, ow, kh, kw) order.
inline void depthwise_input_grad(const float* dy, const float* w, const window2d& g, float* dx) {
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

/// Depthwise 2-D convolution layer (Keras DepthwiseConv2D without activation). The
/// kernel (KH, KW, C, M), "depthwise_kernel", is built on the first call from the
/// input's channels, Glorot-uniform with Keras's fans (fan_in = KH*KW*C,
/// fan_out = KH*KW*M); the bias (C*M,), "bias", starts at 0.
class depthwise_conv2d : public layer<depthwise_conv2d> {
 public:
  static constexpr layer_role role = layer_role::conv;
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

  var call(const var& x) {
    ensure_built(x);
    return call_with(x, kernel_, bias_ ? var(bias_) : var());
  }

  /// Builds the parameters from `x`'s channels unless built (what the first call does).
  void ensure_built(const var& x) {
    if (kernel_) return;
    detail::require_shape(path(), x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
    build(x.shape()[3]);
  }
  /// The layer's depthwise convolution with `kernel` and `bias` (undefined: none) in place of its
  /// own parameters: how a quantized twin runs it with a fake-quantized (or folded) kernel.
  var call_with(const var& x, const var& kernel, const var& bias) const {
    return ops::depthwise_conv2d(x, kernel, bias.defined() ? &bias : nullptr, geometry_, path());
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
  /// Each stored parameter slot, null ones included (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(kernel_);
    f(bias_);
  }
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
