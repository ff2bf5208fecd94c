#pragma once
/// \file quant_conv2d.hpp
/// `xq::quant_conv2d<InputQ, KernelQ>`: Larq's `QuantConv2D`,
///
///     y = conv2d(input_quantizer(x), kernel_quantizer(kernel)) + bias
///
/// over NHWC inputs with a latent float kernel (KH, KW, C, F) that the optimizer
/// updates (the quantizer runs on the tape on every call; see quant_dense.hpp). The
/// bias is never quantized; no fused activation. Strides, padding and dilation as
/// `xq::conv2d` (which it runs).
///
/// `pad_values(v)`: the constant of "same" padding. Larq pads the *quantized* input
/// with `v` (`tf.pad(..., constant_values=v)`, TF's split: the odd row/column after)
/// and runs a valid convolution; with v = 0 (the default) it is the ordinary same
/// convolution. Binary networks use v = 1 so the border is a valid ±1 value.
///
/// \code
///   auto conv = xq::quant_conv2d(64, 3, xq::ste_sign(), xq::ste_sign())
///                   .padding(xq::padding::same).pad_values(1.0f)
///                   .use_bias(false).kernel_constraint(xq::weight_clip(1.0f));
/// \endcode
///
/// Larq logs a warning for a binary kernel quantizer without a `kernel_constraint`;
/// xquant does not.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../fwd.hpp"
#include "../core/children.hpp"
#include "../layers/conv2d.hpp"
#include "../quantizers/no_quantizer.hpp"
#include "quant_window_layer.hpp"

namespace xq {

/// (Default template arguments: xquant/fwd.hpp.)
template <class InputQ, class KernelQ>
class quant_conv2d : public detail::quant_window_layer<quant_conv2d<InputQ, KernelQ>, conv2d> {
  using base = detail::quant_window_layer<quant_conv2d<InputQ, KernelQ>, conv2d>;

 public:
  InputQ input_quantizer;
  KernelQ kernel_quantizer;
  XQ_CHILDREN(input_quantizer, kernel_quantizer)

  /// `filters` output channels, a `kernel_size` window (`3` or `{3, 5}`), the input and
  /// kernel quantizers (default: none).
  explicit quant_conv2d(std::size_t filters = 1, size2 kernel_size = 1, InputQ input_q = InputQ{},
                        KernelQ kernel_q = KernelQ{})
      : base(conv2d(filters, kernel_size).name("quant_conv2d")), input_quantizer(std::move(input_q)),
        kernel_quantizer(std::move(kernel_q)) {
    adopt_kernel_quantizer_metrics(kernel_quantizer);
    this->set_path(this->path());
  }


  var call(const var& x) {
    this->ensure_built(x);
    const var in = input_quantizer(x);
    const var kernel = kernel_quantizer(var(this->layer_.kernel()));
    const bool binary = declared_precision(input_quantizer) == 1 && declared_precision(kernel_quantizer) == 1;
    return this->conv_window_call(in, kernel, binary);
  }

  /// The input quantizer's precision in bits; nullopt without one (Larq's summary: "-").
  std::optional<int> input_precision() const { return declared_precision(input_quantizer); }
  /// The layer's own parameters with their bit widths: the kernel's quantizer's
  /// precision (32 without one), the bias 32 (empty until built).
  std::vector<std::pair<parameter_ptr, int>> weight_precisions() const {
    return this->weight_precisions_for(kernel_quantizer);
  }

  std::size_t filters() const noexcept { return this->layer_.filters(); }

};

}  // namespace xq
