#pragma once
/// \file integer_model.ipp
/// The integer model: its check and its runs (deploy/engine/integer_model.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../kernels/parallel.hpp"
#include "../../../kernels/threads.hpp"
#include "../integer_model.hpp"

namespace xq::deploy {

XQ_DECL std::vector<engine_tensor> integer_model::check(std::size_t batch) const {
  using xq::detail::concat;
  const std::string model = "integer model";
  if (ops.size() > engine_limits::ops) throw argument_error(model, concat("at most ", engine_limits::ops, " ops"), concat(ops.size()));
  if (value_count == 0 || value_count > 2 * ops.size() + 1)
    throw argument_error(model, concat("1 to ", 2 * ops.size() + 1, " tensors (2 per op and the input)"), concat(value_count));
  if (input_value >= value_count || output_value >= value_count)
    throw argument_error(model, concat("input and output tensors among the ", value_count),
                         concat("%", input_value, " and %", output_value));
  if (input_shape.empty() || input_shape.size() >= engine_limits::rank)
    throw argument_error(model, concat("an input shape of 1 to ", engine_limits::rank - 1, " axes"),
                         xq::detail::shape_string(input_shape));
  for (std::size_t d : input_shape)
    if (d == 0 || d > (std::size_t(1) << 31))
      throw argument_error(model, "input axes from 1 to 2^31", xq::detail::shape_string(input_shape));
  const std::uint64_t samples = std::max<std::size_t>(batch, 1);
  const std::uint64_t tensor_bound = detail::saturating_product(engine_limits::tensor_elements, samples);
  const std::uint64_t model_bound = detail::saturating_product(engine_limits::model_elements, samples);
  const std::uint64_t work_bound = detail::saturating_product(engine_limits::work, samples);
  std::vector<engine_tensor> values(value_count);
  std::vector<bool> defined(value_count, false);
  engine_tensor& in = values[input_value];
  in.shape = {batch};
  in.shape.insert(in.shape.end(), input_shape.begin(), input_shape.end());
  defined[input_value] = true;
  std::uint64_t elements = detail::element_count(in.shape), work = 0;
  if (elements > tensor_bound)
    throw argument_error(model, concat("an input of at most ", engine_limits::tensor_elements, " elements per sample"),
                         xq::detail::shape_string(input_shape));
  std::vector<const engine_tensor*> args;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const lowered_op& op = *ops[i];
    const std::string at = concat("ops[", i, "] ", op.path, " (", op.kind(), ")");
    args.clear();
    for (std::size_t v : op.inputs) {
      if (v >= value_count || !defined[v]) throw argument_error(at, "inputs computed before it", concat("tensor %", v));
      args.push_back(&values[v]);
    }
    if (op.output >= value_count || defined[op.output])
      throw argument_error(at, "an output tensor computed once", concat("tensor %", op.output));
    std::uint64_t cost = 0;
    engine_tensor y;
    try {
      y = op.infer(args, cost);
    } catch (const argument_error& e) {  // named by its place in the model, path and kind
      throw argument_error(at, e.expected(), e.given());
    }
    if (y.shape.empty() || y.shape.size() > engine_limits::rank)
      throw argument_error(at, concat("an output of 1 to ", engine_limits::rank, " axes"), xq::detail::shape_string(y.shape));
    for (std::size_t a = 1; a < y.shape.size(); ++a)
      if (y.shape[a] == 0)
        throw argument_error(at, "an output without zero-size axes (but the batch)", xq::detail::shape_string(y.shape));
    const std::uint64_t n = detail::element_count(y.shape);
    if (n > tensor_bound)
      throw argument_error(at, concat("an output of at most ", engine_limits::tensor_elements, " elements per sample"),
                           xq::detail::shape_string(y.shape));
    elements = std::min(elements + n, UINT64_MAX - 1);
    work = std::min(work + std::max(cost, n), UINT64_MAX - 1);
    if (elements > model_bound)
      throw argument_error(at, concat("at most ", engine_limits::model_elements, " elements in all tensors per sample"),
                           concat(elements, " for ", samples, " samples"));
    if (work > work_bound)
      throw argument_error(at, concat("at most ", engine_limits::work, " multiply-adds per sample"),
                           concat(work, " for ", samples, " samples"));
    values[op.output] = std::move(y);
    defined[op.output] = true;
  }
  if (!defined[output_value]) throw argument_error(model, "an output computed by an op", concat("tensor %", output_value));
  for (const parity_point& p : parity_points)
    if (p.value >= value_count || !defined[p.value])
      throw argument_error(model, "parity points on computed tensors", concat(p.label, " on tensor %", p.value));
  return values;
}

