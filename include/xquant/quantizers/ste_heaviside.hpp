#pragma once
/// \file ste_heaviside.hpp
/// `xq::ste_heaviside`: binarization to {0, 1} with a clipped straight-through
/// estimator (Larq's `SteHeaviside`).
///
///   forward:  q(x) = 1 if x > 0 else 0               (Larq: heaviside(0) = 0)
///   backward: dq/dx = 1 if |x| <= clip_value else 0   (inclusive)
///
/// Default clip_value = 1.0, as Larq; +infinity is Larq's `clip_value=None`. Runs with
/// denormals flushed, as TF does, so 1e-45 gives 0 (larq_math.hpp).

#include "../config.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `SteHeaviside` quantizer (precision 1).
class ste_heaviside : public quantizer_layer<ste_heaviside> {
 public:
  explicit ste_heaviside(float clip_value = 1.0f);

  /// 1: binary ({0, 1}).
  int precision() const noexcept override { return 1; }
  float clip_value() const noexcept { return clip_value_; }

  /// The integers {0, 1} with step 1, rounding_operator::heaviside.
  XQ_DECL std::optional<quantization_grid> grid_of(const tensor& x) const override;

  XQ_DECL var quantize(const var& x) override;

 private:
  float clip_value_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/ste_heaviside.ipp"
#endif
