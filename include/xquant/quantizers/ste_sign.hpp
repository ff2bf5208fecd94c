#pragma once
/// \file ste_sign.hpp
/// `xq::ste_sign`: binarization with a clipped straight-through estimator (Larq's
/// `SteSign`, the quantizer of BinaryNet and XNOR-Net style models).
///
///   forward:  q(x) = +1 if x >= 0 else -1      (Larq: sign(0) = +1)
///   backward: dq/dx = 1 if |x| <= clip_value else 0 (inclusive)
///
/// Default clip_value = 1.0, as Larq. `ste_sign(std::numeric_limits<float>::infinity())`
/// is Larq's `clip_value=None` (no clipping). Like every TF op, it runs with denormals
/// flushed (larq_math.hpp), so -1e-45 gives +1 as in Larq.

#include <limits>

#include "../config.hpp"
#include "quantizer_layer.hpp"

namespace xq {

class ste_sign : public quantizer_layer<ste_sign> {
 public:
  explicit ste_sign(float clip_value = 1.0f);

  /// 1: binary.
  int precision() const noexcept override { return 1; }
  float clip_value() const noexcept { return clip_value_; }

  /// ±1 (sign_grid()).
  XQ_DECL std::optional<quantization_grid> grid_of(const tensor& x) const override;

  XQ_DECL var quantize(const var& x) override;

 private:
  float clip_value_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/ste_sign.ipp"
#endif
