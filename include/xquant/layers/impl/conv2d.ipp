#pragma once
/// \file conv2d.ipp
/// conv2d's code (layers/conv2d.hpp): compiled by every translation unit in header-only
/// mode, once in <xquant/src.hpp> in separate mode.

#include <algorithm>
#include <memory>
#include <vector>

#include "../conv2d.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(conv2d)

namespace detail {

XQ_DECL std::size_t images_per_block(const window2d& g) {
  if (g.batch == 0) return 1;
  const std::size_t bytes = g.out_h * g.out_w * g.patch_size() * sizeof(float);
  const std::size_t fit = std::max<std::size_t>(1, bytes == 0 ? g.batch : std::size_t(XQ_CONV_BLOCK_BYTES) / bytes);
  const std::size_t blocks = (g.batch + fit - 1) / fit;
  return (g.batch + blocks - 1) / blocks;
}

}  // namespace detail

namespace detail {

/// ops::conv2d and ops::conv2d_with_sums: `given` (when not null) holds the sums.
XQ_DECL var conv2d_op(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                      const std::string& path, tensor* given) {
  if (w.dimension() != 4)
    throw shape_error(path, "kernel of rank 4 (KH, KW, C, F)", detail::shape_string(w.shape()));
  const std::size_t kh = w.shape()[0], kw = w.shape()[1], c = w.shape()[2], f = w.shape()[3];
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::exactly(c)});
  if (b) detail::require_shape(path, b->shape(), {detail::exactly(f)}, "bias");
  detail::positive_size2(path, "strides", geometry.strides);
  detail::positive_size2(path, "dilation", geometry.dilation);
  const window2d g = resolve_window(path, x.shape(), kh, kw, geometry);
  const std::size_t m = g.out_pixels(), k = g.patch_size();
  const std::size_t image_in = g.in_h * g.in_w * c, rows = g.out_h * g.out_w;
  const bool record = b ? needs_grad(x, w, *b) : needs_grad(x, w);
  const bool pointwise = g.is_pointwise();
  // The kernel gradient reads the whole column matrix: kept only when it will be needed.
  const bool keep_cols = record && w.requires_grad() && !pointwise;
  const std::size_t block = detail::images_per_block(g);

  tensor y = given ? std::move(*given) : tensor::from_shape({g.batch, g.out_h, g.out_w, f});
  if (given) {
    require_shape(path + " (given sums)", y.shape(), {exactly(g.batch), exactly(g.out_h), exactly(g.out_w), exactly(f)});
    if (b) {
      const float* bias = b->value().data();
      float* out = y.data();
      for (std::size_t p = 0; p < m; ++p)
        for (std::size_t j = 0; j < f; ++j) out[p * f + j] += bias[j];
    }
  }
#if XQ_HAVE_ONEDNN
  if (!pointwise && kernels::use_onednn(g)) {
    // What oneDNN refuses comes back naming the layer.
    const auto on_layer = [](const std::string& where, auto&& call) {
      try {
        call();
      } catch (const error& e) {
        throw error(where + ": " + e.what());
      }
    };
    if (!given) on_layer(path, [&] {
      kernels::onednn::conv2d_forward(g, f, x.value().data(), w.value().data(), b ? b->value().data() : nullptr,
                                      y.data());
    });
    notify_op(path, "conv2d", y.shape(), w.shape());
    const var bias = b ? *b : var();
    return make_result(std::move(y), record, [x, w, bias, g, f, path, on_layer](const tensor& dy) {
      const bool bias_grad = bias.defined() && bias.requires_grad();
      if (w.requires_grad()) {
        tensor dw = tensor::from_shape(w.shape());
        tensor db = bias_grad ? tensor::from_shape({f}) : tensor();
        on_layer(path, [&] {
          kernels::onednn::conv2d_backward_weights(g, f, x.value().data(), dy.data(), dw.data(),
                                                   bias_grad ? db.data() : nullptr);
        });
        add_grad(w, std::move(dw));
        if (bias_grad) add_grad(bias, std::move(db));
      } else if (bias_grad) {
        tensor db = xt::zeros<float>({f});
        kernels::add_column_sums(dy.data(), g.out_pixels(), f, db.data());
        add_grad(bias, std::move(db));
      }
      if (x.requires_grad()) {
        tensor dx = tensor::from_shape(x.shape());
        on_layer(path, [&] { kernels::onednn::conv2d_backward_data(g, f, dy.data(), w.value().data(), dx.data()); });
        add_grad(x, std::move(dx));
      }
    });
  }
