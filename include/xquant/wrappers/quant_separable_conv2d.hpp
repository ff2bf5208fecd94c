#pragma once
/// \file quant_separable_conv2d.hpp
/// `xq::quant_separable_conv2d<InputQ, DepthwiseQ, PointwiseQ>`: Larq's
/// `QuantSeparableConv2D` (Keras SeparableConv2D with quantizers),
///
///     x' = input_quantizer(x)
///     y  = conv1x1(depthwise_conv2d(x', depthwise_quantizer(depthwise_kernel)),
///                  pointwise_quantizer(pointwise_kernel)) + bias
///
/// as `tf.nn.separable_conv2d`: the depthwise step takes the strides, padding and
/// dilation; the pointwise step is a 1x1, stride-1, valid convolution. Latent float
/// kernels "depthwise_kernel" (KH, KW, C, M) and "pointwise_kernel" (1, 1, C*M, F),
/// which the optimizer updates (the quantizers run on the tape on every call); the
/// bias (F,) is never quantized; no fused activation. `pad_values` as in
/// quant_conv2d.hpp: the quantized input is padded with it before a valid separable
/// convolution, as Larq does.
///
/// Built on the first call, Glorot-uniform with Keras's fans for both kernels
/// (depthwise: KH*KW*C in, KH*KW*M out; pointwise: C*M in, F out), bias 0.
///
/// \code
///   auto sep = xq::quant_separable_conv2d(32, 3, xq::ste_sign(), xq::ste_sign(), xq::ste_sign())
///                  .padding(xq::padding::same).pad_values(1.0f).use_bias(false);
/// \endcode

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../fwd.hpp"
#include "../core/children.hpp"
#include "../core/layer.hpp"
#include "../core/layer_ref.hpp"
#include "../core/random.hpp"
#include "../core/shape_check.hpp"
#include "../layers/conv2d.hpp"
#include "../layers/depthwise_conv2d.hpp"
#include "../quantizers/no_quantizer.hpp"
#include "quant_window_layer.hpp"

namespace xq {

/// (Default template arguments: xquant/fwd.hpp.)
template <class InputQ, class DepthwiseQ, class PointwiseQ>
class quant_separable_conv2d : public layer<quant_separable_conv2d<InputQ, DepthwiseQ, PointwiseQ>> {
  using base = layer<quant_separable_conv2d<InputQ, DepthwiseQ, PointwiseQ>>;

 public:
  InputQ input_quantizer;
  DepthwiseQ depthwise_quantizer;
  PointwiseQ pointwise_quantizer;
  XQ_CHILDREN(input_quantizer, depthwise_quantizer, pointwise_quantizer)

  /// `filters` output channels, a `kernel_size` window (`3` or `{3, 5}`), the input,
  /// depthwise-kernel and pointwise-kernel quantizers (default: none).
  explicit quant_separable_conv2d(std::size_t filters = 1, size2 kernel_size = 1, InputQ input_q = InputQ{},
                                  DepthwiseQ depthwise_q = DepthwiseQ{}, PointwiseQ pointwise_q = PointwiseQ{})
      : base("quant_separable_conv2d"), input_quantizer(std::move(input_q)),
        depthwise_quantizer(std::move(depthwise_q)), pointwise_quantizer(std::move(pointwise_q)), filters_(filters),
        kernel_size_(detail::positive_size2("quant_separable_conv2d", "kernel_size", kernel_size)) {
    if (filters == 0) throw argument_error("quant_separable_conv2d", "filters of at least 1", "0");
    adopt_kernel_quantizer_metrics(depthwise_quantizer);
    adopt_kernel_quantizer_metrics(pointwise_quantizer);
    set_path(this->path());
  }

  using base::name;
  /// Renames the layer (chainable), its parameters and quantizers too.
  quant_separable_conv2d& name(std::string n) {
    base::name(std::move(n));
    set_path(this->path());
    return *this;
  }
  /// Sets the path, renaming the parameters and the quantizers ("net/sep/pointwise_quantizer").
  void set_path(std::string p) {
    detail::set_child_paths(as_layer_ref(*this), p);
    base::set_path(std::move(p));
  }

  /// Filters per input channel of the depthwise step (default 1); set before the first call.
  quant_separable_conv2d& depth_multiplier(std::size_t m) {
    if (m == 0) throw argument_error(this->path(), "depth_multiplier of at least 1", "0");
    if (depthwise_kernel_ && m != depth_multiplier_)
      throw argument_error(this->path(), "depth_multiplier set before the layer is built", "a built layer");
    depth_multiplier_ = m;
    return *this;
  }
  /// Window step of the depthwise step (`2` or `{2, 1}`); default 1.
  quant_separable_conv2d& strides(size2 s) {
    geometry_.strides = detail::positive_size2(this->path(), "strides", s);
    return *this;
  }
  /// `xq::padding::valid` (default) or `same`.
  quant_separable_conv2d& padding(xq::padding p) {
    geometry_.padding = p;
    return *this;
  }
  /// The value "same" padding adds around the quantized input (default 0).
  quant_separable_conv2d& pad_values(float v) {
    pad_value_ = v;
    return *this;
  }
  /// Spacing between depthwise kernel taps (`2` or `{2, 1}`); default 1.
  quant_separable_conv2d& dilation(size2 d) {
    geometry_.dilation = detail::positive_size2(this->path(), "dilation", d);
    return *this;
  }
  /// Whether the layer adds a bias (default true); set before the first call.
  quant_separable_conv2d& use_bias(bool on) {
    if (depthwise_kernel_ && on != use_bias_)
      throw argument_error(this->path(), "use_bias set before the layer is built", "a built layer");
    use_bias_ = on;
    return *this;
  }
  /// Keras's `depthwise_constraint`: applied to the latent depthwise kernel after
  /// every optimizer step (e.g. `xq::weight_clip`).
  quant_separable_conv2d& depthwise_constraint(parameter::constraint_function c) {
    depthwise_constraint_ = std::move(c);
    attach_constraint(depthwise_kernel_, depthwise_constraint_);
    return *this;
  }
  /// Keras's `pointwise_constraint`.
  quant_separable_conv2d& pointwise_constraint(parameter::constraint_function c) {
    pointwise_constraint_ = std::move(c);
    attach_constraint(pointwise_kernel_, pointwise_constraint_);
    return *this;
  }
  /// Keras's `bias_constraint`.
  quant_separable_conv2d& bias_constraint(parameter::constraint_function c) {
    bias_constraint_ = std::move(c);
    attach_constraint(bias_, bias_constraint_);
    return *this;
  }

