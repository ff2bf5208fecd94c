#pragma once
/// \file tf_fake_quant.ipp
/// TF FakeQuant's grid, nudge and layout checks (numerics/tf_fake_quant.hpp); in separate
/// mode also the operators for the default policy and the scalar reference.

#include <cmath>

#include "../tf_fake_quant.hpp"

namespace xq::tf {

XQ_DECL quant_grid fake_quant_grid(int num_bits, bool narrow_range, const char* where) {
  if (num_bits < 2 || num_bits > 16)
    throw argument_error(where, "num_bits in [2, 16]", xq::detail::concat("num_bits = ", num_bits));
  return {narrow_range ? 1 : 0, (1 << num_bits) - 1};
}

XQ_DECL nudged_range nudge(float min, float max, quant_grid g) {
  const float quant_min = float(g.quant_min);
  const float quant_max = float(g.quant_max);
  nudged_range r{};
  r.scale = (max - min) / (quant_max - quant_min);
  r.inv_scale = (quant_max - quant_min) / (max - min);
  const float zero_point_from_min = quant_min - min / r.scale;
  float zero_point;  // TF holds it as uint16
  if (zero_point_from_min < quant_min) {
    zero_point = quant_min;
  } else if (zero_point_from_min > quant_max) {
    zero_point = quant_max;
  } else {
    zero_point = std::round(zero_point_from_min);  // half away from zero
  }
  r.min = (quant_min - zero_point) * r.scale;
  r.max = (quant_max - zero_point) * r.scale;
  return r;
}

namespace detail {

XQ_DECL kernels::channel_layout last_axis_layout(const tensor& x, const vector& min, const vector& max,
                                                 const char* where) {
  if (x.dimension() == 0)
    throw argument_error(where, "an input of rank >= 1", "a scalar");
  const std::size_t d = x.shape().back();
  if (min.size() != d || max.size() != d)
    throw argument_error(where,
                         xq::detail::concat("min and max of length ", d, " (the last dimension)"),
                         xq::detail::concat("lengths ", min.size(), " and ", max.size()));
  return kernels::channel_layout{x.size() / (d ? d : 1), d, 1};
}

}  // namespace detail

#if defined(XQ_SEPARATE_COMPILATION)
template tensor fake_quant_with_min_max_args<simd_policy<>>(const tensor&, float, float, int, bool, revision);
template tensor fake_quant_with_min_max_args_gradient<simd_policy<>>(const tensor&, const tensor&, float, float, int,
                                                                     bool);
template tensor fake_quant_with_min_max_vars<simd_policy<>>(const tensor&, float, float, int, bool, revision);
template fake_quant_result fake_quant_with_min_max_vars_and_mask<simd_policy<>>(const tensor&, float, float, int, bool);
template fake_quant_gradients fake_quant_with_min_max_vars_gradient<simd_policy<>>(const tensor&, const tensor&, float,
                                                                                   float, int, bool);
template tensor fake_quant_with_min_max_vars_per_channel<simd_policy<>>(const tensor&, const vector&, const vector&,
                                                                        int, bool, revision);
template fake_quant_result fake_quant_with_min_max_vars_per_channel_and_mask<simd_policy<>>(const tensor&,
                                                                                            const vector&,
                                                                                            const vector&, int, bool);
template fake_quant_channel_gradients fake_quant_with_min_max_vars_per_channel_gradient<simd_policy<>>(
    const tensor&, const tensor&, const vector&, const vector&, int, bool);

template tensor fake_quant_with_min_max_args<scalar_policy>(const tensor&, float, float, int, bool, revision);
template tensor fake_quant_with_min_max_args_gradient<scalar_policy>(const tensor&, const tensor&, float, float, int,
                                                                     bool);
template tensor fake_quant_with_min_max_vars<scalar_policy>(const tensor&, float, float, int, bool, revision);
template fake_quant_result fake_quant_with_min_max_vars_and_mask<scalar_policy>(const tensor&, float, float, int, bool);
template fake_quant_gradients fake_quant_with_min_max_vars_gradient<scalar_policy>(const tensor&, const tensor&, float,
                                                                                   float, int, bool);
template tensor fake_quant_with_min_max_vars_per_channel<scalar_policy>(const tensor&, const vector&, const vector&,
                                                                        int, bool, revision);
template fake_quant_result fake_quant_with_min_max_vars_per_channel_and_mask<scalar_policy>(const tensor&,
                                                                                            const vector&,
                                                                                            const vector&, int, bool);
template fake_quant_channel_gradients fake_quant_with_min_max_vars_per_channel_gradient<scalar_policy>(
    const tensor&, const tensor&, const vector&, const vector&, int, bool);
#endif

}  // namespace xq::tf
