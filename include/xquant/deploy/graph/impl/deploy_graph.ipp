#pragma once
/// \file deploy_graph.ipp
/// The deploy graph's container (deploy/graph/deploy_graph.hpp).

#include <sstream>
#include <stdexcept>
#include <string>

#include "../../../core/error.hpp"
#include "../deploy_graph.hpp"

namespace xq::deploy {

XQ_DECL value_id deploy_graph::add_value(std::vector<std::size_t> shape, std::string name) {
  values.push_back(graph_value{std::move(shape), std::move(name)});
  return values.size() - 1;
}

XQ_DECL value_id deploy_graph::add_node(deploy_op op, std::vector<value_id> in, std::vector<std::size_t> shape,
                                        std::string layer, std::string type, std::size_t call) {
  const value_id out = add_value(std::move(shape), layer);
  graph_node n;
  n.op = std::move(op);
  n.inputs = std::move(in);
  n.output = out;
  n.layer = std::move(layer);
  n.type = std::move(type);
  n.call = call;
  nodes.push_back(std::move(n));
  return out;
}

XQ_DECL std::size_t deploy_graph::producer(value_id v) const {
  if (indexed_nodes_ != nodes.size() || producer_.size() != values.size()) {
    producer_.assign(values.size(), no_index);
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].output < producer_.size()) producer_[nodes[i].output] = i;
    indexed_nodes_ = nodes.size();
  }
  return v < producer_.size() ? producer_[v] : no_index;
}

XQ_DECL std::vector<std::size_t> deploy_graph::consumers(value_id v) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (value_id in : nodes[i].inputs)
      if (in == v) out.push_back(i);
  return out;
}

XQ_DECL bool deploy_graph::is_output(value_id v) const noexcept {
  for (value_id o : outputs)
    if (o == v) return true;
  return false;
}

XQ_DECL std::string deploy_graph::summary() const {
  std::ostringstream s;
  auto shape = [](const std::vector<std::size_t>& d) {
    std::string t = "(";
    for (std::size_t i = 0; i < d.size(); ++i) t += (i ? ", " : "") + std::to_string(d[i]);
    return t + ")";
  };
  for (std::size_t k = 0; k < inputs.size(); ++k)
    s << "input " << (k < input_names.size() ? input_names[k] : std::to_string(k)) << " -> " << inputs[k] << ' '
      << shape(values[inputs[k]].shape) << '\n';
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const graph_node& n = nodes[i];
    s << i << ' ' << op_name(n.op) << ' ' << n.layer << " (" << n.type << ") [";
    for (std::size_t k = 0; k < n.inputs.size(); ++k) s << (k ? " " : "") << n.inputs[k];
    s << "] -> " << n.output << ' ' << shape(values[n.output].shape);
    if (const auto* q = std::get_if<op::quantize>(&n.op)) s << ' ' << describe(q->grid);
    if (i < decisions.size()) {
      const node_decisions& d = decisions[i];
      if (d.absorbs != no_index) s << " absorbs " << d.absorbs << (d.fold_cancels ? " (fold)" : "");
      if (d.absorbed_by != no_index) s << " absorbed by " << d.absorbed_by;
      if (d.lands_on != no_index) s << " lands on " << d.lands_on;
    }
    s << '\n';
  }
  for (std::size_t k = 0; k < outputs.size(); ++k)
    s << "output " << (k < output_names.size() ? output_names[k] : std::to_string(k)) << " <- " << outputs[k] << '\n';
  return s.str();
}

XQ_DECL void deploy_graph::validate() const {
  std::vector<bool> made(values.size(), false);
  auto fail = [](const std::string& what) { throw std::logic_error("xquant: deploy graph: " + what); };
  for (value_id v : inputs) {
    if (v >= values.size()) fail("an input out of range");
    made[v] = true;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const graph_node& n = nodes[i];
    for (value_id v : n.inputs)
      if (v >= values.size() || !made[v])
        fail("node " + std::to_string(i) + " (" + n.layer + ") reads a value no earlier node makes");
    if (n.output >= values.size() || made[n.output]) fail("node " + std::to_string(i) + " writes a value twice");
    made[n.output] = true;
  }
  for (value_id v : outputs)
    if (v >= values.size() || !made[v]) fail("an output no node makes");
}

}  // namespace xq::deploy
