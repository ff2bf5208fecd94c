#pragma once
/// \file deploy_graph.hpp
/// `xq::deploy::deploy_graph`: a model as deployment sees it, built once from one traced
/// forward pass (build_graph.hpp) and read by both back-ends — the integer engine's
/// lowering (lower.hpp) and the ONNX exporter (export_onnx.hpp), neither of which looks at
/// a layer, a tape or a quantizer object.
///
///  - values: the tensors of the pass, each with its traced shape (batch first);
///  - nodes: one op (graph_ops.hpp) each, in the order the forward code ran, with their
///    inputs and output; a layer called twice is nodes twice, a layer described as a
///    composition is several nodes, a dropout at inference none;
///  - weights: one per parameter (a weight tied between an embedding and its projection is
///    ONE weight), or per tensor derived from parameters (a folded kernel); ops use them
///    through `weight_use`s that carry each use's own quantization;
///  - inputs and outputs: any number of each, in the model's order;
///  - quantization points: `op::quantize` nodes, each carrying a quantization grid
///    (per tensor, channel or block; integer, binary or float elements; quantizers/
///    quantization_grid.hpp) and the name of the quantizer, the layer and the call site.
///
/// The decisions both back-ends need are made here, once, and recorded on the graph
/// (graph_decisions.hpp): which batch norm a linear op absorbs and whether its fold
/// cancels, which quantization point an op's output lands on through ops that commute with
/// rounding.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/tensor.hpp"
#include "graph_ops.hpp"

namespace xq::deploy {

/// A tensor of the graph.
struct graph_value {
  std::vector<std::size_t> shape;  ///< as traced, batch first
  std::string name;                ///< for messages: "block/conv", "input", "xq::ops::relu"
};

/// A weight the graph holds (an initializer in ONNX's words).
struct graph_weight {
  std::string name;           ///< the parameter's name ("block/conv/kernel")
  tensor value;               ///< float32, in the layer's own layout
  const void* source = nullptr;  ///< the parameter it is (one graph weight per parameter), or null
  std::vector<std::string> layers;  ///< the layers that use it (two or more: a tied weight)

  bool tied() const noexcept { return layers.size() > 1; }
};

/// One node: an op applied to values.
struct graph_node {
  deploy_op op;
  std::vector<value_id> inputs;
  value_id output = no_index;
  std::string layer;        ///< the layer path ("block/conv"), or "xq::ops::relu" for a function
  std::string type;         ///< the layer's type ("conv2d") or the function's name
  std::size_t call = 0;     ///< which call of that layer (0: the first)
};

/// Decisions recorded on a node by the graph's decisions pass (graph_decisions.hpp).
struct node_decisions {
  /// A linear op: the batch norm node it absorbs (its only use; no quantization point
  /// between), or no_index.
  std::size_t absorbs = no_index;
  /// A batch norm absorbed by the linear node `absorbed_by` (its value is that node's).
  std::size_t absorbed_by = no_index;
  /// The absorbed batch norm is the one folded into the kernel: the kernel's fold divisor
  /// and the batch norm's scale are the same statistics, so the deployed kernel is the
  /// quantized folded kernel itself and the bias is the folded bias.
  bool fold_cancels = false;
  /// The quantization point (a quantize node) every use of this node's output reaches
  /// through ops that commute with rounding, with no use reaching another: the grid an
  /// integer op producing this output may land on directly. no_index: none.
  std::size_t lands_on = no_index;
};

class deploy_graph {
 public:
  std::vector<graph_value> values;
  std::vector<graph_node> nodes;
  std::vector<graph_weight> weights;
  std::vector<value_id> inputs, outputs;
  std::vector<std::string> input_names, output_names;
  std::vector<node_decisions> decisions;  ///< one per node, after decide()

  /// A new value; returns its id.
  XQ_DECL value_id add_value(std::vector<std::size_t> shape, std::string name);
  /// Appends a node (its output a new value of `shape`); returns the output's id.
  XQ_DECL value_id add_node(deploy_op op, std::vector<value_id> inputs, std::vector<std::size_t> shape,
                            std::string layer, std::string type, std::size_t call);

  /// The node that computes value `v`, or no_index (an input, or a weight).
  XQ_DECL std::size_t producer(value_id v) const;
  /// The nodes that read value `v`, once per input slot, in order.
  XQ_DECL std::vector<std::size_t> consumers(value_id v) const;
  /// Whether `v` is one of the graph's outputs.
  XQ_DECL bool is_output(value_id v) const noexcept;

  /// One line per node: "12 linear block/conv (conv2d) [3] -> 12 (1, 14, 14, 8)".
  XQ_DECL std::string summary() const;

  /// Checks the graph is well formed (every input of a node is a graph input or made by an
  /// earlier node, weights in range, outputs made); logic_error otherwise.
  XQ_DECL void validate() const;

 private:
  mutable std::vector<std::size_t> producer_;  ///< cache: node per value (rebuilt on demand)
  mutable std::size_t indexed_nodes_ = 0;
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/deploy_graph.ipp"
#endif
