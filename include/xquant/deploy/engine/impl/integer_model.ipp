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
  const std::vector<std::size_t> ins = input_values(), outs = output_values();
  const std::vector<std::vector<std::size_t>> shapes = input_shapes();
  if (other_input_shapes.size() != other_input_values.size() || ins.size() > 64 || outs.size() > 64)
    throw argument_error(model, "at most 64 inputs, each with a shape, and at most 64 outputs",
                         concat(ins.size(), " inputs with ", shapes.size(), " shapes, ", outs.size(), " outputs"));
  for (std::size_t v : ins)
    if (v >= value_count) throw argument_error(model, concat("input tensors among the ", value_count), concat("%", v));
  for (std::size_t v : outs)
    if (v >= value_count) throw argument_error(model, concat("output tensors among the ", value_count), concat("%", v));
  for (const auto& shape : shapes) {
    if (shape.empty() || shape.size() >= engine_limits::rank)
      throw argument_error(model, concat("an input shape of 1 to ", engine_limits::rank - 1, " axes"),
                           xq::detail::shape_string(shape));
    for (std::size_t d : shape)
      if (d == 0 || d > (std::size_t(1) << 31))
        throw argument_error(model, "input axes from 1 to 2^31", xq::detail::shape_string(shape));
  }
  const std::uint64_t samples = std::max<std::size_t>(batch, 1);
  const std::uint64_t tensor_bound = detail::saturating_product(engine_limits::tensor_elements, samples);
  const std::uint64_t model_bound = detail::saturating_product(engine_limits::model_elements, samples);
  const std::uint64_t work_bound = detail::saturating_product(engine_limits::work, samples);
  std::vector<engine_tensor> values(value_count);
  std::vector<bool> defined(value_count, false);
  std::uint64_t elements = 0, work = 0;
  for (std::size_t k = 0; k < ins.size(); ++k) {
    if (defined[ins[k]]) throw argument_error(model, "a tensor per input", concat("tensor %", ins[k], " twice"));
    engine_tensor& in = values[ins[k]];
    in.shape = {batch};
    in.shape.insert(in.shape.end(), shapes[k].begin(), shapes[k].end());
    defined[ins[k]] = true;
    const std::uint64_t n = detail::element_count(in.shape);
    if (n > tensor_bound)
      throw argument_error(model, concat("an input of at most ", engine_limits::tensor_elements, " elements per sample"),
                           xq::detail::shape_string(shapes[k]));
    elements += n;
  }
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
  for (std::size_t v : outs)
    if (!defined[v]) throw argument_error(model, "outputs computed by the ops", concat("tensor %", v));
  for (const parity_point& p : parity_points)
    if (p.value >= value_count || !defined[p.value])
      throw argument_error(model, "parity points on computed tensors", concat(p.label, " on tensor %", p.value));
  return values;
}

XQ_DECL std::vector<std::size_t> integer_model::input_values() const {
  std::vector<std::size_t> v{input_value};
  v.insert(v.end(), other_input_values.begin(), other_input_values.end());
  return v;
}

XQ_DECL std::vector<std::vector<std::size_t>> integer_model::input_shapes() const {
  std::vector<std::vector<std::size_t>> v{input_shape};
  v.insert(v.end(), other_input_shapes.begin(), other_input_shapes.end());
  return v;
}

XQ_DECL std::vector<std::size_t> integer_model::output_values() const {
  std::vector<std::size_t> v{output_value};
  v.insert(v.end(), other_output_values.begin(), other_output_values.end());
  return v;
}

namespace detail {
inline std::string sample_shape_string(const std::vector<std::size_t>& s) {
  std::string t = "(N";
  for (std::size_t d : s) t += ", " + std::to_string(d);
  return t + ")";
}
}  // namespace detail

