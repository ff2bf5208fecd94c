#pragma once
/// \file gru.ipp
/// The GRU's code (layers/gru.hpp).

#include <vector>

#include "../../core/error.hpp"
#include "../activation.hpp"
#include "../broadcasting.hpp"
#include "../dense.hpp"
#include "../gru.hpp"
#include "../slicing.hpp"
#include "recurrent.ipp"

namespace xq {

namespace ops {

XQ_DECL var gru_recurrence(const var& xw, const var& recurrent_kernel, const var& recurrent_bias, bool reset_after,
                           const recurrence_settings& run, const std::string& path) {
  const std::size_t units = detail::recurrence_units(path, xw, recurrent_kernel, 3);
  if (recurrent_bias.defined() &&
      (!reset_after || recurrent_bias.dimension() != 1 || recurrent_bias.shape()[0] != 3 * units))
    throw shape_error(path,
                      reset_after ? detail::concat("a recurrent bias of shape (", 3 * units, ",)")
                                  : std::string("no recurrent bias (reset_after is false: the input's bias is the only one)"),
                      detail::shape_string(recurrent_bias.shape()));
  const std::size_t batch = xw.shape()[0], steps = xw.shape()[1];
  const std::vector<var> inputs = split(xw, 1, steps, path);
  tensor one_value = tensor::from_shape({1});
  one_value(0) = 1.0f;
  const var one(std::move(one_value));
  // reset_after = false multiplies r · h by the candidate's columns alone.
  std::vector<var> kernel_parts;
  if (!reset_after) kernel_parts = split(recurrent_kernel, -1, std::vector<std::size_t>{2 * units, units}, path);
  const var* b = recurrent_bias.defined() ? &recurrent_bias : nullptr;
  var h = detail::zero_state(batch, units);
  std::vector<var> outputs;
  for (std::size_t s = 0; s < steps; ++s) {
    const std::size_t t = run.go_backwards ? steps - 1 - s : s;
    const std::vector<var> x = split(detail::time_step(inputs, t), -1, 3, path);
    var hh;
    var z, r;
    if (reset_after) {
      const std::vector<var> u = split(matmul_bias(h, recurrent_kernel, b, path), -1, 3, path);
      z = sigmoid(x[0] + u[0]);
      r = sigmoid(x[1] + u[1]);
      hh = tanh(x[2] + r * u[2]);
    } else {
      const std::vector<var> u = split(matmul_bias(h, kernel_parts[0], nullptr, path), -1, 2, path);
      z = sigmoid(x[0] + u[0]);
      r = sigmoid(x[1] + u[1]);
      hh = tanh(x[2] + matmul_bias(r * h, kernel_parts[1], nullptr, path));
    }
    h = z * h + (one - z) * hh;  // Keras's form, rounding included
    if (run.return_sequences) outputs.push_back(h);
  }
  return run.return_sequences ? detail::stack_steps(outputs, path) : h;
}

}  // namespace ops

XQ_DEFINE_SPECIAL_MEMBERS(gru_recurrence)

XQ_DECL gru_recurrence::gru_recurrence(std::size_t units, bool use_bias, bool reset_after, recurrence_settings run)
    : layer<gru_recurrence>("gru_recurrence"), units_(units), use_bias_(use_bias), reset_after_(reset_after), run_(run) {
  if (units == 0) throw argument_error("gru", "units of at least 1 (as Keras's GRU)", "0");
}

XQ_DECL var gru_recurrence::call(const var& xw) {
  ensure_built(xw);
  return call_with(xw, kernel_, bias_ ? var(bias_) : var());
}

XQ_DECL void gru_recurrence::ensure_built(const var&) {
  if (kernel_) return;
  kernel_ = make_parameter("recurrent_kernel", orthogonal(units_, 3 * units_));
  if (use_bias_ && reset_after_) bias_ = make_parameter("recurrent_bias", xt::zeros<float>({3 * units_}));
  name_parameters();
}

XQ_DECL var gru_recurrence::call_with(const var& xw, const var& kernel, const var& bias) const {
  return ops::gru_recurrence(xw, kernel, bias, reset_after_, run_, path());
}

XQ_DECL std::vector<parameter_ptr> gru_recurrence::parameters() const { return {kernel_, bias_}; }

}  // namespace xq
