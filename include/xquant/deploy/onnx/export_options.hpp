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

/// How the low-bit formats' kernels (blocked int4/int2 groups, FP8, MX, NVFP4) are stored.
enum class onnx_low_bit_form {
  /// What onnxruntime 1.32 runs (opset 21): int4 (int2 from opset 25) initializers and E2M1,
  /// FP6 and FP8 E4M3 elements as FLOAT8E4M3FN initializers (every E2M1 and FP6 value is
  /// exact in E4M3), each through a blocked DequantizeLinear with float32 scales (MX: the
  /// powers of two); NVFP4's UE4M3 block scales as a FLOAT8E4M3FN initializer dequantized by
  /// the float32 tensor scale.
  runtime,
  /// ONNX's own types (the spec form, opset 24): E2M1 elements as FLOAT4E2M1 (opset 23), MX's
  /// scales as FLOAT8E8M0 (opset 24). onnxruntime 1.32 cannot run it (NOT_IMPLEMENTED);
  /// ONNX's reference evaluator can.
  spec
};

struct export_options {
  onnx_weight_layout weight_layout = onnx_weight_layout::int8_weights;
  /// 0 (the default): 13 (per-axis QDQ), or 21 when an activation grid is wider than 8 bits
  /// (int16/uint16 QuantizeLinear) or a low-bit format is in the graph (blocked
  /// DequantizeLinear), 25 where a blocked kernel has 2-bit integers (INT2), 24 for the spec
  /// form. Or a fixed opset: 13, or 19 and later; from 21, kernels of <= 4 bits are stored as
  /// int4.
  std::int64_t opset = 0;
  /// The low-bit kernels' storage (see onnx_low_bit_form).
  onnx_low_bit_form low_bit_form = onnx_low_bit_form::runtime;
  /// Also output every quantized activation (the Q node's integers, after any Clip), named
  /// "q:<label>" with the quantization point's label ("block/conv input", "mix input 1
  /// (call 2)"): onnxruntime's integers can then be compared with the integer engine's and
  /// the simulation's point by point. Spatial ones are NCHW. Each quantized use of a weight
  /// tied between layers (whose integers QuantizeLinear makes in the file) too, named
  /// "q:<its kernel quantizer>", in the weight's own layout. A low-bit format's dynamic
  /// quantization point (scales computed from each tensor) exposes its values (float:
  /// element times scale) as "q:<label>" and the float tensor it rounded as
  /// "q:<label>/input"; a low-bit kernel its dequantized values in the ONNX layout as
  /// "q:<its kernel quantizer>".
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
