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

#include "../config.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `NoOp` quantizer: q(x) = x, with a declared precision.
class noop_quantizer : public quantizer_layer<noop_quantizer> {
 public:
  /// `precision`: the bit width the values are declared to have, in [1, 32].
  explicit noop_quantizer(int precision);

  /// What the constructor was given.
  int precision() const noexcept override { return precision_; }

  XQ_DECL var quantize(const var& x) override;

 private:
  int precision_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/noop_quantizer.ipp"
#endif
