#pragma once
/// \file tape.ipp
/// The tape's code (core/tape.hpp).

#include <utility>

#include "../error.hpp"
#include "../tape.hpp"

namespace xq {

XQ_DECL void tape::backward(const var& output) { backward(output, xt::ones<float>(output.shape())); }

XQ_DECL void tape::backward(const var& output, tensor output_grad) {
  if (!output.defined()) throw argument_error("xq::tape::backward", "a defined var", "an empty var");
  if (output.requires_grad()) output.state()->accumulate_grad(std::move(output_grad));
  // Steps are released as they run: each frees what its forward kept alive.
  for (std::size_t i = steps_.size(); i-- > 0;) {
    auto step = std::move(steps_[i]);
    steps_.pop_back();
    step();
  }
  steps_.clear();
}

}  // namespace xq
