#pragma once
/// \file layer_builder.ipp
/// The builder a deploy form writes into (deploy/graph/layer_builder.hpp).

#include <string>
#include <variant>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../core/graph_trace.hpp"
#include "../../../core/mode.hpp"
#include "../../../core/tape.hpp"
#include "../../../quantizers/fake_quantizer.hpp"
#include "../../../wrappers/batch_norm_folding.hpp"
#include "../../../wrappers/site_quantizers.hpp"
#include "../detail/graph_building.hpp"
#include "../layer_builder.hpp"
#include "../quantizer_grids.hpp"

namespace xq::deploy {

// ---- layer_builder ------------------------------------------------------------------------

XQ_DECL const std::string& layer_builder::path() const {
  static thread_local std::string function_path;
  const traced_call& c = state_.trace->calls()[call_];
  if (!c.function) return c.path;
  function_path = "xq::ops::" + c.type;
  return function_path;
}

XQ_DECL const std::string& layer_builder::type() const { return state_.trace->calls()[call_].type; }

XQ_DECL std::size_t layer_builder::call() const { return state_.occurrence[call_]; }

XQ_DECL std::size_t layer_builder::input_count() const { return state_.raw_inputs.size(); }

XQ_DECL value_id layer_builder::raw_input(std::size_t k) const {
  if (k >= state_.raw_inputs.size())
    throw argument_error(path(), xq::detail::concat("an input index below ", state_.raw_inputs.size()),
                         xq::detail::concat(k));
  return state_.raw_inputs[k];
}

XQ_DECL value_id layer_builder::input(std::size_t k) {
  const value_id raw = raw_input(k);
  value_id& q = state_.quantized_inputs[k];
  if (q != no_index) return q;
  q = raw;
  if (const quantizer_base* iq = state_.attached.inputs[k])
    q = state_.quantize(raw, *iq, state_.trace->calls()[call_].inputs[k]->value, call_, k, false);
  return q;
}

XQ_DECL const std::vector<std::size_t>& layer_builder::shape(value_id v) const {
  if (v >= state_.graph.values.size())
    throw argument_error(path(), "a value of the graph", xq::detail::concat("value ", v));
  return state_.graph.values[v].shape;
}

XQ_DECL const std::vector<std::size_t>& layer_builder::output_shape() const {
  static thread_local std::vector<std::size_t> s;
  const auto& t = state_.trace->calls()[call_].output->value.shape();
  s.assign(t.begin(), t.end());
  return s;
}

XQ_DECL const std::vector<std::int64_t>& layer_builder::attributes() const {
  return state_.trace->calls()[call_].attributes;
}

XQ_DECL value_id layer_builder::add(deploy_op o, std::vector<value_id> inputs, std::vector<std::size_t> s) {
  for (value_id v : inputs)
    if (v >= state_.graph.values.size())
      throw argument_error(path(), "inputs that are values of the graph", xq::detail::concat("value ", v));
  if (s.empty()) {
    const bool elementwise = std::holds_alternative<op::quantize>(o) || std::holds_alternative<op::activation>(o) ||
                             std::holds_alternative<op::batch_norm>(o);
    s = elementwise && !inputs.empty() ? state_.graph.values[inputs[0]].shape : output_shape();
  }
  if (auto* l = std::get_if<op::linear>(&o)) l->pad_value = state_.attached.pad_value;
  if (auto* n = std::get_if<op::batch_norm>(&o)) n->folded = n->folded || state_.attached.folded_norm;
  const traced_call& c = state_.trace->calls()[call_];
  return state_.graph.add_node(std::move(o), std::move(inputs), std::move(s), path(), c.type, call());
}

XQ_DECL weight_use layer_builder::weight(const parameter_ptr& p) {
  weight_use u;
  if (p) u.weight = state_.weight_index(p, path());
  return u;
}

XQ_DECL weight_use layer_builder::kernel(const parameter_ptr& p) {
  if (!p) return {};
  weight_use u;
  tensor value = p->value;
  detail::check_finite(value, p->name());
  if (state_.attached.fold) {  // the simulation's folded kernel, with its own operations
    const no_grad nothing_recorded;
    const tensor s = ops::fold_scale(*state_.attached.fold).value();
    value = ops::scale_channels(var(p->value), var(s), path()).value();
    u.fold_divisor.assign(s.begin(), s.end());
    graph_weight w;
    w.name = p->name() + " (folded)";
    w.value = value;
    w.layers = {path()};
    state_.graph.weights.push_back(std::move(w));
    u.weight = state_.graph.weights.size() - 1;
  } else {
    u.weight = state_.weight_index(p, path());
  }
  const quantizer_base* kq = state_.attached.kernel;
  if (kq && kq->enabled() && kq->fake_quant_enabled()) {
    if (!state_.options.allow_uncalibrated && !has_seen_data(*kq))
      throw argument_error(kq->path(), "a kernel quantizer that has seen data before deployment", "one that never did");
    u.quantized = true;
    u.q.grid = grid_of(*kq, value, kq->path());
    u.q.dequantized = detail::inference_output(*kq, value);
    u.q.integers = grid_integers(u.q.grid, u.q.dequantized, kq->path());
    u.q.quantizer = kq->path();
    u.q.description = kq->describe();
  }
  return u;
}

XQ_DECL op::window layer_builder::window(std::array<std::size_t, 2> size, std::array<std::size_t, 2> strides,
                                         std::array<std::size_t, 2> dilation, xq::padding p) const {
  return window_over(state_.graph.values[raw_input(0)].shape, size, strides, dilation, p);
}

XQ_DECL float layer_builder::pad_value() const { return state_.attached.pad_value; }

XQ_DECL void layer_builder::refuse(const std::string& because) const {
  throw argument_error(path(), "a layer with a deployed form", "a " + type() + " layer, which has none: " + because);
}

XQ_DECL void layer_builder::quantize_input(std::size_t k, const site_quantizers& sites) {
  if (!sites.enabled() || k >= state_.attached.inputs.size()) return;
  const std::size_t site = sites.call_sites() > 1 ? call() : 0;
  const fake_quantizer& q = sites.site(site);
  if (q.enabled()) state_.attached.inputs[k] = &q;
}

XQ_DECL void layer_builder::quantize_input(std::size_t k, const quantizer_base& q) {
  if (q.enabled() && k < state_.attached.inputs.size()) state_.attached.inputs[k] = &q;
}

XQ_DECL void layer_builder::quantize_output(const site_quantizers& sites) {
  if (!sites.enabled()) return;
  const fake_quantizer& q = sites.site(sites.call_sites() > 1 ? call() : 0);
  if (q.enabled()) state_.attached.output = &q;
}

XQ_DECL void layer_builder::quantize_kernel(const quantizer_base& q) {
  if (q.enabled()) state_.attached.kernel = &q;
}

XQ_DECL void layer_builder::fold(const std::shared_ptr<batch_norm_fold>& link) { state_.attached.fold = link; }

XQ_DECL void layer_builder::mark_folded() { state_.attached.folded_norm = true; }

XQ_DECL void layer_builder::set_pad_value(float v) { state_.attached.pad_value = v; }

}  // namespace xq::deploy