#endif
  // y = bias, then y += cols · w (a GEMM with beta = 1), over `count` rows from `first`.
  auto multiply = [&](const float* a, std::size_t first, std::size_t count) {
    float* yb = y.data() + first * f;
    if (b) {
      const float* bias = b->value().data();
      for (std::size_t r = 0; r < count; ++r) detail::copy_run(yb + r * f, bias, f);
    }
    kernels::gemm(false, false, count, f, k, 1.0f, a, k, w.value().data(), f, b ? 1.0f : 0.0f, yb, f);
  };
  std::shared_ptr<float[]> cols;
  if (given) {
    // The kernel gradient's columns are built in the backward (when it runs).
  } else if (pointwise) {
    multiply(x.value().data(), 0, m);
  } else {
    cols = detail::workspace((keep_cols ? g.batch : block) * rows * k);
    for (std::size_t n0 = 0; n0 < g.batch; n0 += block) {
      window2d part = g;
      part.batch = std::min(block, g.batch - n0);
      float* cb = cols.get() + (keep_cols ? n0 * rows * k : 0);
      kernels::im2col(x.value().data() + n0 * image_in, part, cb);
      multiply(cb, n0 * rows, part.batch * rows);
    }
  }
  if (!keep_cols) cols.reset();
  notify_op(path, "conv2d", y.shape(), w.shape());  // for xq::summarize's MAC count

  const var bias = b ? *b : var();
  return make_result(std::move(y), record, [x, w, bias, g, cols, pointwise, m, k, f](const tensor& dy) mutable {
    if (w.requires_grad() && !pointwise && !cols) {  // the forward had its sums given
      cols = workspace(m * k);
      kernels::im2col(x.value().data(), g, cols.get());
    }
    if (w.requires_grad()) {
      // dwᵀ = dyᵀ · cols, then transposed (F x K is small): OpenBLAS packs this operand
      // order faster than colsᵀ · dy (5-10% on the 3x3 32->64 conv).
      std::vector<float> dwt(f * k);
      kernels::gemm(true, false, f, k, m, 1.0f, dy.data(), f, pointwise ? x.value().data() : cols.get(), k, 0.0f,
                    dwt.data(), k);
      tensor dw = tensor::from_shape(w.shape());
      for (std::size_t i = 0; i < k; ++i)
        for (std::size_t j = 0; j < f; ++j) dw.data()[i * f + j] = dwt[j * k + i];
      add_grad(w, std::move(dw));
    }
    if (bias.defined() && bias.requires_grad()) {
      tensor db = xt::zeros<float>({f});
      kernels::add_column_sums(dy.data(), m, f, db.data());
      add_grad(bias, std::move(db));
    }
    if (x.requires_grad()) {
      tensor dx = tensor::from_shape(x.shape());
      if (pointwise) {  // dx = dy · wᵀ is already NHWC
        kernels::gemm(false, true, m, k, f, 1.0f, dy.data(), f, w.value().data(), f, 0.0f, dx.data(), k);
      } else {  // per block: dcols = dy · wᵀ, then col2im while dcols is in cache
        const std::size_t rows = g.out_h * g.out_w, image_in = g.in_h * g.in_w * g.channels;
        const std::size_t block = detail::images_per_block(g);
        // The kernel gradient is done with the columns: their storage holds dcols.
        std::shared_ptr<float[]> dcols = cols ? std::move(cols) : detail::workspace(block * rows * k);
        for (std::size_t n0 = 0; n0 < g.batch; n0 += block) {
          window2d part = g;
          part.batch = std::min(block, g.batch - n0);
          kernels::gemm(false, true, part.batch * rows, k, f, 1.0f, dy.data() + n0 * rows * f, f, w.value().data(),
                        f, 0.0f, dcols.get(), k);
          kernels::col2im(dcols.get(), part, dx.data() + n0 * image_in);
        }
      }
      add_grad(x, std::move(dx));
    }
    cols.reset();
  });
}

}  // namespace detail

namespace ops {

XQ_DECL var conv2d(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                   const std::string& path) {
  return detail::conv2d_op(x, w, b, geometry, path, nullptr);
}

XQ_DECL var conv2d_with_sums(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                             tensor sums, const std::string& path) {
  return detail::conv2d_op(x, w, b, geometry, path, &sums);
}

}  // namespace ops

XQ_DECL var conv2d::call(const var& x) {
  ensure_built(x);
  return call_with(x, kernel_, bias_ ? var(bias_) : var());
}

XQ_DECL void conv2d::ensure_built(const var& x) {
  if (kernel_) return;
  detail::require_shape(path(), x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  build(x.shape()[3]);
}

XQ_DECL var conv2d::call_with(const var& x, const var& kernel, const var& bias) const {
  return ops::conv2d(x, kernel, bias.defined() ? &bias : nullptr, geometry_, path());
}

XQ_DECL void conv2d::build(std::size_t in_channels) {
  if (in_channels == 0) throw shape_error(path(), "input with at least 1 channel", "0 channels");
  const std::size_t taps = kernel_size_[0] * kernel_size_[1];
  kernel_ = make_parameter("kernel", glorot_uniform({kernel_size_[0], kernel_size_[1], in_channels, filters_},
                                                    taps * in_channels, taps * filters_));
  if (use_bias_) bias_ = make_parameter("bias", xt::zeros<float>({filters_}));
  name_parameters();
}

XQ_DECL conv2d::conv2d(std::size_t filters, size2 kernel_size)
    : window_layer<conv2d>("conv2d", kernel_size), filters_(filters) {
  if (filters == 0) throw argument_error("conv2d", "filters of at least 1", "0");
}

}  // namespace xq
