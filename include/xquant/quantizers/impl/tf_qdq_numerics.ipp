#pragma once
/// \file tf_qdq_numerics.ipp
/// tf_qdq_numerics' code (quantizers/tf_qdq_numerics.hpp).

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
  if (with_gradient)
    out.input_gradient = [x, lo = std::move(lo), hi = std::move(hi), o](const tensor& dy) {
      return tf::quantize_and_dequantize_v4_gradient(dy, x, lo, hi, o);
    };
  return out;
}

}  // namespace xq
