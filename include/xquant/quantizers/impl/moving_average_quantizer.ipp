#pragma once
/// \file moving_average_quantizer.ipp
/// moving_average_quantizer's preset (quantizers/moving_average_quantizer.hpp).

#include "../../core/error.hpp"
#include "../moving_average_quantizer.hpp"

namespace xq {

XQ_DECL quantizer_config moving_average_quantizer::preset(int num_bits, bool symmetric, bool narrow_range) {
  if (num_bits < 2 || num_bits > 16)
    throw argument_error("moving_average_quantizer", "num_bits in [2, 16]", detail::concat(num_bits));
  quantizer_config c;
  c.num_bits = num_bits;
  c.symmetric = symmetric;
  c.narrow_range = narrow_range;
  c.per_channel = false;
  c.numerics = quant_numerics::tf_fake_quant;
  c.tracking = range_tracking::moving_average;
  c.ema_decay = 0.999;
  c.init_min = initial_min;
  c.init_max = initial_max;
  return c;
}

}  // namespace xq
