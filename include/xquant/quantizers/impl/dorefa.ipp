#pragma once
/// \file dorefa.ipp
/// dorefa's code (quantizers/dorefa.hpp).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "../../core/error.hpp"
#include "../../core/fp_environment.hpp"
#include "../../numerics/larq_math.hpp"
#include "../dorefa.hpp"

namespace xq {

XQ_DECL dorefa::dorefa(int k_bit, dorefa_mode mode)
    : quantizer_layer<dorefa>("dorefa"), k_bit_(k_bit), mode_(mode) {
  if (k_bit < 1 || k_bit > 24)
    throw argument_error("xq::dorefa", "k_bit in [1, 24]", detail::concat(k_bit));
  if (mode != dorefa_mode::activations && mode != dorefa_mode::weights)
    throw argument_error("xq::dorefa", "mode activations or weights",
                         detail::concat("dorefa_mode(", static_cast<int>(mode), ")"));
}

XQ_DECL var dorefa::quantize(const var& x) {
  const flush_denormals_scope as_in_tensorflow;
  return mode_ == dorefa_mode::activations ? quantize_activations(x) : quantize_weights(x);
}

XQ_DECL std::optional<quantization_grid> dorefa::grid_of(const tensor& x) const {
  if (!enabled() || !fake_quant_enabled()) return std::nullopt;
  const std::int32_t n = std::int32_t((1L << k_bit_) - 1);
  quantization_grid g;
  g.scale = {1.0f / levels()};
  g.zero_point = {0};
  if (mode_ == dorefa_mode::activations) {
    g.num_bits = k_bit_;
    g.qmin = 0;
    g.qmax = n;
    g.rounding.op = rounding_operator::dorefa_activations;
    return g;
  }
  const flush_denormals_scope as_in_tensorflow;
  const tensor t = larq::map(x, [](float v) { return larq::tanh(v); });
  const float two_max = 2.0f * max_abs_propagating_nan(t.data(), t.size());
  if (!std::isfinite(two_max)) throw argument_error(path(), "finite weights", "NaN or infinity");
  g.num_bits = k_bit_ + 1;
  g.qmin = -n;
  g.qmax = n;
  g.dynamic = true;
  g.rounding.op = rounding_operator::dorefa_weights;
  g.rounding.two_max = two_max;
  return g;
}

XQ_DECL dorefa_mode dorefa::parse_mode(std::string_view mode) {
  if (mode == "activations") return dorefa_mode::activations;
  if (mode == "weights") return dorefa_mode::weights;
  throw argument_error("xq::dorefa", "mode \"activations\" or \"weights\"",
                       detail::concat("\"", std::string(mode), "\""));
}

XQ_DECL var dorefa::quantize_activations(const var& x) {
  const float n = levels();
  // tf.clip_by_value(x, 0, 1): NaN stays NaN; -0.0 (and -1e-45, read as -0) give +0.0
  // as in TF's vector loop.
  tensor y = larq::map(x.value(), [n](float v) { return larq::dorefa_activation_level(v, n) / n; });
  return emit(x, std::move(y), [x](const tensor& dy) {
    const flush_denormals_scope as_in_tensorflow;
    const tensor& xv = x.value();
    tensor dx = tensor::from_shape(xv.shape());
    const float* xs = xv.data();
    const float* g = dy.data();
    float* out = dx.data();
    const std::size_t size = xv.size();
    XQ_OMP_SIMD
    for (std::size_t i = 0; i < size; ++i) out[i] = (xs[i] >= 0.0f && xs[i] <= 1.0f) ? g[i] : 0.0f;
    return dx;
  });
}

XQ_DECL var dorefa::quantize_weights(const var& x) {
  const float n = levels();
  const tensor& xv = x.value();
  const std::size_t size = xv.size();
  tensor t = larq::map(xv, [](float v) { return larq::tanh(v); });
  const float* ts = t.data();
  float max_abs = max_abs_propagating_nan(ts, size);  // reduce_max(|t|)
  const float two_max = 2.0f * max_abs;
  tensor y = larq::map(t, [n, two_max](float v) { return 2.0f * (larq::dorefa_weight_level(v, two_max, n) / n) - 1.0f; });
  return emit(x, std::move(y), [t = std::move(t), two_max](const tensor& dy) {
    const flush_denormals_scope as_in_tensorflow;
    tensor dx = tensor::from_shape(t.shape());
    const float* ts = t.data();
    const float* g = dy.data();
    float* out = dx.data();
    const std::size_t size = t.size();
    XQ_OMP_SIMD
    for (std::size_t i = 0; i < size; ++i) {
      const float du = 2.0f * g[i];                               // d(2q - 1)
      const float dt = two_max != 0.0f ? du / two_max : 0.0f;     // divide_no_nan's gradient
      out[i] = dt * (1.0f - ts[i] * ts[i]);                       // TanhGrad
    }
    return dx;
  });
}

XQ_DECL float dorefa::max_abs_propagating_nan(const float* ts, std::size_t size) {
  float lane[16] = {};
  std::int32_t unordered[16] = {};
  std::size_t i = 0;
  for (; i + 16 <= size; i += 16)
    for (std::size_t l = 0; l < 16; ++l) {
      const float a = std::fabs(ts[i + l]);
      lane[l] = a > lane[l] ? a : lane[l];
      unordered[l] |= a != a;
    }
  float m = 0.0f;
  bool nan = false;
  for (std::size_t l = 0; l < 16; ++l) {
    m = lane[l] > m ? lane[l] : m;
    nan |= unordered[l] != 0;
  }
  for (; i < size; ++i) {
    const float a = std::fabs(ts[i]);
    m = a > m ? a : m;
    nan |= a != a;
  }
  if (!nan) return m;
  float max_abs = 0.0f;
  for (std::size_t j = 0; j < size; ++j) {
    const float a = std::fabs(ts[j]);
    max_abs = (a > max_abs || a != a) && max_abs == max_abs ? a : max_abs;
  }
  return max_abs;
}

}  // namespace xq
