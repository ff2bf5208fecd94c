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
/// it: (0.7f · sum) / size in float32. The sum is taken in double and rounded once
/// (TF adds float32 in an order of its own), so the TWN threshold matches Larq's
/// exactly whenever the float sum is exact. clip_value default 1.0; +infinity is
/// Larq's `clip_value=None`. Runs with denormals flushed, as TF does.
///
/// \code
///   xq::ste_tern tern;                  // Δ = 0.05
///   xq::ste_tern twn(0.05f, true);      // Δ = 0.7 · mean|x| (the threshold is then unused)
/// \endcode

#include <cmath>
#include <cstddef>

#include "../core/error.hpp"
#include "../core/fp_environment.hpp"
#include "../numerics/larq_math.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// Larq's `SteTern` quantizer (precision 2).
class ste_tern : public quantizer_layer<ste_tern> {
 public:
  /// Larq's arguments in Larq's order: threshold_value (finite, >= 0),
  /// ternary_weight_networks, clip_value (> 0; infinity: no clipping).
  explicit ste_tern(float threshold_value = 0.05f, bool ternary_weight_networks = false, float clip_value = 1.0f)
      : quantizer_layer<ste_tern>("ste_tern"),
        threshold_value_(threshold_value),
        clip_value_(clip_value),
        ternary_weight_networks_(ternary_weight_networks) {
    if (!(threshold_value >= 0.0f) || !std::isfinite(threshold_value))
      throw argument_error("xq::ste_tern", "a finite threshold_value >= 0", detail::concat(threshold_value));
    larq::check_clip_value("xq::ste_tern", clip_value);
  }

  /// 2: ternary.
  int precision() const noexcept override { return 2; }
  float threshold_value() const noexcept { return threshold_value_; }
  bool ternary_weight_networks() const noexcept { return ternary_weight_networks_; }
  float clip_value() const noexcept { return clip_value_; }

  /// The threshold Δ used for `x`: threshold_value, or TWN's 0.7 · mean(|x|).
  float threshold(const tensor& x) const {
    if (!ternary_weight_networks_) return threshold_value_;
    const float* xs = x.data();
    const std::size_t n = x.size();
    // 16 double lanes (element i into lane i % 16), combined in lane order: a fixed
    // order (the same bits on every build), and independent chains that vectorize.
    double lane[16] = {};
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
      for (std::size_t l = 0; l < 16; ++l) lane[l] += std::fabs(xs[i + l]);
    for (; i < n; ++i) lane[i % 16] += std::fabs(xs[i]);
    double sum = 0.0;
    for (double v : lane) sum += v;
    // Larq: 0.7 * reduce_sum(|x|) / size, each step rounded to float32.
    return (0.7f * static_cast<float>(sum)) / static_cast<float>(n);
  }

  var quantize(const var& x) override {
    const flush_denormals_scope as_in_tensorflow;
    const float delta = threshold(x.value());
    tensor y = larq::map(x.value(), [delta](float v) {
      return larq::tf_sign(larq::tf_sign(v + delta) + larq::tf_sign(v - delta));
    });
    return emit(x, std::move(y), [x, clip = clip_value_](const tensor& dy) {
      const flush_denormals_scope as_in_tensorflow;
      return larq::clipped_gradient(x.value(), dy, clip);
    });
  }

 private:
  float threshold_value_, clip_value_;
  bool ternary_weight_networks_;
};

}  // namespace xq
