#pragma once
/// \file ste_tern.hpp
/// `xq::ste_tern`: ternarization to {-1, 0, 1} with a clipped straight-through
/// estimator (Larq's `SteTern`).
///
///   forward:  q(x) = sign(sign(x + Δ) + sign(x - Δ)): +1 for x >= Δ, -1 for x <= -Δ,
///             0 in between (exactly at ±Δ: ±1, as Larq computes it);
///   backward: dq/dx = 1 if |x| <= clip_value else 0   (inclusive).
///
/// Δ = threshold_value (default 0.05), or, with `ternary_weight_networks`, Δ =
/// 0.7 · mean(|x|) over the whole tensor, as Ternary Weight Networks and Larq compute
/// it: (0.7f · sum) / size in float32, the float32 sum added in TF's CPU order
/// (numerics/tf_cpu_reductions.hpp), so the threshold and the outputs are Larq's bit for
/// bit (below the size at which TF shards the sum over a large thread pool; there, the
/// bound that header states). clip_value default 1.0; +infinity is
/// Larq's `clip_value=None`. Runs with denormals flushed, as TF does.
///
/// \code
///   xq::ste_tern tern;                  // Δ = 0.05
///   xq::ste_tern twn(0.05f, true);      // Δ = 0.7 · mean|x| (the threshold is then unused)
/// \endcode

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `SteTern` quantizer (precision 2).
class ste_tern : public quantizer_layer<ste_tern> {
 public:
  /// Larq's arguments in Larq's order: threshold_value (finite, >= 0),
  /// ternary_weight_networks, clip_value (> 0; infinity: no clipping).
  explicit ste_tern(float threshold_value = 0.05f, bool ternary_weight_networks = false, float clip_value = 1.0f);

  /// 2: ternary.
  int precision() const noexcept override { return 2; }
  float threshold_value() const noexcept { return threshold_value_; }
  bool ternary_weight_networks() const noexcept { return ternary_weight_networks_; }
  float clip_value() const noexcept { return clip_value_; }

  /// The threshold Δ used for `x`: threshold_value, or TWN's 0.7 · mean(|x|).
  float threshold(const tensor& x) const;

  /// The integers {-1, 0, 1} with step 1, rounding_operator::ternary with threshold(x)
  /// (dynamic with ternary_weight_networks: the threshold is x's own).
  XQ_DECL std::optional<quantization_grid> grid_of(const tensor& x) const override;

  XQ_DECL var quantize(const var& x) override;

 private:
  float threshold_value_, clip_value_;
  bool ternary_weight_networks_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/ste_tern.ipp"
#endif
