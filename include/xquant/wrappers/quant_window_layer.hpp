#pragma once
/// \file quant_window_layer.hpp
/// What Larq's two sliding-window quant layers (quant_conv2d.hpp,
/// quant_depthwise_conv2d.hpp) add to the wrapped-layer base: the window setters of the
/// float layer they hold (strides, padding, dilation, use_bias), Larq's `pad_values`,
/// and the call of the float layer's operation on the quantized input and kernel with
/// that padding (`window_call`, and `conv_window_call` for conv2d).

#include <array>
#include <cstddef>
#include <string>
#include <utility>

#include "../config.hpp"
#include "../core/shape_check.hpp"
#include "../kernels/padding.hpp"
#include "../layers/conv2d.hpp"
#include "padding_value_term.hpp"
#include "wrapped_layer.hpp"
#include "xnor_forward.hpp"

namespace xq {

namespace detail {

/// Larq's non-native "same" padding (`QuantizerBaseConv`): when `pad_value` is not 0,
/// `x` (the quantized input) is padded with it as TF's `same` rule pads zeros, and
/// `geometry` becomes `valid`; otherwise nothing changes (TF pads the zeros itself).
/// -0.0 counts as 0, as Larq's `pad_values == 0.0` test does.
XQ_DECL void pad_same_with_value(var& x, conv2d_geometry& geometry, std::size_t k_h, std::size_t k_w, float pad_value,
                                 const std::string& path);

/// A quant layer over a sliding-window float layer `Float` (conv2d, depthwise_conv2d).
template <class Self, class Float>
class quant_window_layer : public wrapped_layer<Self, Float> {
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
  explicit quant_window_layer(Float layer) : wrapped_layer<Self, Float>(std::move(layer)) {}

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

  /// `window_call` for a conv2d (quant_conv2d): with a padding value, the zero-padded
  /// convolution plus the value's term (padding_value_term.hpp), which computes what
  /// padding the input does without the padded copy, on the faster same-padded convolution.
  /// `binary`: the quantizers give ±1 (1-bit); where the values are (and the border is +1
  /// or absent), the sums come from XNOR-popcount (xnor_forward.hpp), the backward the same.
  var conv_window_call(const var& in, const var& kernel, bool binary = false) const {
    const var bias = this->layer_.bias() ? var(this->layer_.bias()) : var();
    const conv2d_geometry& g = this->layer_.geometry();
    const bool value_padded = g.padding == padding::same && pad_value_ != 0.0f;
    if (!value_padded && !binary) return this->layer_.call_with(in, kernel, bias);
    require_shape(this->path(), in.shape(), {any('N'), any('H'), any('W'), any('C')});
    const auto k = this->layer_.kernel_size();
    const window2d w = resolve_window(this->path(), in.shape(), k[0], k[1], g);
    // (A kernel of another shape is left to the convolution, which says what it expected.)
    const bool kernel_fits = kernel.dimension() == 4 && kernel.shape()[0] == k[0] && kernel.shape()[1] == k[1] &&
                             kernel.shape()[2] == w.channels;
    if (binary && kernel_fits && (g.padding == padding::valid || pad_value_ == 1.0f))
      if (auto sums = xnor_conv2d_sums(in.value(), kernel.value(), w)) {
        var y = ops::conv2d_with_sums(in, kernel, bias.defined() ? &bias : nullptr, g, std::move(*sums),
                                      this->layer_.path());
        return value_padded ? ops::add_padding_value_term(y, kernel, w, pad_value_, this->path(), /*in_value=*/true) : y;
      }
    var y = this->layer_.call_with(in, kernel, bias);
    return value_padded ? ops::add_padding_value_term(y, kernel, w, pad_value_, this->path()) : y;
  }

 private:
  float pad_value_ = 0.0f;
};

}  // namespace detail
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quant_window_layer.ipp"
#endif
