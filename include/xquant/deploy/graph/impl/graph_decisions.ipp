#pragma once
/// \file graph_decisions.ipp
/// The decisions made once on the deploy graph (deploy/graph/graph_decisions.hpp).

#include <variant>
#include <vector>

#include "../graph_decisions.hpp"
#include "../quantizer_grids.hpp"

namespace xq::deploy {

XQ_DECL bool same_grid(const quantization_grid& a, const quantization_grid& b) noexcept {
  return a.scale == b.scale && a.zero_point == b.zero_point && a.qmin == b.qmin && a.qmax == b.qmax &&
         a.per_channel == b.per_channel && a.num_bits == b.num_bits;
}

XQ_DECL std::size_t quantized_by(const deploy_graph& g, value_id v) {
  for (std::size_t p = g.producer(v); p != no_index; p = g.producer(g.nodes[p].inputs[0])) {
    const graph_node& n = g.nodes[p];
    if (std::holds_alternative<op::quantize>(n.op)) return p;
    if (n.inputs.size() != 1 || !commutes_with_rounding(n.op)) return no_index;
  }
  return no_index;
}

namespace detail {

/// Whether integers on a grid pass op `o` and stay on it, for landing purposes: the ops
/// that commute with rounding, and relu6, a clamp to the landing grid's own q(0), q(6).
inline bool passes_rounding(const deploy_op& o) {
  if (commutes_with_rounding(o)) return true;
  const auto* a = std::get_if<op::activation>(&o);
  return a && a->f == op::activation::function::relu6;
}

/// A per-tensor integer grid an integer op can land on (not a low-bit format's: its scales
/// are each tensor's).
inline bool landable(const op::quantize& q) {
  return !q.grid.per_channel && q.grid.channels() == 1 && !is_binary(q.grid) && !q.format &&
         q.grid.element == grid_element::integer;
}

/// The quantize node every use of `v` reaches through ops that pass rounding (see the
/// header), or no_index.
inline std::size_t landing(const deploy_graph& g, value_id v) {
  std::vector<std::size_t> uses = g.consumers(v);
  while (uses.size() == 1 && !g.is_output(v) && passes_rounding(g.nodes[uses[0]].op)) {
    v = g.nodes[uses[0]].output;
    uses = g.consumers(v);
  }
  if (uses.empty() || g.is_output(v)) return no_index;
  std::size_t found = no_index;
  for (std::size_t u : uses) {
    const auto* q = std::get_if<op::quantize>(&g.nodes[u].op);
    if (!q || !landable(*q)) return no_index;
    if (found != no_index && !same_grid(std::get<op::quantize>(g.nodes[found].op).grid, q->grid)) return no_index;
    if (found == no_index) found = u;
  }
  return found;
}

}  // namespace detail

XQ_DECL void decide(deploy_graph& g) {
  g.decisions.assign(g.nodes.size(), node_decisions{});
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const graph_node& n = g.nodes[i];
    const auto* l = std::get_if<op::linear>(&n.op);
    if (!l || g.is_output(n.output)) continue;
    const std::vector<std::size_t> uses = g.consumers(n.output);
    if (uses.size() != 1) continue;
    const auto* bn = std::get_if<op::batch_norm>(&g.nodes[uses[0]].op);
    if (!bn) continue;
    g.decisions[i].absorbs = uses[0];
    g.decisions[uses[0]].absorbed_by = i;
    g.decisions[i].fold_cancels = bn->folded && !l->kernel.fold_divisor.empty();
  }
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (std::holds_alternative<op::quantize>(g.nodes[i].op) || std::holds_alternative<op::constant>(g.nodes[i].op))
      continue;
    const std::size_t absorbed = g.decisions[i].absorbs;
    const value_id out = absorbed != no_index ? g.nodes[absorbed].output : g.nodes[i].output;
    g.decisions[i].lands_on = detail::landing(g, out);
  }
}

}  // namespace xq::deploy
