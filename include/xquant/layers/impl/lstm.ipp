#pragma once
/// \file lstm.ipp
/// The LSTM's code (layers/lstm.hpp).

#include <vector>

#include "../../core/error.hpp"
#include "../activation.hpp"
#include "../broadcasting.hpp"
#include "../dense.hpp"
#include "../lstm.hpp"
#include "../slicing.hpp"
#include "recurrent.ipp"

namespace xq {

namespace ops {

XQ_DECL var lstm_recurrence(const var& xw, const var& recurrent_kernel, const var& bias, const recurrence_settings& run,
                            const std::string& path) {
  const std::size_t units = detail::recurrence_units(path, xw, recurrent_kernel, 4);
  if (bias.defined() && (bias.dimension() != 1 || bias.shape()[0] != 4 * units))
    throw shape_error(path, detail::concat("a bias of shape (", 4 * units, ",)"), detail::shape_string(bias.shape()));
  const std::size_t batch = xw.shape()[0], steps = xw.shape()[1];
  const std::vector<var> inputs = split(xw, 1, steps, path);
  var h = detail::zero_state(batch, units), c = detail::zero_state(batch, units);
  std::vector<var> outputs;
  for (std::size_t s = 0; s < steps; ++s) {
    const std::size_t t = run.go_backwards ? steps - 1 - s : s;
    // Keras's LSTMCell order: x·W, then + h·U, then + b.
    var z = detail::time_step(inputs, t) + matmul_bias(h, recurrent_kernel, nullptr, path);
    if (bias.defined()) z = z + bias;
    const std::vector<var> gate = split(z, -1, 4, path);
    const var i = sigmoid(gate[0]), f = sigmoid(gate[1]), o = sigmoid(gate[3]);
    c = f * c + i * tanh(gate[2]);
    h = o * tanh(c);
    if (run.return_sequences) outputs.push_back(h);
  }
  return run.return_sequences ? detail::stack_steps(outputs, path) : h;
}

}  // namespace ops

XQ_DEFINE_SPECIAL_MEMBERS(lstm_recurrence)

XQ_DECL lstm_recurrence::lstm_recurrence(std::size_t units, bool use_bias, recurrence_settings run)
    : layer<lstm_recurrence>("lstm_recurrence"), units_(units), use_bias_(use_bias), run_(run) {
  if (units == 0) throw argument_error("lstm", "units of at least 1 (as Keras's LSTM)", "0");
}

XQ_DECL var lstm_recurrence::call(const var& xw) {
  ensure_built(xw);
  return call_with(xw, kernel_, bias_ ? var(bias_) : var());
}

XQ_DECL void lstm_recurrence::ensure_built(const var&) {
  if (kernel_) return;
  kernel_ = make_parameter("recurrent_kernel", orthogonal(units_, 4 * units_));
  if (use_bias_) {
    tensor b = tensor::from_shape({4 * units_});
    std::fill(b.begin(), b.end(), 0.0f);
    std::fill(b.begin() + static_cast<std::ptrdiff_t>(units_), b.begin() + static_cast<std::ptrdiff_t>(2 * units_),
              1.0f);  // Keras's unit_forget_bias: remember by default
    bias_ = make_parameter("bias", std::move(b));
  }
  name_parameters();
}

XQ_DECL var lstm_recurrence::call_with(const var& xw, const var& kernel, const var& bias) const {
  return ops::lstm_recurrence(xw, kernel, bias, run_, path());
}

XQ_DECL std::vector<parameter_ptr> lstm_recurrence::parameters() const { return {kernel_, bias_}; }

}  // namespace xq
