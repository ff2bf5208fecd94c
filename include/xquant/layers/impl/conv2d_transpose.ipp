#pragma once
/// \file conv2d_transpose.ipp
/// conv2d_transpose's code (layers/conv2d_transpose.hpp).

#include <algorithm>

#include "../../core/op_observer.hpp"
#include "../../core/random.hpp"
#include "../../core/shape_check.hpp"
#include "../../kernels/gemm.hpp"
#include "../../kernels/im2col.hpp"
#include "../../kernels/workspace.hpp"
#include "../conv2d_transpose.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(conv2d_transpose)

namespace ops {

XQ_DECL var conv2d_transpose(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                             const std::string& path) {
  if (w.dimension() != 4)
    throw shape_error(path, "kernel of rank 4 (KH, KW, F, C)", detail::shape_string(w.shape()));
  const std::size_t kh = w.shape()[0], kw = w.shape()[1], f = w.shape()[2], c = w.shape()[3];
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::exactly(c)});
  if (b) detail::require_shape(path, b->shape(), {detail::exactly(f)}, "bias");
  const auto strides = detail::positive_size2(path, "strides", geometry.strides);
  const auto dilation = detail::positive_size2(path, "dilation", geometry.dilation);
  if ((strides[0] > 1 || strides[1] > 1) && (dilation[0] > 1 || dilation[1] > 1))
    throw argument_error(path, "strides of 1 when the dilation is above 1 (as TF's conv2d_transpose)",
                         detail::concat("strides ", strides[0], "x", strides[1], " and dilation ", dilation[0], "x",
                                        dilation[1]));
  // Keras's deconv_output_length without output_padding, per axis.
  auto out_length = [&](std::size_t in, std::size_t k, std::size_t s, std::size_t d) {
    const std::size_t dilated = k + (k - 1) * (d - 1);
    return geometry.padding == xq::padding::same ? in * s : in * s + (dilated > s ? dilated - s : 0);
  };
  const std::size_t n = x.shape()[0], h = x.shape()[1], wd = x.shape()[2];
  const std::size_t oh = out_length(h, kh, strides[0], dilation[0]), ow = out_length(wd, kw, strides[1], dilation[1]);
  // The convolution this op is the adjoint of: from the output's shape back to x's.
  const tensor::shape_type y_shape{n, oh, ow, f};
  const window2d g = resolve_window(path, y_shape, kh, kw, geometry);
  if (g.out_h != h || g.out_w != wd)
    throw error(detail::concat(path, ": internal: the adjoint convolution of ", detail::shape_string(y_shape),
                               " gives ", g.out_h, "x", g.out_w, " pixels, not the input's ", h, "x", wd));
  const std::size_t pixels = n * h * wd, patch = g.patch_size();

  tensor y = tensor::from_shape(y_shape);
  if (pixels && patch) {
    auto cols = detail::workspace(pixels * patch);
    // cols (pixels x patch) = x (pixels x C) · kernel matrix (patch x C)^T.
    kernels::gemm(false, true, pixels, patch, c, 1.0f, x.value().data(), c, w.value().data(), c, 0.0f, cols.get(),
                  patch);
    kernels::col2im(cols.get(), g, y.data());
  } else {
    std::fill(y.begin(), y.end(), 0.0f);
  }
  if (b) {
    const float* bias = b->value().data();
    for (std::size_t p = 0; p < n * oh * ow; ++p)
      for (std::size_t k = 0; k < f; ++k) y.data()[p * f + k] += bias[k];
  }
  notify_op(path, "conv2d_transpose", {n, h, wd, f}, w.shape());  // MACs: kernel x input pixels

  const var bias = b ? *b : var();
  const bool record = b ? needs_grad(x, w, *b) : needs_grad(x, w);
  return make_result(std::move(y), record, [x, w, bias, g, pixels, patch, c, f](const tensor& dy) {
    if (bias.defined() && bias.requires_grad()) {
      tensor db = tensor::from_shape({f});
      std::fill(db.begin(), db.end(), 0.0f);
      kernels::add_column_sums(dy.data(), g.batch * g.in_h * g.in_w, f, db.data());
      add_grad(bias, std::move(db));
    }
    if (!(x.requires_grad() || w.requires_grad())) return;
    auto cols = detail::workspace(pixels * patch);
    if (pixels && patch) kernels::im2col(dy.data(), g, cols.get());
    if (x.requires_grad()) {  // dx = im2col(dy) · kernel matrix: the forward convolution of dy
      tensor dx = tensor::from_shape(x.shape());
      kernels::gemm(false, false, pixels, c, patch, 1.0f, cols.get(), patch, w.value().data(), c, 0.0f, dx.data(), c);
      add_grad(x, std::move(dx));
    }
    if (w.requires_grad()) {  // dkernel (patch x C) = im2col(dy)^T · x
      tensor dw = tensor::from_shape(w.shape());
      kernels::gemm(true, false, patch, c, pixels, 1.0f, cols.get(), patch, x.value().data(), c, 0.0f, dw.data(), c);
      add_grad(w, std::move(dw));
    }
  });
}

}  // namespace ops

XQ_DECL conv2d_transpose::conv2d_transpose(std::size_t filters, size2 kernel_size)
    : window_layer<conv2d_transpose>("conv2d_transpose", kernel_size), filters_(filters) {
  if (filters == 0) throw argument_error("conv2d_transpose", "filters of at least 1", "0");
}

XQ_DECL var conv2d_transpose::call(const var& x) {
  ensure_built(x);
  return call_with(x, kernel_, bias_ ? var(bias_) : var());
}

XQ_DECL void conv2d_transpose::ensure_built(const var& x) {
  if (kernel_) return;
  detail::require_shape(path(), x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  build(x.shape()[3]);
}

XQ_DECL var conv2d_transpose::call_with(const var& x, const var& kernel, const var& bias) const {
  return ops::conv2d_transpose(x, kernel, bias.defined() ? &bias : nullptr, geometry_, path());
}

XQ_DECL void conv2d_transpose::build(std::size_t in_channels) {
  if (in_channels == 0) throw shape_error(path(), "input with at least 1 channel", "0 channels");
  const std::size_t taps = kernel_size_[0] * kernel_size_[1];
  kernel_ = make_parameter("kernel", glorot_uniform({kernel_size_[0], kernel_size_[1], filters_, in_channels},
                                                    taps * filters_, taps * in_channels));
  if (use_bias_) bias_ = make_parameter("bias", detail::zeros_tensor({filters_}));
  name_parameters();
}

}  // namespace xq
