#pragma once
/// \file approx_sign.hpp
/// `xq::approx_sign`: binarization with the ApproxSign gradient of Bi-Real Net
/// (Larq's `ApproxSign`).
///
///   forward:  q(x) = +1 if x >= 0 else -1           (Larq: sign(0) = +1)
///   backward: dq/dx = 2 - 2|x| if |x| <= 1 else 0    (inclusive; 0 at |x| = 1)
///
/// The gradient is computed as Larq writes it, ((1 - |x|) * 2) * dy, so it matches
/// Larq bit for bit. Runs with denormals flushed, as TF does (larq_math.hpp).

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `ApproxSign` quantizer (precision 1). No options.
class approx_sign : public quantizer_layer<approx_sign> {
 public:
  approx_sign() : quantizer_layer<approx_sign>("approx_sign") {}

  /// 1: binary.
  int precision() const noexcept override { return 1; }

  /// ±1 (sign_grid()).
  XQ_DECL std::optional<quantization_grid> grid_of(const tensor& x) const override;

  XQ_DECL var quantize(const var& x) override;

  /// The input gradient for upstream gradient `dy` at `x` (Larq's `approx_sign` grad).
  static tensor gradient(const tensor& x, const tensor& dy);
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/approx_sign.ipp"
#endif