  var call(const var& x) {
    ensure_built(x);
    var in = input_quantizer(x);
    const var depthwise = depthwise_quantizer(var(depthwise_kernel_));
    const var pointwise = pointwise_quantizer(var(pointwise_kernel_));
    conv2d_geometry g = geometry_;
    detail::pad_same_with_value(in, g, kernel_size_[0], kernel_size_[1], pad_value_, this->path());
    const var mid = ops::depthwise_conv2d(in, depthwise, nullptr, g, this->path());
    const var bias = bias_ ? var(bias_) : var();
    return ops::conv2d(mid, pointwise, bias_ ? &bias : nullptr, conv2d_geometry{}, this->path());
  }

  /// Builds the parameters from `x`'s channels unless built (what the first call does).
  void ensure_built(const var& x) {
    if (depthwise_kernel_) return;
    detail::require_shape(this->path(), x.shape(),
                          {detail::any('N'), detail::any('H'), detail::any('W'), detail::any('C')});
    build(x.shape()[3]);
  }
  /// Creates the parameters for `in_channels` input channels (the first call does it),
  /// in Keras's order: depthwise kernel, pointwise kernel, bias.
  void build(std::size_t in_channels) {
    if (in_channels == 0) throw shape_error(this->path(), "input with at least 1 channel", "0 channels");
    const std::size_t taps = kernel_size_[0] * kernel_size_[1], mid = in_channels * depth_multiplier_;
    depthwise_kernel_ = make_parameter(
        "depthwise_kernel", glorot_uniform({kernel_size_[0], kernel_size_[1], in_channels, depth_multiplier_},
                                           taps * in_channels, taps * depth_multiplier_));
    pointwise_kernel_ = make_parameter("pointwise_kernel", glorot_uniform({1, 1, mid, filters_}, mid, filters_));
    if (use_bias_) bias_ = make_parameter("bias", xt::zeros<float>({filters_}));
    attach_constraint(depthwise_kernel_, depthwise_constraint_);
    attach_constraint(pointwise_kernel_, pointwise_constraint_);
    attach_constraint(bias_, bias_constraint_);
    this->name_parameters();
  }

  /// The layer's own parameters (the quantizers list theirs).
  std::vector<parameter_ptr> parameters() const { return {depthwise_kernel_, pointwise_kernel_, bias_}; }
  /// Each stored parameter slot, null ones included (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(depthwise_kernel_);
    f(pointwise_kernel_);
    f(bias_);
  }

  /// The input quantizer's precision in bits; nullopt without one (Larq's summary: "-").
  std::optional<int> input_precision() const { return declared_precision(input_quantizer); }
  /// The layer's own parameters with their bit widths: each kernel's quantizer's
  /// precision (32 without one), the bias 32 (empty until built).
  std::vector<std::pair<parameter_ptr, int>> weight_precisions() const {
    std::vector<std::pair<parameter_ptr, int>> out;
    if (depthwise_kernel_) out.emplace_back(depthwise_kernel_, weight_bitwidth(depthwise_quantizer));
    if (pointwise_kernel_) out.emplace_back(pointwise_kernel_, weight_bitwidth(pointwise_quantizer));
    if (bias_) out.emplace_back(bias_, 32);
    return out;
  }

  /// The latent depthwise kernel (KH, KW, C, M).
  const parameter_ptr& depthwise_kernel() const noexcept { return depthwise_kernel_; }
  /// The latent pointwise kernel (1, 1, C*M, F).
  const parameter_ptr& pointwise_kernel() const noexcept { return pointwise_kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  std::size_t filters() const noexcept { return filters_; }
  std::array<std::size_t, 2> kernel_size() const noexcept { return kernel_size_; }
  std::size_t depth_multiplier() const noexcept { return depth_multiplier_; }
  std::array<std::size_t, 2> strides() const noexcept { return geometry_.strides; }
  xq::padding padding() const noexcept { return geometry_.padding; }
  float pad_values() const noexcept { return pad_value_; }
  std::array<std::size_t, 2> dilation() const noexcept { return geometry_.dilation; }
  bool use_bias() const noexcept { return use_bias_; }
  /// Strides, padding and dilation of the depthwise step.
  const conv2d_geometry& geometry() const noexcept { return geometry_; }

 private:
  /// Sets `c` as `p`'s constraint (if both exist).
  static void attach_constraint(const parameter_ptr& p, const parameter::constraint_function& c) {
    if (p && c) p->set_constraint(c);
  }

  std::size_t filters_;
  std::array<std::size_t, 2> kernel_size_;
  std::size_t depth_multiplier_ = 1;
  conv2d_geometry geometry_;
  float pad_value_ = 0.0f;
  bool use_bias_ = true;
  parameter_ptr depthwise_kernel_, pointwise_kernel_, bias_;
  parameter::constraint_function depthwise_constraint_, pointwise_constraint_, bias_constraint_;
};

}  // namespace xq
