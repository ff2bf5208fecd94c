#pragma once
/// \file tf_qdq_numerics.hpp
/// `xq::tf_qdq_numerics`: NVIDIA's QDQ (docs/semantics.md §2, §4): TF
/// `quantize_and_dequantize_v4` with the range given, signed, half to even, narrow or
/// wide, per tensor or per channel on any axis. The backward is the V4 gradient: it
/// recomputes the mask from x and the range as given (dy where min <= x <= max), even
/// where it passes everything (a per-tensor last-value range).

#include "../numerics/tf_quantize_and_dequantize.hpp"
#include "quantizer_numerics.hpp"

namespace xq {

class tf_qdq_numerics final : public quantizer_numerics {
 public:
  static const tf_qdq_numerics& instance() {
    static const tf_qdq_numerics n;
    return n;
  }

  quantized_output apply(const quantizer_config& c, const tensor& x, const kernels::channel_layout&, const vector& min,
                         const vector& max, bool with_gradient, const std::string& where) const override {
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
};

}  // namespace xq
