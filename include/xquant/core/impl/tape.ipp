#pragma once
/// \file tape.ipp
/// The tape's code (core/tape.hpp).

#include <utility>

#include "../error.hpp"
#include "../tape.hpp"

namespace xq {

XQ_DECL void tape::check_backward_output(const var& output) const {
  constexpr const char* where = "xq::tape::backward";
  if (!output.defined()) throw argument_error(where, "a defined var", "an empty var");
  if (backward_ran_)
    throw argument_error(where, "one backward per tape (record the forward again on a new tape)",
                         "a second backward on this tape");
  if (!output.requires_grad())
    throw argument_error(where, "a var that needs a gradient (computed on this tape from parameters or inputs that need one)",
                         "a var that needs none (computed from data only, or under no_grad, or with no tape alive)");
  const std::uint64_t on = output.state()->recorded_on;
  if (on != 0 && on != serial_)
    throw argument_error(where, detail::concat("a var recorded on this tape (#", serial_, ")"),
                         detail::concat("one recorded on tape #", on, ", which is not this one (it has ended, or is another)"));
}

XQ_DECL void tape::backward(const var& output) {
  check_backward_output(output);
  backward(output, xt::ones<float>(output.shape()));
}

XQ_DECL void tape::backward(const var& output, tensor output_grad) {
  check_backward_output(output);
  backward_ran_ = true;
  output.state()->accumulate_grad(std::move(output_grad));
  backward_listener* listener = backward_listener::active();
  const std::size_t total = steps_.size();
  if (listener) listener->backward_begins(total);
  // Steps are released as they run: each frees what its forward kept alive.
  for (std::size_t i = total; i-- > 0;) {
    auto step = std::move(steps_[i]);
    steps_.pop_back();
    step();
    if (listener) listener->step_ran(total - 1 - i);
  }
  steps_.clear();
}

}  // namespace xq
