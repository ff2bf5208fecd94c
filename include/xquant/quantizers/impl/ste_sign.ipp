#pragma once
/// \file ste_sign.ipp
/// ste_sign's code (quantizers/ste_sign.hpp).

#include <utility>

#include "../../core/fp_environment.hpp"
#include "../../numerics/larq_math.hpp"
#include "../ste_sign.hpp"

namespace xq {

XQ_DECL ste_sign::ste_sign(float clip_value) : quantizer_layer<ste_sign>("ste_sign"), clip_value_(clip_value) {
  larq::check_clip_value("xq::ste_sign", clip_value);
}

XQ_DECL std::optional<quantization_grid> ste_sign::grid_of(const tensor& x) const {
  (void)x;
  if (!enabled() || !fake_quant_enabled()) return std::nullopt;
  return sign_grid();
}

XQ_DECL var ste_sign::quantize(const var& x) {
  const flush_denormals_scope as_in_tensorflow;
  tensor y = larq::map(x.value(), [](float v) { return larq::sign(v); });
  return emit(x, std::move(y), [x, clip = clip_value_](const tensor& dy) {
    const flush_denormals_scope as_in_tensorflow;
    return larq::clipped_gradient(x.value(), dy, clip);
  });
}

}  // namespace xq
