#pragma once
/// \file tf_fake_quant_numerics.hpp
/// `xq::tf_fake_quant_numerics`: tfmot's operator (docs/semantics.md §1, §3): TF
/// `fake_quant_with_min_max_vars` per tensor, `..._per_channel` on the last axis, with
/// the nudged range; the backward is the op's input gradient (dy inside the nudged range,
/// both ends inclusive), computed from the mask the forward wrote alongside, with TF's
/// denormal flushing. The range gets no gradient: it is tracked, not trained.

#include "../numerics/tf_fake_quant.hpp"
#include "quantizer_numerics.hpp"

namespace xq {

class tf_fake_quant_numerics final : public quantizer_numerics {
 public:
  static const tf_fake_quant_numerics& instance() {
    static const tf_fake_quant_numerics n;
    return n;
  }

  quantized_output apply(const quantizer_config& c, const tensor& x, const kernels::channel_layout&, const vector& min,
                         const vector& max, bool with_gradient, const std::string& where) const override {
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
};

}  // namespace xq
