#pragma once
/// \file export_onnx.hpp
/// `xq::deploy::export_onnx(model, sample_shape)`: a model as an ONNX QDQ file that a runtime
/// (onnxruntime, TensorRT) executes, computing what the simulation computed.
///
/// The walk is lowering's (lower.hpp): one traced inference pass and the layer table. Each
/// call becomes ONNX nodes, each fake quantizer that is on a QuantizeLinear →
/// DequantizeLinear pair with its grid (quantization_grid.hpp):
///  - inputs of conv / depthwise / dense (and of any layer whose input QDQ is on), and the
///    output of any layer whose output QDQ is on (tfmot's and PyTorch's placement): Q → DQ,
///    per tensor, int8 (or uint8 with a zero point for tfmot's asymmetric grids); a grid
///    narrower than its type (narrow range, < 8 bits) adds a Clip after Q, as Brevitas does,
///    because Q saturates to the whole type. A grid of 9 to 16 bits is int16/uint16, which
///    QuantizeLinear has from opset 21 (chosen then by default), and its narrowing Clip is on
///    the float before Q (onnxruntime has no int16 Clip; same integers);
///  - kernels, by `weight_layout`: `int8_weights` (the default) stores the integers the
///    simulation used (its kernel quantizer's, on the folded kernel when a batch norm is
///    folded) and a DequantizeLinear with the per-channel scales, so no runtime re-rounds a
///    weight; `float_qdq` stores float weights + QuantizeLinear + DequantizeLinear with zero
///    point 0, NVIDIA/TensorRT's layout. With opset 21, kernels of at most 4 bits are int4. A
///    uint8 kernel grid (tfmot's FakeQuant kernels, [1, 255] around a nudged zero point) is
///    stored as int8 with its integers and zero points shifted by -128 together: the same
///    reals out of DequantizeLinear;
///  - a folded batch norm is folded into the conv's bias (frozen statistics); the bias is an
///    int32 tensor + DequantizeLinear at scale s_in * s_w (what onnxruntime fuses into
///    QLinearConv / QGemm), or float in the float_qdq layout; an unfolded batch norm is a
///    BatchNormalization node;
///  - Larq's binary layers use standard operators: sign as GreaterOrEqual + Where (sign(0)
///    = +1), the ±1 kernel as int8 + DequantizeLinear (scale 1), "same" padding with +1
///    as a Pad node, so any runtime runs them;
///  - a layer called twice is nodes twice over one set of initializers; a weight tied
///    between layers (an embedding and its tied_projection, a tied_dense) is ONE float
///    initializer, each quantized use with its own QuantizeLinear → DequantizeLinear;
///  - average_pool2d → AveragePool (count_include_pad 0: TF's same padding), global pools →
///    GlobalAveragePool / GlobalMaxPool (+ Flatten), relu6 → Clip(0, 6), leaky_relu →
///    LeakyRelu, swish → x · Sigmoid(x), softmax → Softmax over the NHWC channels,
///    add / multiply / concatenate → Add / Mul / Concat with a QDQ per quantized input,
///    embedding → Gather at Cast(ids, int64), tied_projection → Gemm(transB = 1);
///  - the layers of issue 16 in standard operators of opset 13 (function_op.hpp lists them):
///    zero_padding2d → Pad (constant 0), cropping2d and slice → Slice, upsampling2d →
///    Resize (nearest: `asymmetric` + `floor`, Keras's repeat; bilinear: `half_pixel`,
///    tf.image.resize's), transpose → Transpose, conv2d_transpose → ConvTranspose (the
///    adjoint's pads, output_padding to Keras's size, its kernel's integers +
///    DequantizeLinear), gelu → Erf or Tanh in TF's order of operations, layer_norm →
///    ReduceMean / Sub / Mul / Sqrt / Div, broadcasting add / subtract / multiply → Add /
///    Sub / Mul, matmul → MatMul (a Transpose for a transposed operand), attention_scores →
///    Reshape / Transpose / MatMul, Keras's -1e9 for masked scores, Softmax, and ops::attend
///    → MatMul and the heads merged back, the LSTM's and GRU's loops → LSTM / GRU over
///    their dense projections' outputs (ONNX's gate order, GRU's reset_after as
///    linear_before_reset, go_backwards as `reverse` with its outputs reversed back); a
///    value the forward code makes without the input
///    (position indices) is an initializer (model_access.hpp's constant_values). The
///    correlation has no ONNX operator: the error says so.
/// The graph takes and returns NHWC tensors like xquant (a Transpose to and from ONNX's
/// NCHW around the spatial part; a flatten after a conv transposes back first, so the
/// features come in xquant's order). The model's metadata records the numerics of every
/// quantizer and how the file's rounding relates to training's.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "../config.hpp"
#include "layer_info.hpp"
#include "lower.hpp"
#include "model_access.hpp"
#include "onnx_model.hpp"

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
  /// "q:<layer path> input": onnxruntime's integers can then be compared with the integer
  /// engine's and the simulation's layer by layer. Spatial ones are NCHW.
  bool expose_quantized = false;
  /// A layer called more than once (a shared feature extractor) keeps one copy of its
  /// kernel and bias initializers, used by each call site's nodes — the model as written.
  /// Off: each call site gets its own copies. onnxruntime 1.32's QDQ fusion
  /// (ORT_ENABLE_ALL) cannot load a quantized kernel shared by two Conv nodes ("Attempt
  /// to replace the existing tensor"); its reference path can. Measured; see the tests.
  bool share_reused_weights = true;
  std::string input_name = "input";
  std::string output_name = "output";
};

namespace detail {
/// The compiled part of export_onnx (export_onnx.ipp): the passes, then the trace's nodes.
XQ_DECL onnx::model export_model(const model_access& m, const std::vector<std::size_t>& sample_shape,
                                 const export_options& o);
XQ_DECL onnx::model export_trace(const graph_trace& trace, const layer_table& table, const variable_state* input,
                                 const variable_state* output, const std::vector<std::size_t>& sample_shape,
                                 const export_options& o, const std::set<const variable_state*>& constants = {});
}  // namespace detail

/// `model` as an ONNX model for inputs of shape (N, sample_shape...) (see the file comment).
template <class Model>
onnx::model export_onnx(Model& model, const std::vector<std::size_t>& sample_shape, const export_options& o = {}) {
  return detail::export_model(detail::access(model), sample_shape, o);
}

/// The same, written to `path` atomically (onnx::save).
template <class Model>
void export_onnx(Model& model, const std::vector<std::size_t>& sample_shape, const std::string& path,
                 const export_options& o = {}) {
  onnx::save(export_onnx(model, sample_shape, o), path);
}

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/export_onnx.ipp"
#endif
