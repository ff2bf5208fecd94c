#pragma once
/// \file noop_quantizer.hpp
/// `xq::noop_quantizer`: the identity, tagged with a precision (Larq's `NoOp`).
///
/// It changes nothing; it marks a kernel (or an activation) with the precision its
/// user declares, which the model summary and `bop` read, and it can keep the
/// quantizer metrics (flip ratio of the values it passes). Larq's use: a Bop-trained
/// binary kernel kept as ±1 by its optimizer, `kernel_quantizer=NoOp(precision=1)`.
///
/// Unlike `xq::no_quantizer` (the absent quantizer), it is a quantizer layer with a
/// name, a path and metrics. With no gradient-flow metric it returns its input var
/// itself (no copy, nothing on the tape), as Larq returns its input.

#include "../core/error.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `NoOp` quantizer: q(x) = x, with a declared precision.
class noop_quantizer : public quantizer_layer<noop_quantizer> {
 public:
  /// `precision`: the bit width the values are declared to have, in [1, 32].
  explicit noop_quantizer(int precision) : quantizer_layer<noop_quantizer>("no_op"), precision_(precision) {
    if (precision < 1 || precision > 32)
      throw argument_error("xq::noop_quantizer", "precision in [1, 32]", detail::concat(precision));
  }

  /// What the constructor was given.
  int precision() const noexcept override { return precision_; }

  var quantize(const var& x) override {
    if (!gradient_flow_metric()) return x;
    return emit(x, x.value(), [](const tensor& dy) { return dy; });
  }

 private:
  int precision_;
};

}  // namespace xq
