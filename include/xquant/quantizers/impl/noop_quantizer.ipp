#pragma once
/// \file noop_quantizer.ipp
/// noop_quantizer's code (quantizers/noop_quantizer.hpp).

#include "../../core/error.hpp"
#include "../noop_quantizer.hpp"

namespace xq {

XQ_DECL noop_quantizer::noop_quantizer(int precision)
    : quantizer_layer<noop_quantizer>("no_op"), precision_(precision) {
  if (precision < 1 || precision > 32)
    throw argument_error("xq::noop_quantizer", "precision in [1, 32]", detail::concat(precision));
}

XQ_DECL var noop_quantizer::quantize(const var& x) {
  if (!gradient_flow_metric()) return x;
  return emit(x, x.value(), [](const tensor& dy) { return dy; });
}

}  // namespace xq
