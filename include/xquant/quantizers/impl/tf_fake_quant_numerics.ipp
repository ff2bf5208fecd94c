#pragma once
/// \file tf_fake_quant_numerics.ipp
/// tf_fake_quant_numerics' code (quantizers/tf_fake_quant_numerics.hpp).

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

}  // namespace xq
