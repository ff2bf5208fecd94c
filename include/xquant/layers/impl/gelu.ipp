#pragma once
/// \file gelu.ipp
/// gelu's code (layers/gelu.hpp).

#include <cmath>

#include "../../core/layer_call.hpp"
#include "../activation.hpp"
#include "../gelu.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(gelu)

namespace ops {

XQ_DECL var gelu(const var& x, bool approximate) {
  // TF's constants and order of operations: 0.5 * x * (1 + ...).
  constexpr float inv_sqrt2 = 0.7071067811865476f, sqrt_2_over_pi = 0.7978845608028654f, cubic = 0.044715f;
  constexpr float inv_sqrt_pi = 0.5641895835477563f;  // 1 / sqrt(pi): d erf(u) / du = 2 / sqrt(pi) exp(-u^2)
  if (!approximate)
    return detail::traced_function("gelu", layer_role::activation, {x}, detail::elementwise_from_input(
        x, [=](float v) { return 0.5f * v * (1.0f + std::erf(v * inv_sqrt2)); },
        [=](float v, float d) {
          const float u = v * inv_sqrt2;
          const float cdf = 0.5f * (1.0f + std::erf(u));
          const float pdf_term = v * inv_sqrt_pi * inv_sqrt2 * std::exp(-u * u);  // x * phi(x)
          return d * (cdf + pdf_term);
        }), {0});
  return detail::traced_function("gelu", layer_role::activation, {x}, detail::elementwise_from_input(
      x, [=](float v) { return 0.5f * v * (1.0f + std::tanh(sqrt_2_over_pi * (v + cubic * (v * v * v)))); },
      [=](float v, float d) {
        const float t = std::tanh(sqrt_2_over_pi * (v + cubic * (v * v * v)));
        const float du = sqrt_2_over_pi * (1.0f + 3.0f * cubic * v * v);
        return d * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
      }), {1});
}

}  // namespace ops
}  // namespace xq
