#pragma once
/// \file tf_fake_quant_numerics.ipp
/// tf_fake_quant_numerics' code (quantizers/tf_fake_quant_numerics.hpp).

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "../../numerics/tf_fake_quant.hpp"
#include "../tf_fake_quant_numerics.hpp"

namespace xq {

XQ_DECL const tf_fake_quant_numerics& tf_fake_quant_numerics::instance() {
  static const tf_fake_quant_numerics n;
  return n;
}

XQ_DECL quantized_output tf_fake_quant_numerics::apply(const quantizer_config& c, const tensor& x,
                                                       const kernels::channel_layout&, const vector& min,
                                                       const vector& max, bool with_gradient,
                                                       const std::string& where) const {
  const int bits = c.num_bits;
  const bool narrow = c.narrow_range;
  if (c.per_channel) {  // the last axis (validated by quantizer_config)
    if (!with_gradient)
      return {at(where, [&] { return tf::fake_quant_with_min_max_vars_per_channel(x, min, max, bits, narrow); }), {}};
    auto r = at(where, [&] { return tf::fake_quant_with_min_max_vars_per_channel_and_mask(x, min, max, bits, narrow); });
    return {std::move(r.y), masked_gradient(std::move(r.mask), true)};
  }
  const float lo = min(0), hi = max(0);
  if (!with_gradient) return {at(where, [&] { return tf::fake_quant_with_min_max_vars(x, lo, hi, bits, narrow); }), {}};
  auto r = at(where, [&] { return tf::fake_quant_with_min_max_vars_and_mask(x, lo, hi, bits, narrow); });
  return {std::move(r.y), masked_gradient(std::move(r.mask), true)};
}

XQ_DECL quantization_grid tf_fake_quant_numerics::grid(const quantizer_config& c, std::size_t channels,
                                                       const vector& min, const vector& max,
                                                       const std::string& where) const {
  const tf::quant_grid q = tf::fake_quant_grid(c.num_bits, c.narrow_range, where.c_str());
  quantization_grid g;
  g.num_bits = c.num_bits;
  g.per_channel = c.per_channel;
  g.channel_axis = -1;  // FakeQuantWithMinMaxVarsPerChannel: the last axis
  g.qmin = q.quant_min;
  g.qmax = q.quant_max;
  const std::size_t n = c.per_channel ? channels : 1;
  if (min.size() != n || max.size() != n)
    throw argument_error(where, detail::concat(n, " range values"), detail::concat(min.size(), " and ", max.size()));
  // apply's operators: FakeQuantWithMinMaxVars (divides) per tensor, PerChannel (multiplies), TF >= 2.6.
  g.rounding.op = rounding_operator::tf_fake_quant;
  g.rounding.range_min.assign(min.begin(), min.end());
  g.rounding.range_max.assign(max.begin(), max.end());
  for (std::size_t i = 0; i < n; ++i) {
    // The nudged range: its minimum is (quant_min - nudged zero point) * scale (TF's Nudge).
    const tf::nudged_range r = tf::nudge(min(i), max(i), q);
    if (!(r.scale > 0)) {  // TF's [0, 0] range: every output is 0
      g.scale.push_back(1.0f);
      g.zero_point.push_back(q.quant_min);
      continue;
    }
    g.scale.push_back(r.scale);
    g.zero_point.push_back(q.quant_min - std::int32_t(std::nearbyint(double(r.min) / double(r.scale))));
  }
  return g;
}

}  // namespace xq
