#pragma once
/// \file export_graph.hpp
/// `xq::deploy::export_graph(graph, options)`: a deploy graph (deploy/graph/deploy_graph.hpp)
/// as an ONNX model that a runtime (onnxruntime, TensorRT) executes, computing what the
/// simulation computed. It reads the graph only: no layer, quantizer or tape, and nothing of
/// the integer engine. One translation per graph op (a `std::visit` over `deploy_op`, so an
/// op without one fails to compile); every decision is the graph's:
///
///  - a quantization point (`op::quantize`) is QuantizeLinear → DequantizeLinear with its
///    grid, per tensor, int8 (or uint8 with a zero point for tfmot's asymmetric grids); a
///    grid narrower than its type (narrow range, < 8 bits) adds a Clip after Q, as Brevitas
///    does, because Q saturates to the whole type. A grid of 9 to 16 bits is int16/uint16,
///    which QuantizeLinear has from opset 21 (chosen then by default), and its narrowing Clip
///    is on the float before Q (onnxruntime has no int16 Clip; same integers). A binary
///    grid (Larq's sign) is GreaterOrEqual + Where (sign(0) = +1). With `expose_quantized`
///    the integers are also an output "q:<label>";
///  - kernels are the graph's `weight_use`s, by `weight_layout`: `int8_weights` (the
///    default) stores the integers the simulation used (on the folded kernel when a batch
///    norm is folded) and a DequantizeLinear with the per-channel scales, so no runtime
///    re-rounds a weight; `float_qdq` stores float weights + QuantizeLinear + DequantizeLinear
///    with zero point 0, NVIDIA/TensorRT's layout. With opset 21, kernels of at most 4 bits
///    are int4. A uint8 kernel grid (tfmot's FakeQuant kernels, [1, 255] around a nudged zero
///    point) is stored as int8 with its integers and zero points shifted by -128 together:
///    the same reals out of DequantizeLinear. Larq's ±1 kernels are int8 + DequantizeLinear;
///  - a low-bit format's kernel (a blocked grid, or FP8/FP6/FP4 elements: torchao's int4/int2
///    groups, FP8 per row, MX, NVFP4) is its elements + a blocked DequantizeLinear along the
///    ONNX layout's image of the grid's axis (opset 21), in the form onnxruntime runs (INT4,
///    INT2 from opset 25; E2M1/FP6/E4M3 as FLOAT8E4M3FN; float32 scales; NVFP4's block scales
///    FLOAT8E4M3FN dequantized by its tensor scale) or ONNX's own (`low_bit_form`: FLOAT4E2M1,
///    FLOAT8E8M0 scales); a dynamic point (scales from each tensor) is the operators that
///    compute the format in the simulation's order (impl/onnx_low_bit.ipp says how);
///  - a batch norm that a linear op absorbs with its fold cancelling (graph_decisions.hpp)
///    goes into the bias: an int32 tensor + DequantizeLinear at scale s_in * s_w when the
///    op's input is a quantization point and its kernel quantized (what onnxruntime fuses
///    into QLinearConv / QGemm), else float; every other batch norm is Sub / Mul / Add in
///    xquant's arithmetic, (x - mean) * scale + offset;
///  - a weight tied between layers (`graph_weight::tied()`: an embedding and its
///    tied_projection) is ONE float initializer, each quantized use with its own
///    QuantizeLinear → Clip → DequantizeLinear: the Clip keeps Q's integers on the use's
///    narrow grid, where the simulation clips (Q alone saturates to -128); a layer called
///    twice shares its initializers (`share_reused_weights`), each call with its own nodes;
///  - the correlation (cost volume) in standard operators: the second map padded by d,
///    one Slice per displacement in (dy, dx) order, stacked, times the first map, summed
///    over channels (ReduceSum) and multiplied by 1/C, xquant's order of operations;
///  - the other ops as standard operators of opset 13: pools (count_include_pad 0: TF's
///    same padding), activations (relu6 Clip(0, 6), swish x · Sigmoid(x), softmax over the
///    NHWC channels, GELU as Erf or Tanh in TF's order), merges (Add / Mul / Sub / Concat),
///    Pad, Slice, Resize (nearest: asymmetric + floor, Keras's repeat; bilinear:
///    half_pixel), Transpose, ConvTranspose (output_padding to Keras's size), Gather at
///    Cast(ids, int64), layer norm as ReduceMean / Sub / Mul / Sqrt / Div, MatMul, attention
///    as Reshape / Transpose / MatMul / Softmax with Keras's -1e9 for masked scores, the
///    LSTM's and GRU's loops as LSTM / GRU (ONNX's gate order, reset_after as
///    linear_before_reset, go_backwards as `reverse` with its outputs reversed back);
///    constants are initializers.
/// The graph takes and returns NHWC tensors like xquant (a Transpose to and from ONNX's
/// NCHW around the spatial part; a flatten after a conv transposes back first, so the
/// features come in xquant's order). The metadata records every quantizer's numerics and
/// how the file's rounding relates to training's.

#include "../../config.hpp"
#include "../graph/deploy_graph.hpp"
#include "export_options.hpp"
#include "onnx_model.hpp"

namespace xq::deploy {

/// `g` as an ONNX model (see the file comment). argument_error, naming the layer, for what
/// ONNX cannot hold (an opset below 13, a 16-bit grid at opset 13, a per-channel activation
/// grid, an asymmetric kernel in the float_qdq layout).
XQ_DECL onnx::model export_graph(const deploy_graph& g, const export_options& o = {});

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/export_graph.ipp"
#include "impl/onnx_weights.ipp"
#include "impl/onnx_low_bit.ipp"
#endif
