#pragma once
/// \file quantized_batch_norm.ipp
/// quantized_batch_norm's code (wrappers/quantized_batch_norm.hpp).

#include "../quantized_batch_norm.hpp"
#include "../../core/mode.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(quantized_batch_norm)

XQ_DECL var quantized_batch_norm::call(const var& x) {
  const var in = input_(x);
  var y;
  if (fold_ && fold_->frozen()) {
    const training_mode moving_statistics(false);
    y = layer_(in);
  } else {
    y = layer_(in);
  }
  return finish(y);
}

}  // namespace xq
