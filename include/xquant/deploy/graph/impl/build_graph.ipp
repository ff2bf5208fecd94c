#pragma once
/// \file build_graph.ipp
/// Building the deploy graph from one traced pass (deploy/graph/build_graph.hpp), and the
/// layer_builder a form writes into (deploy/graph/layer_builder.hpp).

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../core/mode.hpp"
#include "../../../core/model.hpp"
#include "../../../core/tape.hpp"
#include "../../../kernels/channel_layout.hpp"
#include "../../../quantizers/fake_quantizer.hpp"
#include "../../../quantizers/model_quantizers.hpp"
#include "../../../wrappers/batch_norm_folding.hpp"
#include "../../../wrappers/site_quantizers.hpp"
#include "../build_graph.hpp"
#include "../detail/graph_building.hpp"
#include "../graph_decisions.hpp"
#include "../quantizer_grids.hpp"

namespace xq::deploy {

namespace detail {

inline std::string shape_text(const std::vector<std::size_t>& s) {
  std::string t = "(";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + ")";
}

inline std::vector<std::size_t> shape_of(const tensor& t) { return std::vector<std::size_t>(t.shape().begin(), t.shape().end()); }

XQ_DECL std::vector<std::vector<std::size_t>> one_input(const std::vector<std::size_t>& sample_shape) {
  std::vector<std::size_t> s{1};
  s.insert(s.end(), sample_shape.begin(), sample_shape.end());
  return {s};
}

XQ_DECL std::vector<std::vector<std::size_t>> checked_shapes(const input_shapes& shapes, const char* where) {
  if (shapes.empty()) throw argument_error(where, "at least one input shape", "none");
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const auto& s = shapes[k];
    if (s.empty() || std::find(s.begin(), s.end(), std::size_t(0)) != s.end())
      throw argument_error(where, xq::detail::concat("input ", k, "'s shape with the batch axis first and no zero extent"),
                           xq::detail::shape_string(s));
    out.emplace_back(s.begin(), s.end());
    out.back()[0] = 1;  // traced on one sample
  }
  return out;
}

XQ_DECL value_id graph_building::value(const variable_state* s, const std::string& who) {
  const auto it = value_of.find(s);
  if (it != value_of.end()) return it->second;
  if (!constants.count(s))
    throw argument_error(who, "an input made by a layer, an xq::ops function with a layer form, or a model input",
                         "a value computed by code the trace does not see (write it as a layer)");
  op::constant c;
  c.value = s->value;
  const value_id v = graph.add_node(std::move(c), {}, shape_of(s->value), who + " (constant)", "constant", 0);
  return value_of[s] = v;
}

XQ_DECL std::string graph_building::label(std::size_t i, std::size_t input, bool output) const {
  const traced_call& c = trace->calls()[i];
  std::string l = (c.function ? "xq::ops::" + c.type : c.path) + (output ? " output" : " input");
  if (!output && input) l += " " + std::to_string(input);
  if (occurrence[i]) l += " (call " + std::to_string(occurrence[i] + 1) + ")";
  return l;
}

XQ_DECL value_id graph_building::quantize(value_id v, const quantizer_base& q, const tensor& traced, std::size_t i,
                                  std::size_t input, bool output) {
  if (!q.enabled() || !q.fake_quant_enabled()) return v;
  if (!options.allow_uncalibrated && !has_seen_data(q))
    throw argument_error(q.path(),
                         "a quantizer that has seen data (a QAT step, calibrate(), or a range set) before deployment",
                         "one that never did: its grid would be the placeholder range (graph_options::allow_uncalibrated "
                         "deploys it anyway)");
  const traced_call& c = trace->calls()[i];
  op::quantize p;
  p.format = q.dynamic_format();
  if (!p.format) {
    p.grid = grid_of(q, traced, q.path());
  } else {
    // A format's grid is each tensor's; the node keeps the traced one's, or, where that
    // has none (all zeros: NVFP4's tensor scale 0), a tensor of ones' (the same layout).
    try {
      p.grid = grid_of(q, traced, q.path());
    } catch (const argument_error&) {
      tensor ones = tensor::from_shape(traced.shape());
      std::fill(ones.begin(), ones.end(), 1.0f);
      p.grid = grid_of(q, ones, q.path());
    }
  }
  p.quantizer = q.path();
  p.description = q.describe();
  p.label = label(i, input, output);
  p.layer = c.function ? "xq::ops::" + c.type : c.path;
  p.call = occurrence[i];
  p.input = input;
  p.output = output;
  const std::vector<std::size_t> shape = graph.values[v].shape;
  return graph.add_node(std::move(p), {v}, shape, q.path(), q.kind(), occurrence[i]);
}

XQ_DECL void check_finite(const tensor& t, const std::string& name) {
  for (std::size_t i = 0; i < t.size(); ++i)
    if (!std::isfinite(t.data()[i]))
      throw argument_error(name, "finite weights (a deployed model computes with them)",
                           xq::detail::concat(t.data()[i], " at element ", i));
}

XQ_DECL std::size_t graph_building::weight_index(const parameter_ptr& p, const std::string& layer) {
  auto it = weight_of.find(p.get());
  if (it == weight_of.end()) {
    check_finite(p->value, p->name());
    graph_weight w;
    w.name = p->name();
    w.value = p->value;
    w.source = p.get();
    graph.weights.push_back(std::move(w));
    it = weight_of.emplace(p.get(), graph.weights.size() - 1).first;
  }
  auto& users = graph.weights[it->second].layers;
  if (std::find(users.begin(), users.end(), layer) == users.end()) users.push_back(layer);
  return it->second;
}

/// The zeros of `shape` (batch first).
inline tensor zeros_of(const std::vector<std::size_t>& shape) {
  return xq::detail::zeros_tensor(tensor::shape_type(shape.begin(), shape.end()));
}

/// One traced pass on `fill`ed inputs of `shapes`; `recorded`: on a tape with the inputs
/// requiring gradients (constant_values' second pass).
inline var_list run_pass(const model_handle& m, const std::vector<std::vector<std::size_t>>& shapes, float fill,
                         bool recorded, var_list& inputs) {
  const training_mode inference(false);
  inputs.clear();
  for (const auto& s : shapes) {
    tensor t = zeros_of(s);
    std::fill(t.begin(), t.end(), fill);
    inputs.emplace_back(std::move(t), recorded);
  }
  if (recorded) {
    const tape on_tape;
    return m.call(m.model, inputs);
  }
  const no_grad nothing_recorded;
  return m.call(m.model, inputs);
}

/// The values `trace` sees used but not made, that the forward code makes without the
/// inputs (the position indices a transformer builds from the sample shape): a second
/// pass on ones, recording gradients from the inputs, must give them the first pass's
/// value with no gradient. Anything else no traced call made stays an error.
inline std::set<const variable_state*> constant_values(const model_handle& m,
                                                       const std::vector<std::vector<std::size_t>>& shapes,
                                                       const graph_trace& trace, const var_list& inputs) {
  std::set<const variable_state*> constants;
  auto unmade = [&](const variable_state* s) {
    for (const var& in : inputs)
      if (in.state().get() == s) return false;
    return !trace.producer(s);
  };
  bool any = false;
  for (const traced_call& c : trace.calls())
    for (const variable_state* s : c.inputs) any = any || unmade(s);
  if (!any) return constants;
  graph_trace second;
  var_list ones;
  run_pass(m, shapes, 1.0f, true, ones);
  const auto& a = trace.calls();
  const auto& b = second.calls();
  if (a.size() != b.size()) return constants;  // forward code that depends on the inputs' values
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].type != b[i].type || a[i].path != b[i].path || a[i].inputs.size() != b[i].inputs.size()) return {};
    for (std::size_t k = 0; k < a[i].inputs.size(); ++k) {
      const variable_state* s = a[i].inputs[k];
      const variable_state* t = b[i].inputs[k];
      if (unmade(s) && !t->requires_grad && s->value.shape() == t->value.shape() &&
          std::equal(s->value.begin(), s->value.end(), t->value.begin()))
        constants.insert(s);
    }
  }
  return constants;
}

