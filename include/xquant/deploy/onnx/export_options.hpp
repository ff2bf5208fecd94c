#pragma once
/// \file export_options.hpp
/// What the ONNX exporter (export_graph.hpp, export_onnx.hpp) writes: the kernels' layout,
/// the opset, the exposed integers, weight sharing and the names of the graph's inputs and
/// outputs; and what the deploy-graph build under it checks (graph_options).

#include <cstdint>
#include <string>
#include <vector>

#include "../graph/graph_options.hpp"

namespace xq::deploy {

enum class onnx_weight_layout {
  int8_weights,  ///< the simulation's integers + DequantizeLinear (Brevitas' default)
  float_qdq      ///< float weights + QuantizeLinear + DequantizeLinear, zero point 0 (NVIDIA's toolkit)
};

struct export_options {
  onnx_weight_layout weight_layout = onnx_weight_layout::int8_weights;
  /// 0 (the default): 13 (per-axis QDQ), or 21 when an activation grid is wider than 8 bits
  /// (int16/uint16 QuantizeLinear). Or a fixed opset: 13, or 19 and later; from 21, kernels
  /// of <= 4 bits are stored as int4.
  std::int64_t opset = 0;
  /// Also output every quantized activation (the Q node's integers, after any Clip), named
  /// "q:<label>" with the quantization point's label ("block/conv input", "mix input 1
  /// (call 2)"): onnxruntime's integers can then be compared with the integer engine's and
  /// the simulation's point by point. Spatial ones are NCHW. Each quantized use of a weight
  /// tied between layers (whose integers QuantizeLinear makes in the file) too, named
  /// "q:<its kernel quantizer>", in the weight's own layout.
  bool expose_quantized = false;
  /// A layer called more than once (a shared feature extractor) keeps one copy of its
  /// kernel and bias initializers, used by each call site's nodes — the model as written;
  /// a weight tied between layers is one initializer. Off: each call site gets its own
  /// copies. onnxruntime 1.32's QDQ fusion (ORT_ENABLE_ALL) cannot load a quantized kernel
  /// shared by two Conv nodes ("Attempt to replace the existing tensor"); its reference
  /// path can. Measured; see the tests.
  bool share_reused_weights = true;
  /// The name of a model's one input and one output (the first, of several).
  std::string input_name = "input";
  std::string output_name = "output";
  /// Names of several inputs / outputs, one each in the model's order. Empty: input_name /
  /// output_name for the first, "input_1", "output_1", ... for the others.
  std::vector<std::string> input_names, output_names;
  /// What the deploy-graph build checks and allows (graph_options::allow_uncalibrated); its
  /// names are taken from the fields above.
  graph_options graph;
};

}  // namespace xq::deploy