XQ_DECL std::vector<engine_tensor> integer_model::run_all(const std::vector<tensor>& inputs, const run_options& o) const {
  const std::vector<std::vector<std::size_t>> shapes = input_shapes();
  if (inputs.size() != shapes.size())
    throw argument_error("integer_model::run", xq::detail::concat(shapes.size(), " inputs (the model's)"),
                         xq::detail::concat(inputs.size()));
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const tensor& x = inputs[k];
    if (x.dimension() != shapes[k].size() + 1 || !std::equal(shapes[k].begin(), shapes[k].end(), x.shape().begin() + 1) ||
        (k && x.shape()[0] != inputs[0].shape()[0]))
      throw argument_error("integer_model::run",
                           "an input" + (inputs.size() > 1 ? xq::detail::concat(" ", k) : std::string()) + " of shape " +
                               detail::sample_shape_string(shapes[k]) + (k ? " (the same N)" : ""),
                           xq::detail::shape_string(x.shape()));
  }
  // Every op's rule for this batch, before anything is computed: the kernels then only see
  // tensors of the kinds and shapes they accept, within engine_limits.
  const std::vector<engine_tensor> expected = check(inputs[0].shape()[0]);
  std::vector<engine_tensor> values(value_count);
  const std::vector<std::size_t> ins = input_values();
  for (std::size_t k = 0; k < ins.size(); ++k) {
    engine_tensor& in = values.at(ins[k]);
    in.shape.assign(inputs[k].shape().begin(), inputs[k].shape().end());
    in.real.assign(inputs[k].begin(), inputs[k].end());
  }
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

XQ_DECL std::vector<engine_tensor> integer_model::run_all(const tensor& x, const run_options& o) const {
  return run_all(std::vector<tensor>{x}, o);
}

/// One input and one output: the model's only ones (argument_error otherwise).
XQ_DECL tensor integer_model::run(const tensor& x, const run_options& o) const {
  if (!other_input_values.empty() || !other_output_values.empty())
    throw argument_error("integer_model::run",
                         "a model of one input and one output (run(std::vector<tensor>) takes and gives several)",
                         xq::detail::concat(1 + other_input_values.size(), " inputs, ", 1 + other_output_values.size(),
                                            " outputs"));
  return run(std::vector<tensor>{x}, o).front();
}

XQ_DECL std::vector<tensor> integer_model::run(const std::vector<tensor>& inputs, const run_options& o) const {
  const std::vector<std::size_t> outs = output_values();
  auto outputs_of = [&](const std::vector<engine_tensor>& values) {
    std::vector<tensor> y;
    for (std::size_t v : outs) y.push_back(values.at(v).to_real());
    return y;
  };
  const std::size_t n = !inputs.empty() && inputs[0].dimension() ? inputs[0].shape()[0] : 0;
  const std::size_t slice = o.batch_slice ? o.batch_slice : 8;
  bool invariant = true;
  for (const auto& op : ops) invariant = invariant && op->batch_invariant();
  if (n <= slice || !invariant || o.reference_kernels) return outputs_of(run_all(inputs, o));
  check(n);  // the inputs' shapes are checked by each slice's run_all; the model's bounds here
  const std::size_t slices = (n + slice - 1) / slice;
  std::vector<std::vector<tensor>> parts(slices);
  std::vector<std::exception_ptr> errors(slices);
  kernels::parallel_items(kernels::blas_has_thread_pool() ? 1 : kernels::max_threads(), slices, [&](std::size_t s0, std::size_t s1) {
    for (std::size_t s = s0; s < s1; ++s) {
      try {
        const std::size_t b0 = s * slice, b1 = std::min(n, b0 + slice);
        std::vector<tensor> in;
        for (const tensor& x : inputs) {
          if (!x.dimension() || x.shape()[0] != n)
            throw argument_error("integer_model::run", xq::detail::concat("inputs of one batch (", n, ")"),
                                 xq::detail::shape_string(x.shape()));
          const std::size_t per_sample = x.size() / n;
          std::vector<std::size_t> shape(x.shape().begin(), x.shape().end());
          shape[0] = b1 - b0;
          tensor part = tensor::from_shape(shape);
          std::copy(x.data() + b0 * per_sample, x.data() + b1 * per_sample, part.data());
          in.push_back(std::move(part));
        }
        parts[s] = outputs_of(run_all(in, o));
      } catch (...) {
        errors[s] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<tensor> y;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    std::vector<std::size_t> shape(parts[0][k].shape().begin(), parts[0][k].shape().end());
    shape[0] = n;
    tensor whole = tensor::from_shape(shape);
    float* out = whole.data();
    for (const auto& part : parts) out = std::copy(part[k].begin(), part[k].end(), out);
    y.push_back(std::move(whole));
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
