#pragma once
/// \file tf_qdq_numerics.ipp
/// tf_qdq_numerics' code (quantizers/tf_qdq_numerics.hpp).

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "../../numerics/tf_quantize_and_dequantize.hpp"
#include "../tf_qdq_numerics.hpp"

namespace xq {

XQ_DECL const tf_qdq_numerics& tf_qdq_numerics::instance() {
  static const tf_qdq_numerics n;
  return n;
}

XQ_DECL quantized_output tf_qdq_numerics::apply(const quantizer_config& c, const tensor& x,
                                                const kernels::channel_layout&, const vector& min, const vector& max,
                                                bool with_gradient, const std::string& where) const {
  tf::qdq_options o;
  o.signed_input = true;
  o.num_bits = c.num_bits;
  o.range_given = true;
  o.round = tf::round_mode::half_to_even;
  o.narrow_range = c.narrow_range;
  o.axis = c.channel_axis;
  o.per_axis = c.per_channel;
  tensor lo = as_tensor(min), hi = as_tensor(max);
  quantized_output out{at(where, [&] { return tf::quantize_and_dequantize_v4(x, lo, hi, o); }), {}};
  // The input by address, not copied (the caller keeps it: quantizer_numerics::apply).
  // A copy of the weights and inputs of every quantized layer was 2.5% of a QAT step.
  if (with_gradient)
    out.input_gradient = [input = &x, lo = std::move(lo), hi = std::move(hi), o](const tensor& dy) {
      return tf::quantize_and_dequantize_v4_gradient(dy, *input, lo, hi, o);
    };
  return out;
}

XQ_DECL quantization_grid tf_qdq_numerics::grid(const quantizer_config& c, std::size_t channels,
                                                const vector& min, const vector& max,
                                                const std::string& where) const {
  if (c.num_bits > 31)
    throw argument_error(where, "num_bits <= 31 to deploy (an int32 grid)", detail::concat(c.num_bits));
  quantization_grid g;
  g.num_bits = c.num_bits;
  g.per_channel = c.per_channel;
  g.channel_axis = c.channel_axis;
  g.qmin = -(std::int32_t(1) << (c.num_bits - 1)) + (c.narrow_range ? 1 : 0);
  g.qmax = (std::int32_t(1) << (c.num_bits - 1)) - 1;
  const std::size_t n = c.per_channel ? channels : 1;
  if (min.size() != n || max.size() != n)
    throw argument_error(where, detail::concat(n, " range values"), detail::concat(min.size(), " and ", max.size()));
  // The operator rounds with the range as given (apply: range_given, half to even).
  g.rounding.op = rounding_operator::tf_qdq;
  g.rounding.half_to_even = true;
  g.rounding.range_min.assign(min.begin(), min.end());
  g.rounding.range_max.assign(max.begin(), max.end());
  for (std::size_t i = 0; i < n; ++i) {
    // TF's step: the larger-magnitude side sets it (ComputeQuantizationRange); an empty
    // range [0, 0] maps everything to 0 and any step will do.
    const tf::qdq_range r = tf::compute_quantization_range(true, c.num_bits, c.narrow_range, min(i), max(i));
    g.scale.push_back(r.inverse_scale > 0 ? r.inverse_scale : 1.0f);
    g.zero_point.push_back(0);
  }
  return g;
}

}  // namespace xq