XQ_DECL deploy_graph build_graph(const model_handle& m, const std::vector<std::vector<std::size_t>>& shapes,
                                 const graph_options& o) {
  xq::detail::set_paths(m.ref, "");  // the trace records paths
  form_table forms;
  std::vector<std::string> unbuilt;
  m.collect_forms(m.model, forms, unbuilt);
  if (!unbuilt.empty()) {  // refused before the pass would build it: the model is read, not changed
    std::string list;
    for (const std::string& u : unbuilt) list += (list.empty() ? "" : ", ") + u;
    throw argument_error("xq::deploy", "a built model (xq::build(model, shapes), or trained): deployment reads it",
                         "one whose layers " + list + " were never built (no weights)");
  }

  graph_building b;
  b.options = o;
  // Weights whose first call would build them: the model was never built (the pass
  // would deploy random weights). Quantizer states made by a first inference call are
  // not weights: they are checked as "never saw data" where a grid is taken.
  std::size_t weights_before = 0;
  for (const parameter_ptr& p : xq::detail::parameters(m.ref)) weights_before += p && p->trainable() ? 1 : 0;
  graph_trace trace;
  var_list inputs;
  const var_list outputs = run_pass(m, shapes, 0.0f, false, inputs);
  {
    std::size_t weights_after = 0;
    for (const parameter_ptr& p : xq::detail::parameters(m.ref)) weights_after += p && p->trainable() ? 1 : 0;
    if (weights_after != weights_before)
      throw argument_error("xq::deploy", "a built model (xq::build(model, shapes), or trained): deployment reads it",
                           xq::detail::concat("one whose first call made ", weights_after - weights_before,
                                              " weights (random, never trained)"));
  }
  xq::detail::set_paths(m.ref, "");  // names of anything the pass made
  b.trace = &trace;
  b.constants = constant_values(m, shapes, trace, inputs);

  deploy_graph& g = b.graph;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    std::string name = k < o.input_names.size() ? o.input_names[k] : k == 0 ? "input" : "input_" + std::to_string(k);
    const value_id v = g.add_value(shapes[k], name);
    g.inputs.push_back(v);
    g.input_names.push_back(std::move(name));
    b.value_of[inputs[k].state().get()] = v;
  }
  {
    std::unordered_map<std::string, std::size_t> seen;
    for (const traced_call& c : trace.calls()) b.occurrence.push_back(c.function ? 0 : seen[c.path]++);
  }

  // Forms may run quantizers (a kernel's integers): their calls go to a trace of their own.
  const std::size_t calls = trace.calls().size();
  graph_trace forms_calls;
  for (std::size_t i = 0; i < calls; ++i) {
    const traced_call& c = trace.calls()[i];
    const std::string who = c.describe();
    b.attached = attached_quantizers{};
    b.raw_inputs.clear();
    for (const variable_state* s : c.inputs) b.raw_inputs.push_back(b.value(s, who));
    b.quantized_inputs.assign(c.inputs.size(), no_index);
    b.attached.inputs.assign(c.inputs.size(), nullptr);

    layer_builder lb(b, i);
    value_id out = no_index;
    if (c.function) {
      const function_form f = find_function_form(c.type);
      if (!f)
        throw argument_error("xq::ops::" + c.type,
                             "a function with a deploy form (relu, relu6, sigmoid, tanh, swish, softmax, gelu, add, "
                             "multiply, concatenate, broadcast_add, subtract, broadcast_multiply, matmul, slice, "
                             "transpose, attend, or one registered with xq::deploy::register_function_form)",
                             "a call of xq::ops::" + c.type + " in the forward code");
      out = f(lb);
    } else {
      const auto it = forms.find(c.path);
      if (it == forms.end() || !it->second.describe)
        throw argument_error(c.path,
                             "a layer with a deploy form: a describe_deployment(const L&, xq::deploy::layer_builder&) "
                             "found by argument-dependent lookup (docs/layer_contract.md, \"Deploying\")",
                             "a " + (it == forms.end() ? c.type : it->second.type) + " layer, which has none");
      out = it->second.describe(it->second.layer, lb);
    }
    if (out >= g.values.size())
      throw argument_error(c.path.empty() ? who : c.path, "a deploy form that returns a value of the graph",
                           xq::detail::concat("value ", out));
    const std::vector<std::size_t> traced = shape_of(c.output->value);
    if (g.values[out].shape != traced)
      throw argument_error(c.path.empty() ? who : c.path,
                           "a deploy form whose output has the traced output's shape " + shape_text(traced),
                           shape_text(g.values[out].shape));
    if (b.attached.output) out = b.quantize(out, *b.attached.output, c.output->value, i, 0, true);
    b.value_of[c.output] = out;
  }

  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const value_id v = b.value(outputs[k].state().get(), "the model's output " + std::to_string(k));
    g.outputs.push_back(v);
    g.output_names.push_back(k < o.output_names.size() ? o.output_names[k]
                             : k == 0                    ? std::string("output")
                                                         : "output_" + std::to_string(k));
  }
  g.validate();
  decide(g);
  return std::move(b.graph);
}

}  // namespace detail

}  // namespace xq::deploy