XQ_DECL std::vector<engine_tensor> integer_model::run_all(const tensor& x, const run_options& o) const {
  if (x.dimension() != input_shape.size() + 1 ||
      !std::equal(input_shape.begin(), input_shape.end(), x.shape().begin() + 1))
    throw argument_error("integer_model::run",
                         "an input of shape (N" + [&] {
                           std::string s;
                           for (std::size_t d : input_shape) s += ", " + std::to_string(d);
                           return s;
                         }() + ")",
                         xq::detail::shape_string(x.shape()));
  // Every op's rule for this batch, before anything is computed: the kernels then only see
  // tensors of the kinds and shapes they accept, within engine_limits.
  const std::vector<engine_tensor> expected = check(x.shape()[0]);
  std::vector<engine_tensor> values(value_count);
  engine_tensor& in = values.at(input_value);
  in.shape.assign(x.shape().begin(), x.shape().end());
  in.real.assign(x.begin(), x.end());
  for (const auto& op : ops) {
    op->run(values, o);
    // What the op computed is what its rule said (the next ops were checked against that).
    const engine_tensor& y = values[op->output];
    const engine_tensor& e = expected[op->output];
    if (y.kind != e.kind || y.shape != e.shape || !y.holds_data() ||
        (y.kind == value_kind::integer && !same_integer_grid(y.grid(), e.grid())))
      throw error(xq::detail::concat(op->path, " (", op->kind(), "): internal: computed ", detail::tensor_string(y),
                                     ", its rule says ", detail::tensor_string(e)));
  }
  return values;
}

XQ_DECL tensor integer_model::run(const tensor& x, const run_options& o) const {
  const std::size_t n = x.dimension() ? x.shape()[0] : 0;
  const std::size_t slice = o.batch_slice ? o.batch_slice : 8;
  bool invariant = true;
  for (const auto& op : ops) invariant = invariant && op->batch_invariant();
  if (n <= slice || !invariant || o.reference_kernels) return run_all(x, o).at(output_value).to_real();
  const std::size_t per_sample = x.size() / n, slices = (n + slice - 1) / slice;
  std::vector<engine_tensor> outputs(slices);
  std::vector<std::exception_ptr> errors(slices);
  kernels::parallel_items(kernels::blas_has_thread_pool() ? 1 : kernels::max_threads(), slices, [&](std::size_t s0, std::size_t s1) {
    for (std::size_t s = s0; s < s1; ++s) {
      try {
        const std::size_t b0 = s * slice, b1 = std::min(n, b0 + slice);
        std::vector<std::size_t> shape(x.shape().begin(), x.shape().end());
        shape[0] = b1 - b0;
        tensor part = tensor::from_shape(shape);
        std::copy(x.data() + b0 * per_sample, x.data() + b1 * per_sample, part.data());
        outputs[s] = std::move(run_all(part, o).at(output_value));
      } catch (...) {
        errors[s] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<std::size_t> shape = outputs[0].shape;
  shape[0] = n;
  tensor y = tensor::from_shape(shape);
  float* out = y.data();
  for (const engine_tensor& part : outputs) {
    const tensor r = part.to_real();
    out = std::copy(r.begin(), r.end(), out);
  }
  return y;
}

XQ_DECL std::string integer_model::summary() const {
  std::ostringstream s;
  s << "integer model: " << ops.size() << " ops, requantization " << to_string(scheme) << ", "
    << weight_bytes() << " bytes of weights\n";
  for (const auto& op : ops) {
    s << "  %" << op->output << " = " << op->kind() << "(";
    for (std::size_t i = 0; i < op->inputs.size(); ++i) s << (i ? ", %" : "%") << op->inputs[i];
    s << ")  " << op->path << ": " << op->describe() << "\n";
  }
  return s.str();
}

XQ_DECL std::size_t integer_model::weight_bytes() const {
  std::size_t bytes = 0;
  for (const auto& op : ops) bytes += op->weight_bytes();
  return bytes;
}

}  // namespace xq::deploy
