#pragma once
/// \file quant_depthwise_conv2d.hpp
/// `xq::quant_depthwise_conv2d<InputQ, DepthwiseQ>`: Larq's `QuantDepthwiseConv2D`,
///
///     y = depthwise_conv2d(input_quantizer(x), depthwise_quantizer(depthwise_kernel)) + bias
///
/// with a latent float kernel (KH, KW, C, M), "depthwise_kernel", that the optimizer
/// updates (the quantizer runs on the tape on every call; see quant_dense.hpp). The
/// bias is never quantized; no fused activation. Strides, padding, dilation and
/// `pad_values` (the constant "same" padding puts around the quantized input, see
/// quant_conv2d.hpp) as Larq.
///
/// \code
///   auto dw = xq::quant_depthwise_conv2d(3, xq::ste_sign(), xq::ste_sign())
///                 .depth_multiplier(2).padding(xq::padding::same).pad_values(1.0f)
///                 .depthwise_constraint(xq::weight_clip());
/// \endcode

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../fwd.hpp"
#include "../core/children.hpp"
#include "../layers/depthwise_conv2d.hpp"
#include "../quantizers/no_quantizer.hpp"
#include "quant_window_layer.hpp"

namespace xq {

/// (Default template arguments: xquant/fwd.hpp.)
template <class InputQ, class DepthwiseQ>
class quant_depthwise_conv2d
    : public detail::quant_window_layer<quant_depthwise_conv2d<InputQ, DepthwiseQ>, depthwise_conv2d> {
  using base = detail::quant_window_layer<quant_depthwise_conv2d<InputQ, DepthwiseQ>, depthwise_conv2d>;

 public:
  InputQ input_quantizer;
  DepthwiseQ depthwise_quantizer;
  XQ_CHILDREN(input_quantizer, depthwise_quantizer)

  /// A `kernel_size` window (`3` or `{3, 5}`), the input and depthwise-kernel
  /// quantizers (default: none). One filter per input channel unless `depth_multiplier`.
  explicit quant_depthwise_conv2d(size2 kernel_size = 1, InputQ input_q = InputQ{},
                                  DepthwiseQ depthwise_q = DepthwiseQ{})
      : base(depthwise_conv2d(kernel_size).name("quant_depthwise_conv2d")), input_quantizer(std::move(input_q)),
        depthwise_quantizer(std::move(depthwise_q)) {
    adopt_kernel_quantizer_metrics(depthwise_quantizer);
    this->set_path(this->path());
  }

  /// Filters per input channel (default 1); set before the first call.
  quant_depthwise_conv2d& depth_multiplier(std::size_t m) {
    if (m == this->layer_.depth_multiplier()) return *this;
    if (this->layer_.kernel())
      throw argument_error(this->path(), "depth_multiplier set before the layer is built", "a built layer");
    const depthwise_conv2d& old = this->layer_;
    depthwise_conv2d fresh(old.kernel_size(), m);  // throws for 0, naming depthwise_conv2d
    fresh.name(old.name());
    fresh.set_path(old.path());
    fresh.strides(old.strides()).padding(old.padding()).dilation(old.dilation()).use_bias(old.use_bias());
    this->layer_ = std::move(fresh);
    return *this;
  }
  /// Keras's `depthwise_constraint` (the same as `kernel_constraint`).
  quant_depthwise_conv2d& depthwise_constraint(parameter::constraint_function c) {
    return this->kernel_constraint(std::move(c));
  }

  var call(const var& x) {
    this->ensure_built(x);
    const var in = input_quantizer(x);
    const var kernel = depthwise_quantizer(var(this->layer_.kernel()));
    return this->window_call(in, kernel, [](auto&&... args) { return ops::depthwise_conv2d(args...); });
  }

  /// The input quantizer's precision in bits; nullopt without one (Larq's summary: "-").
  std::optional<int> input_precision() const { return declared_precision(input_quantizer); }
  /// The layer's own parameters with their bit widths: the depthwise kernel's
  /// quantizer's precision (32 without one), the bias 32 (empty until built).
  std::vector<std::pair<parameter_ptr, int>> weight_precisions() const {
    return this->weight_precisions_for(depthwise_quantizer);
  }

  /// The latent depthwise kernel (KH, KW, C, M), "depthwise_kernel" (also `kernel()`).
  const parameter_ptr& depthwise_kernel() const noexcept { return this->kernel(); }
  std::size_t depth_multiplier() const noexcept { return this->layer_.depth_multiplier(); }

};

}  // namespace xq
