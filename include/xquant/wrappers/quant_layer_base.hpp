#pragma once
/// \file quant_layer_base.hpp
/// What Larq's quant layers (quant_dense.hpp, quant_conv2d.hpp,
/// quant_depthwise_conv2d.hpp, quant_separable_conv2d.hpp) share:
///  - `detail::quant_layer_base<Self, Float>`: a quant layer holds the float layer it
///    quantizes (`xq::dense`, `xq::conv2d`, ...) by value and runs the float layer's
///    operation (`call_with`) on the quantized input and kernel; the float layer keeps
///    the latent kernel and the bias, the name and the path (so the parameters are
///    "net/conv/kernel", as Keras names them), and the quantizers are children
///    ("net/conv/kernel_quantizer");
///  - kernel and bias constraints (Keras's `kernel_constraint`), attached to the
///    parameters when the layer builds them;
///  - `detail::quant_window_layer_base`: the window setters of the two convolutions
///    (strides, padding, dilation, Larq's `pad_values`) and their padded call;
///  - `ops::pad2d`: constant padding on the tape, for Larq's `pad_values`.

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/model.hpp"
#include "../core/parameter.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../quantizers/no_quantizer.hpp"
#include "../kernels/padding.hpp"

namespace xq {

namespace ops {

/// x (N, H, W, C) with `top`/`bottom` rows and `left`/`right` columns of `value` around
/// each image, on the tape (the gradient is dy cropped back to x's shape): what
/// `tf.pad(x, paddings, constant_values=value)` computes for Larq's `pad_values`.
inline var pad2d(const var& x, std::size_t top, std::size_t bottom, std::size_t left, std::size_t right, float value,
                 const std::string& path = "pad2d") {
  detail::require_shape(path, x.shape(), {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
  const std::size_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  const std::size_t oh = h + top + bottom, ow = w + left + right;
  tensor y = tensor::from_shape({n, oh, ow, c});
  std::fill(y.begin(), y.end(), value);
  const float* src = x.value().data();
  float* dst = y.data();
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < h; ++i)
      std::copy(src + ((b * h + i) * w) * c, src + ((b * h + i) * w + w) * c,
                dst + ((b * oh + i + top) * ow + left) * c);
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

}  // namespace ops

namespace detail {

/// Sets a quantizer child's path (a `no_quantizer`, which has none, is skipped).
template <class Q>
void set_quantizer_path(Q& q, const std::string& path) {
  if constexpr (has_set_path<Q>::value) {
    q.set_path(path);
  } else {
    (void)q;
    (void)path;
  }
}

/// Larq's non-native "same" padding (`QuantizerBaseConv`): when `pad_value` is not 0,
/// `x` (the quantized input) is padded with it as TF's `same` rule pads zeros, and
/// `geometry` becomes `valid`; otherwise nothing changes (TF pads the zeros itself).
/// -0.0 counts as 0, as Larq's `pad_values == 0.0` test does.
inline void pad_same_with_value(var& x, conv2d_geometry& geometry, std::size_t k_h, std::size_t k_w, float pad_value,
                                const std::string& path) {
  if (geometry.padding != padding::same || pad_value == 0.0f) return;
  require_shape(path, x.shape(), {any('N'), any('H'), any('W'), any('C')});
  (void)resolve_window(path, x.shape(), k_h, k_w, geometry);  // the shape errors of a same conv
  const window_axis h = resolve_axis(x.shape()[1], k_h, geometry.strides[0], geometry.dilation[0], padding::same);
  const window_axis w = resolve_axis(x.shape()[2], k_w, geometry.strides[1], geometry.dilation[1], padding::same);
  x = ops::pad2d(x, h.pad_before, h.pad_after, w.pad_before, w.pad_after, pad_value, path);
  geometry.padding = padding::valid;
}

/// Sets `c` as `p`'s constraint (if both exist).
inline void attach_constraint(const parameter_ptr& p, const parameter::constraint_function& c) {
  if (p && c) p->set_constraint(c);
}

/// The part of a quant layer that holds its float layer `Float` (dense, conv2d,
/// depthwise_conv2d): name, path, parameters, constraints. `Self` provides
/// `name_quantizers(path)`.
template <class Self, class Float>
class quant_layer_base {
 public:
  /// The layer's own name ("quant_conv2d" until renamed).
  const std::string& name() const noexcept { return layer_.name(); }
  /// Renames the layer (chainable).
  Self& name(std::string n) {
    layer_.name(std::move(n));
    self().set_path(layer_.path());
    return self();
  }
  /// The full path in its model ("net/conv").
  const std::string& path() const noexcept { return layer_.path(); }
  /// Sets the path, renaming the parameters ("net/conv/kernel") and the quantizers
  /// ("net/conv/kernel_quantizer"; `set_paths` gives them the same).
  void set_path(std::string p) {
    layer_.set_path(p);
    self().name_quantizers(p);
  }

  /// The layer's own parameters: the latent kernel and the bias (null until built, or
  /// without bias). A quantizer's parameters are listed by the quantizer (a child).
  std::vector<parameter_ptr> parameters() const { return layer_.parameters(); }
  /// Each stored parameter slot (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    layer_.for_each_parameter_slot(f);
  }
  /// The latent (float) kernel, which the optimizer updates; the quantizer sees it
  /// on every call.
  const parameter_ptr& kernel() const noexcept { return layer_.kernel(); }
  const parameter_ptr& bias() const noexcept { return layer_.bias(); }

  /// Keras's `kernel_constraint`: applied to the latent kernel after every optimizer
  /// step (Larq pairs binary kernels with `xq::weight_clip`). Empty: none.
  Self& kernel_constraint(parameter::constraint_function c) {
    kernel_constraint_ = std::move(c);
    attach_constraint(layer_.kernel(), kernel_constraint_);
    return self();
  }
  /// Keras's `bias_constraint`.
  Self& bias_constraint(parameter::constraint_function c) {
    bias_constraint_ = std::move(c);
    attach_constraint(layer_.bias(), bias_constraint_);
    return self();
  }
  const parameter::constraint_function& kernel_constraint() const noexcept { return kernel_constraint_; }
  const parameter::constraint_function& bias_constraint() const noexcept { return bias_constraint_; }

  /// Builds the parameters from `x` unless built (what the first call does).
  void ensure_built(const var& x) {
    if (layer_.kernel()) return;
    layer_.ensure_built(x);
    attach_constraint(layer_.kernel(), kernel_constraint_);
    attach_constraint(layer_.bias(), bias_constraint_);
  }

 protected:
  explicit quant_layer_base(Float layer) : layer_(std::move(layer)) {}

  Float layer_;
  parameter::constraint_function kernel_constraint_, bias_constraint_;

  Self& self() noexcept { return static_cast<Self&>(*this); }
};

/// A quant layer over a sliding-window float layer (conv2d, depthwise_conv2d): its
/// geometry setters, Larq's `pad_values`, and the call `window_call`.
template <class Self, class Float>
class quant_window_layer_base : public quant_layer_base<Self, Float> {
 public:
  /// Window step (`2` or `{2, 1}`); default 1.
  Self& strides(size2 s) {
    this->layer_.strides(s);
    return this->self();
  }
  /// `xq::padding::valid` (default) or `same`.
  Self& padding(xq::padding p) {
    this->layer_.padding(p);
    return this->self();
  }
  /// The value "same" padding adds around the quantized input (default 0).
  Self& pad_values(float v) {
    pad_value_ = v;
    return this->self();
  }
  /// Spacing between kernel taps (`2` or `{2, 1}`); default 1.
  Self& dilation(size2 d) {
    this->layer_.dilation(d);
    return this->self();
  }
  /// Whether the layer adds a bias (default true); set before the first call.
  Self& use_bias(bool on) {
    this->layer_.use_bias(on);
    return this->self();
  }

  std::array<std::size_t, 2> kernel_size() const noexcept { return this->layer_.kernel_size(); }
  std::array<std::size_t, 2> strides() const noexcept { return this->layer_.strides(); }
  xq::padding padding() const noexcept { return this->layer_.padding(); }
  float pad_values() const noexcept { return pad_value_; }
  std::array<std::size_t, 2> dilation() const noexcept { return this->layer_.dilation(); }
  bool use_bias() const noexcept { return this->layer_.use_bias(); }
  const conv2d_geometry& geometry() const noexcept { return this->layer_.geometry(); }

 protected:
  using quant_layer_base<Self, Float>::quant_layer_base;

  /// The float layer's operation on the quantized input `in` and kernel, with Larq's
  /// padding: when `pad_values` is not 0 and the padding is same, `in` is padded with
  /// it and `valid_op(in, kernel, bias*, geometry, path)` (ops::conv2d,
  /// ops::depthwise_conv2d) runs a valid window; otherwise the float layer's call.
  template <class ValidOp>
  var window_call(var in, const var& kernel, ValidOp&& valid_op) const {
    const var bias = this->layer_.bias() ? var(this->layer_.bias()) : var();
    conv2d_geometry g = this->layer_.geometry();
    const auto k = this->layer_.kernel_size();
    pad_same_with_value(in, g, k[0], k[1], pad_value_, this->path());
    if (g.padding == this->layer_.geometry().padding) return this->layer_.call_with(in, kernel, bias);
    return valid_op(in, kernel, bias.defined() ? &bias : nullptr, g, this->path());
  }

 private:
  float pad_value_ = 0.0f;
};

}  // namespace detail
}  // namespace xq
