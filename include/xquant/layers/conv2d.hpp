#pragma once
/// \file conv2d.hpp
/// `xq::conv2d`: 2-D convolution over NHWC inputs with an HWIO kernel (Keras
/// Conv2D, no activation): strides, `valid`/`same` padding (TF's rules, see
/// padding.hpp) and dilation.
///
/// \code
///   xq::conv2d conv = xq::conv2d(64, 3).strides(2).padding(xq::padding::same).name("stem");
///   xq::var y = conv(x);   // x (N, H, W, C) -> y (N, ceil(H/2), ceil(W/2), 64)
/// \endcode
///
/// Computed as im2col + one GEMM: cols [N*OH*OW, KH*KW*C] x kernel [KH*KW*C, F]
/// is the NHWC output. A 1x1, stride-1 convolution without padding skips im2col
/// (the input already is the column matrix). Backward reuses the forward's column
/// matrix: dkernel = colsᵀ·dy, dx = col2im(dy·kernelᵀ), dbias = column sums of dy.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "../core/layer.hpp"
#include "../core/random.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../kernels/gemm.hpp"
#include "../kernels/im2col.hpp"
#include "padding.hpp"

namespace xq {

namespace detail {

/// Uninitialized float storage a backward step can own (std::function needs copies).
inline std::shared_ptr<float[]> workspace(std::size_t n) { return std::shared_ptr<float[]>(new float[n]); }

}  // namespace detail

namespace ops {

/// 2-D convolution of x (N, H, W, C) with kernel w (KH, KW, C, F) [+ bias b (F,)] on the
/// tape; output (N, OH, OW, F). `path` names the caller in errors. `w` may be any var
/// (a fake-quantized kernel, say): its gradient flows back through it.
inline var conv2d(const var& x, const var& w, const var* b, const conv2d_geometry& geometry,
                  const std::string& path = "conv2d") {
  if (w.dimension() != 4)
    throw shape_error(path, "kernel of rank 4 (KH, KW, C, F)", detail::shape_string(w.shape()));
  const std::size_t kh = w.shape()[0], kw = w.shape()[1], c = w.shape()[2], f = w.shape()[3];
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::exactly(c)});
  if (b) detail::require_shape(path, b->shape(), {detail::exactly(f)}, "bias");
  detail::positive_size2(path, "strides", geometry.strides);
  detail::positive_size2(path, "dilation", geometry.dilation);
  const window2d g = resolve_window(path, x.shape(), kh, kw, geometry);
  const std::size_t m = g.out_pixels(), k = g.patch_size();

  tensor y = tensor::from_shape({g.batch, g.out_h, g.out_w, f});
  if (b) {
    const float* bias = b->value().data();
    for (std::size_t r = 0; r < m; ++r) std::copy(bias, bias + f, y.data() + r * f);
  }
  const bool pointwise = g.is_pointwise();
  std::shared_ptr<float[]> cols;
  if (!pointwise) {
    cols = detail::workspace(m * k);
    kernels::im2col(x.value().data(), g, cols.get());
  }
  kernels::gemm(false, false, m, f, k, 1.0f, pointwise ? x.value().data() : cols.get(), k, w.value().data(), f,
                b ? 1.0f : 0.0f, y.data(), f);

  const bool record = b ? needs_grad(x, w, *b) : needs_grad(x, w);
  if (!record || !w.requires_grad()) cols.reset();  // only the kernel gradient reads them
  const var bias = b ? *b : var();
  return make_result(std::move(y), record, [x, w, bias, g, cols, pointwise, m, k, f](const tensor& dy) mutable {
    if (w.requires_grad()) {  // dw = colsᵀ · dy
      tensor dw = tensor::from_shape(w.shape());
      kernels::gemm(true, false, k, f, m, 1.0f, pointwise ? x.value().data() : cols.get(), k, dy.data(), f, 0.0f,
                    dw.data(), f);
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
      } else {  // dcols = dy · wᵀ, in the columns' storage when the kernel gradient is done with it
        std::shared_ptr<float[]> dcols = cols ? std::move(cols) : detail::workspace(m * k);
        kernels::gemm(false, true, m, k, f, 1.0f, dy.data(), f, w.value().data(), f, 0.0f, dcols.get(), k);
        kernels::col2im(dcols.get(), g, dx.data());
      }
      add_grad(x, std::move(dx));
    }
    cols.reset();
  });
}

}  // namespace ops

/// 2-D convolution layer (Keras Conv2D without activation). The kernel (KH, KW, C, F),
/// "kernel", is built on the first call from the input's channels, Glorot-uniform with
/// Keras's fans (fan_in = KH*KW*C, fan_out = KH*KW*F); the bias (F,), "bias", starts at 0.
class conv2d : public layer<conv2d> {
 public:
  /// `filters` output channels, a `kernel_size` window (`3` or `{3, 5}`).
  explicit conv2d(std::size_t filters = 1, size2 kernel_size = 1)
      : layer<conv2d>("conv2d"), filters_(filters),
        kernel_size_(detail::positive_size2("conv2d", "kernel_size", kernel_size)) {
    if (filters == 0) throw argument_error("conv2d", "filters of at least 1", "0");
  }

  /// Window step (`2` or `{2, 1}`); default 1.
  conv2d& strides(size2 s) {
    geometry_.strides = detail::positive_size2(path(), "strides", s);
    return *this;
  }
  /// `xq::padding::valid` (default) or `same`.
  conv2d& padding(xq::padding p) {
    geometry_.padding = p;
    return *this;
  }
  /// Spacing between kernel taps (`2` or `{2, 1}`); default 1.
  conv2d& dilation(size2 d) {
    geometry_.dilation = detail::positive_size2(path(), "dilation", d);
    return *this;
  }
  /// Whether the layer adds a bias (default true); set before the first call.
  conv2d& use_bias(bool on) {
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
    return ops::conv2d(x, kernel_, bias_ ? &b : nullptr, geometry_, path());
  }

  /// Creates the parameters for `in_channels` input channels (the first call does it).
  void build(std::size_t in_channels) {
    if (in_channels == 0) throw shape_error(path(), "input with at least 1 channel", "0 channels");
    const std::size_t taps = kernel_size_[0] * kernel_size_[1];
    kernel_ = make_parameter("kernel", glorot_uniform({kernel_size_[0], kernel_size_[1], in_channels, filters_},
                                                      taps * in_channels, taps * filters_));
    if (use_bias_) bias_ = make_parameter("bias", xt::zeros<float>({filters_}));
    name_parameters();
  }

  std::vector<parameter_ptr> parameters() const { return {kernel_, bias_}; }
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  std::size_t filters() const noexcept { return filters_; }
  std::array<std::size_t, 2> kernel_size() const noexcept { return kernel_size_; }
  std::array<std::size_t, 2> strides() const noexcept { return geometry_.strides; }
  xq::padding padding() const noexcept { return geometry_.padding; }
  std::array<std::size_t, 2> dilation() const noexcept { return geometry_.dilation; }
  bool use_bias() const noexcept { return use_bias_; }
  /// Strides, padding and dilation together (what `ops::conv2d` takes).
  const conv2d_geometry& geometry() const noexcept { return geometry_; }

 private:
  std::size_t filters_;
  std::array<std::size_t, 2> kernel_size_;
  conv2d_geometry geometry_;
  bool use_bias_ = true;
  parameter_ptr kernel_, bias_;
};

}  // namespace xq
