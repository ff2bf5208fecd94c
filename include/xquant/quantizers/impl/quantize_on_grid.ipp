#pragma once
/// \file quantize_on_grid.ipp
/// quantize_on_grid's code (quantizers/quantize_on_grid.hpp): each rounding rule runs its
/// peer's operator from numerics/ (or, for the functions with no operator of their own,
/// the elementwise function the quantizer itself calls), then reads the integers.

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/fp_environment.hpp"
#include "../../kernels/channel_layout.hpp"
#include "../../numerics/larq_math.hpp"
#include "../../numerics/tf_fake_quant.hpp"
#include "../../numerics/tf_quantize_and_dequantize.hpp"
#include "../../numerics/torch_fake_quant.hpp"
#include "../../numerics/torch_learnable_fake_quant.hpp"
#include "../quantize_on_grid.hpp"

namespace xq {

namespace detail::grid {

inline tensor as_tensor(const std::vector<float>& v) {
  tensor t = tensor::from_shape({v.size()});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

inline vector as_vector(const std::vector<float>& v) {
  vector t = vector::from_shape({v.size()});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

/// f(element, scale index) -> integer, over x laid out on the grid.
template <class F>
std::vector<std::int32_t> elementwise(const quantization_grid& g, const tensor& x, const std::string& where, F&& f) {
  const std::vector<std::size_t> shape(x.shape().begin(), x.shape().end());
  const kernels::channel_layout l = g.granularity() == grid_granularity::per_tensor
                                        ? kernels::channel_layout{1, x.size(), 1}
                                        : kernels::channel_layout::of(shape, g.channel_axis, where.c_str());
  std::vector<std::int32_t> q(x.size());
  const float* v = x.data();
  for_each_scale_run(g, l.outer, l.channels, l.inner, [&](std::size_t first, std::size_t count, std::size_t si, std::size_t step) {
    for (std::size_t k = 0; k < count; ++k) q[first + k] = f(v[first + k], si + k * step);
  });
  return q;
}

}  // namespace detail::grid

XQ_DECL std::vector<std::int32_t> quantize_on_grid(const quantization_grid& g, const tensor& x, const std::string& where) {
  using detail::grid::elementwise;
  check_grid_for(g, std::vector<std::size_t>(x.shape().begin(), x.shape().end()), where);
  if (is_float_element(g.element))
    throw argument_error(where, "an integer or binary grid (a float element's rounding is its low-bit numerics')",
                         describe(g));
  const rounding_rule& r = g.rounding;
  try {
    switch (r.op) {
      case rounding_operator::quantize_linear: {
        // ONNX QuantizeLinear: x / y_scale in float32, rounded half to even, plus the zero
        // point, saturated (NaN, which no integer is: qmin, as a saturating cast of it).
        const float ts = g.tensor_scale ? *g.tensor_scale : 1.0f;
        return elementwise(g, x, where, [&](float v, std::size_t c) {
          const float t = std::nearbyint(v / (g.scale[c] * ts));
          if (t != t) return g.qmin;
          const double q = double(t) + double(g.zero_point[c]);
          return q < g.qmin ? g.qmin : q > g.qmax ? g.qmax : std::int32_t(q);
        });
      }
      case rounding_operator::tf_qdq: {
        tf::qdq_options o;
        o.signed_input = g.qmin < 0;
        o.num_bits = g.num_bits;
        o.range_given = true;
        o.round = r.half_to_even ? tf::round_mode::half_to_even : tf::round_mode::half_up;
        o.narrow_range = o.signed_input && g.qmin == -g.qmax;
        o.axis = g.channel_axis;
        o.per_axis = g.per_channel;
        const tensor lo = g.per_channel ? detail::grid::as_tensor(r.range_min) : tensor(r.range_min[0]);
        const tensor hi = g.per_channel ? detail::grid::as_tensor(r.range_max) : tensor(r.range_max[0]);
        return grid_integers(g, tf::quantize_and_dequantize_v4(x, lo, hi, o), where);
      }
      case rounding_operator::tf_fake_quant: {
        const bool narrow = g.qmin == 1;
        const tf::revision rev = r.legacy ? tf::revision::legacy : tf::revision::current;
        if (g.per_channel)
          return grid_integers(g,
                               tf::fake_quant_with_min_max_vars_per_channel(x, detail::grid::as_vector(r.range_min),
                                                                            detail::grid::as_vector(r.range_max),
                                                                            g.num_bits, narrow, rev),
                               where);
        const tensor y = r.product ? tf::fake_quant_with_min_max_args(x, r.range_min[0], r.range_max[0], g.num_bits, narrow, rev)
                                   : tf::fake_quant_with_min_max_vars(x, r.range_min[0], r.range_max[0], g.num_bits, narrow, rev);
        return grid_integers(g, y, where);
      }
      case rounding_operator::torch_affine: {
        if (g.block_size)  // torchao's groups and tokens: zp + rint(x · (1 / scale)), clamped
          return elementwise(g, x, where, [&](float v, std::size_t c) {
            const float r = std::nearbyint(v * (1.0f / g.scale[c])) + float(g.zero_point[c]);
            return std::int32_t(std::fmin(std::fmax(r, float(g.qmin)), float(g.qmax)));
          });
        if (!g.per_channel)
          return grid_integers(
              g, torch::fake_quantize_per_tensor_affine(x, g.scale[0], g.zero_point[0], g.qmin, g.qmax), where);
        torch::index_vector zp = torch::index_vector::from_shape({g.zero_point.size()});
        for (std::size_t c = 0; c < g.zero_point.size(); ++c) zp(c) = g.zero_point[c];
        return grid_integers(g,
                             torch::fake_quantize_per_channel_affine(x, detail::grid::as_vector(g.scale), zp,
                                                                     g.channel_axis, g.qmin, g.qmax),
                             where);
      }
      case rounding_operator::torch_affine_float_zero_point:
        // The kernel's own rounding (lrintf of zp + x * inv, fused as the rule's CPU build
        // fuses it), clamped in double as its forward clamps.
        return elementwise(g, x, where, [&](float v, std::size_t c) {
          torch::detail::check_scale(g.scale[c], where.c_str());
          const torch::fake_quantize_float_zero_point_kernel k{g.scale[c], 1.0f / g.scale[c], r.float_zero_point[c],
                                                               float(g.qmin), float(g.qmax), r.fused_multiply_add};
          return std::int32_t(std::fmin(std::fmax(double(k.quantized(v)), double(g.qmin)), double(g.qmax)));
        });
      case rounding_operator::lsq:
        return grid_integers(g,
                             torch::fake_quantize_learnable_per_tensor_affine(x, g.scale[0], r.float_zero_point[0],
                                                                              g.qmin, g.qmax),
                             where);
      case rounding_operator::dorefa_activations: {
        const flush_denormals_scope as_in_tensorflow;
        const float n = float(g.qmax);
        return elementwise(g, x, where, [&](float v, std::size_t) {
          const float level = larq::dorefa_activation_level(v, n);
          if (level != level) throw argument_error(where, "a number", "NaN");
          return std::int32_t(level);
        });
      }
      case rounding_operator::dorefa_weights: {
        const flush_denormals_scope as_in_tensorflow;
        const float n = float(g.qmax);
        return elementwise(g, x, where, [&](float v, std::size_t) {
          const float level = larq::dorefa_weight_level(larq::tanh(v), r.two_max, n);
          if (level != level) throw argument_error(where, "a number", "NaN");
          return 2 * std::int32_t(level) - g.qmax;  // 2 * level - n: the odd integers of [-n, n]
        });
      }
      case rounding_operator::sign: {
        const flush_denormals_scope as_in_tensorflow;
        return elementwise(g, x, where, [](float v, std::size_t) { return larq::sign(v) < 0.0f ? -1 : 1; });
      }
      case rounding_operator::heaviside: {
        const flush_denormals_scope as_in_tensorflow;
        return elementwise(g, x, where, [](float v, std::size_t) { return larq::heaviside(v) > 0.0f ? 1 : 0; });
      }
      case rounding_operator::ternary: {
        const flush_denormals_scope as_in_tensorflow;
        const float delta = r.threshold;
        return elementwise(g, x, where, [delta](float v, std::size_t) {
          const float t = larq::tf_sign(larq::tf_sign(v + delta) + larq::tf_sign(v - delta));
          return t > 0.0f ? 1 : t < 0.0f ? -1 : 0;
        });
      }
      case rounding_operator::torchao_int4_weight_only:
        // Int4WeightFakeQuantizer's integers: (x - min) / scale in float32, half to even, clamped.
        if (r.range_min.empty())
          throw argument_error(where, "each group's min (a quantizer's grid)", "a stored kernel's grid, without them");
        return elementwise(g, x, where, [&](float v, std::size_t c) {
          const float t = std::nearbyint((v - r.range_min[c]) / g.scale[c]);
          if (t != t) throw argument_error(where, "a number", "NaN");
          return std::int32_t(std::fmin(std::fmax(t, float(g.qmin)), float(g.qmax)));
        });
    }
  } catch (const argument_error& e) {
    if (e.where() == where) throw;
    throw argument_error(where, e.expected(), xq::detail::concat(e.given(), " (in ", e.where(), ")"));
  }
  throw argument_error(where, "a known rounding operator", to_string(r.op));
}

}  // namespace xq
