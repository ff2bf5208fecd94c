#pragma once
/// \file ste_heaviside.ipp
/// ste_heaviside's code (quantizers/ste_heaviside.hpp).

#include <utility>

#include "../../core/fp_environment.hpp"
#include "../../numerics/larq_math.hpp"
#include "../ste_heaviside.hpp"

namespace xq {

XQ_DECL ste_heaviside::ste_heaviside(float clip_value)
    : quantizer_layer<ste_heaviside>("ste_heaviside"), clip_value_(clip_value) {
  larq::check_clip_value("xq::ste_heaviside", clip_value);
}

XQ_DECL std::optional<quantization_grid> ste_heaviside::grid_of(const tensor& x) const {
  (void)x;
  if (!enabled() || !fake_quant_enabled()) return std::nullopt;
  quantization_grid g;
  g.num_bits = 1;
  g.qmin = 0;
  g.qmax = 1;
  g.scale = {1.0f};
  g.zero_point = {0};
  g.rounding.op = rounding_operator::heaviside;
  return g;
}

XQ_DECL var ste_heaviside::quantize(const var& x) {
  const flush_denormals_scope as_in_tensorflow;
  tensor y = larq::map(x.value(), [](float v) { return larq::heaviside(v); });
  return emit(x, std::move(y), [x, clip = clip_value_](const tensor& dy) {
    const flush_denormals_scope as_in_tensorflow;
    return larq::clipped_gradient(x.value(), dy, clip);
  });
}

}  // namespace xq
