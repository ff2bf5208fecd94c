#pragma once
/// \file magnitude_aware_sign.hpp
/// `xq::magnitude_aware_sign`: the scaled sign of Bi-Real Net (Larq's
/// `MagnitudeAwareSign`), for kernels.
///
///   forward:  q(x) = a · sign(x), sign(0) = +1, with a = mean(|x|) over every axis
///             but the last (one scale per output channel), held constant
///             (stop-gradient);
///   backward: dq/dx = a if |x| <= clip_value else 0   (inclusive).
///
/// Default clip_value = 1.0, as Larq; +infinity is Larq's `clip_value=None`. A tensor
/// of rank 1 (or 0) has no axis to average over: as in Larq, each element's scale is
/// its own |x|, so q(x) = x, with 0 for ±0.
///
/// The mean is sum / count in float32, as TF's reduce_mean, the float32 sum added in TF's
/// CPU order (numerics/tf_cpu_reductions.hpp: each channel on one thread, so the scales
/// are Larq's bit for bit whatever TF's thread count). The scale multiplies dy before the
/// mask, as in Larq (a · dy, where |x| <= clip).

#include <vector>

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `MagnitudeAwareSign` quantizer (precision 1; outputs ±a per channel).
class magnitude_aware_sign : public quantizer_layer<magnitude_aware_sign> {
 public:
  explicit magnitude_aware_sign(float clip_value = 1.0f);

  /// 1: binary (one sign bit per weight; the scales are per channel).
  int precision() const noexcept override { return 1; }
  float clip_value() const noexcept { return clip_value_; }

  /// The per-channel scales a of `x`: mean |x| over every axis but the last (length
  /// shape.back()); for rank <= 1, |x| itself.
  static std::vector<float> scales(const tensor& x);

  /// ±1 with a scale per channel on the last axis, scales(x) (a dynamic grid: x's own;
  /// per tensor for a scalar), rounding_operator::sign.
  XQ_DECL std::optional<quantization_grid> grid_of(const tensor& x) const override;

  XQ_DECL var quantize(const var& x) override;

 private:
  float clip_value_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/magnitude_aware_sign.ipp"
#endif
