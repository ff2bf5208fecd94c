#pragma once
/// \file quant_dense.hpp
/// `xq::quant_dense<InputQ, KernelQ>`: Larq's `QuantDense`,
///
///     y = input_quantizer(x) · kernel_quantizer(kernel) + bias
///
/// with a latent float kernel (in, out), which the optimizer updates: the kernel
/// quantizer runs on every call, on the tape, so the gradient reaches the latent
/// kernel through the quantizer's surrogate (Larq's `QuantizedVariable` in
/// `quantized_scope(True)`). The bias is never quantized. No fused activation: add an
/// activation layer (Larq's `activation=` argument applies after the bias).
///
/// \code
///   auto fc = xq::quant_dense(10, xq::ste_sign(), xq::ste_sign())
///                 .kernel_constraint(xq::weight_clip(1.0f));
/// \endcode
///
/// A slot left as `xq::no_quantizer` (the default) passes its value through. The
/// kernel quantizer takes the metrics of an enclosing `metrics_scope` unless it chose
/// its own. Larq logs a warning for a binary kernel quantizer without a
/// `kernel_constraint`; xquant has no logging and does not.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../fwd.hpp"
#include "../core/children.hpp"
#include "../layers/dense.hpp"
#include "../quantizers/no_quantizer.hpp"
#include "wrapped_layer.hpp"
#include "xnor_forward.hpp"

namespace xq {

/// (Default template arguments: xquant/fwd.hpp.)
template <class InputQ, class KernelQ>
class quant_dense : public wrapped_layer<quant_dense<InputQ, KernelQ>, dense> {
  using base = wrapped_layer<quant_dense<InputQ, KernelQ>, dense>;

 public:
  InputQ input_quantizer;
  KernelQ kernel_quantizer;
  XQ_CHILDREN(input_quantizer, kernel_quantizer)

  /// `units` outputs; the input and kernel quantizers (default: none).
  explicit quant_dense(std::size_t units = 1, InputQ input_q = InputQ{}, KernelQ kernel_q = KernelQ{})
      : base(dense(units).name("quant_dense")), input_quantizer(std::move(input_q)),
        kernel_quantizer(std::move(kernel_q)) {
    adopt_kernel_quantizer_metrics(kernel_quantizer);
    this->set_path(this->path());
  }

  /// Whether the layer adds a bias (default true); set before the first call.
  quant_dense& use_bias(bool on) {
    if (on == this->layer_.use_bias()) return *this;
    if (this->layer_.kernel())
      throw argument_error(this->path(), "use_bias set before the layer is built", "a built layer");
    const std::string n = this->layer_.name(), p = this->layer_.path();
    this->layer_ = dense(this->layer_.units(), on).name(n);
    this->layer_.set_path(p);
    return *this;
  }

  var call(const var& x) {
    this->ensure_built(x);
    const var in = input_quantizer(x);
    const var kernel = kernel_quantizer(var(this->layer_.kernel()));
    const var bias = this->layer_.bias() ? var(this->layer_.bias()) : var();
    // ±1 inputs and kernel (both quantizers 1-bit, and the values say so): XNOR-popcount sums.
    if (declared_precision(input_quantizer) == 1 && declared_precision(kernel_quantizer) == 1 &&
        kernel.dimension() == 2 && in.dimension() >= 2 && in.shape().back() == kernel.shape()[0])
      if (auto sums = detail::xnor_dense_sums(in.value(), kernel.value()))
        return ops::matmul_bias_with_sums(in, kernel, bias.defined() ? &bias : nullptr, std::move(*sums),
                                          this->layer_.path());
    return this->layer_.call_with(in, kernel, bias);
  }

  /// The input quantizer's precision in bits; nullopt without one (Larq's summary: "-").
  std::optional<int> input_precision() const { return declared_precision(input_quantizer); }
  /// The layer's own parameters with their bit widths: the kernel's quantizer's
  /// precision (32 without one), the bias 32 (empty until built).
  std::vector<std::pair<parameter_ptr, int>> weight_precisions() const {
    return this->weight_precisions_for(kernel_quantizer);
  }

  std::size_t units() const noexcept { return this->layer_.units(); }
  bool use_bias() const noexcept { return this->layer_.use_bias(); }

};

}  // namespace xq
