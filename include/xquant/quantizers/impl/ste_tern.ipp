#pragma once
/// \file ste_tern.ipp
/// ste_tern's code (quantizers/ste_tern.hpp).

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/fp_environment.hpp"
#include "../../numerics/larq_math.hpp"
#include "../../numerics/tf_cpu_reductions.hpp"
#include "../ste_tern.hpp"

namespace xq {

XQ_DECL ste_tern::ste_tern(float threshold_value, bool ternary_weight_networks, float clip_value)
    : quantizer_layer<ste_tern>("ste_tern"),
      threshold_value_(threshold_value),
      clip_value_(clip_value),
      ternary_weight_networks_(ternary_weight_networks) {
  if (!(threshold_value >= 0.0f) || !std::isfinite(threshold_value))
    throw argument_error("xq::ste_tern", "a finite threshold_value >= 0", detail::concat(threshold_value));
  larq::check_clip_value("xq::ste_tern", clip_value);
}

XQ_DECL float ste_tern::threshold(const tensor& x) const {
  if (!ternary_weight_networks_) return threshold_value_;
  const float* xs = x.data();
  const std::size_t n = x.size();
  std::vector<float> magnitude(n);
  XQ_OMP_SIMD
  for (std::size_t i = 0; i < n; ++i) magnitude[i] = std::fabs(xs[i]);
  const float sum = tf::cpu::sum(magnitude.data(), n);  // in TF's order
  // Larq: 0.7 * reduce_sum(|x|) / size, each step rounded to float32.
  return (0.7f * sum) / static_cast<float>(n);
}

XQ_DECL std::optional<quantization_grid> ste_tern::grid_of(const tensor& x) const {
  if (!enabled() || !fake_quant_enabled()) return std::nullopt;
  quantization_grid g;
  g.num_bits = 2;
  g.qmin = -1;
  g.qmax = 1;
  g.scale = {1.0f};
  g.zero_point = {0};
  g.dynamic = ternary_weight_networks_;
  g.rounding.op = rounding_operator::ternary;
  const flush_denormals_scope as_in_tensorflow;  // as the call computes it
  g.rounding.threshold = threshold(x);
  return g;
}

XQ_DECL var ste_tern::quantize(const var& x) {
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

}  // namespace xq
