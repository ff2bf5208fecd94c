#pragma once
/// \file lower.hpp
/// `xq::deploy::lower(model, sample_shape)`: a trained QAT model (or a binarized Larq
/// model, or a float one) as an `integer_model` (integer_model.hpp) that computes with the
/// integers the simulation used.
///
/// How: the model's deploy graph (graph/build_graph.hpp: one traced pass, each layer's
/// deploy form, the decisions made once) is read node by node, one translation per graph
/// op; nothing here looks at a layer:
///  - a conv2d / depthwise / dense whose input and kernel are fake-quantized becomes an
///    integer op: the kernel's integers are the kernel quantizer's own (the folded kernel
///    when a batch norm is folded in, computed with the simulation's arithmetic), the
///    input is quantized by the layer's input quantizer (or already on its grid);
///  - its output is requantized straight onto the grid of the next quantizer downstream,
///    through the ops that commute with a monotone rounding (ReLU, max pooling, flatten,
///    dropout): q(relu(y)) = relu(q(y)) and q(max(a, b)) = max(q(a), q(b)) exactly. A
///    batch norm it feeds alone (folded or not) is absorbed into the per-channel
///    multiplier and the int32 bias. Where no quantizer follows (the logits), the output
///    is float: acc * s_in * s_w + bias;
///  - relu6 on integers of the next grid is an integer clamp to [q(0), q(6)] (the next
///    quantizer's own rounding of 6); global max pooling is an integer max pool;
///  - average and global average pooling, leaky_relu, sigmoid, tanh, swish, softmax, add and
///    multiply compute in float with xquant's own functions on the dequantized values
///    (lower_options selects integer-only pooling and merges instead),
///    which are the simulation's fake-quantized floats: the next quantizer then rounds
///    the simulation's floats with the simulation's quantizer (measured: every element of
///    every layer identical, tests/deploy/test_integer_engine.cpp). A merge's inputs are
///    each quantized by their own QDQ site (NVIDIA's quantization_index);
///    concatenation copies integers when every input is on one grid, floats otherwise;
///  - an embedding is a gather of its kernel quantizer's int8 rows (a scale per row) or of
///    floats; a tied projection (x · tableᵀ) is an integer dense when its input and table
///    are quantized, else xq::ops::matmul_transposed on the table the simulation uses;
///  - zero padding, cropping, slicing, nearest upsampling and transposition move integers
///    and keep their grid (rounding commutes with them, so a conv before one lands on the
///    next quantizer's grid); layer norm, GELU, bilinear upsampling, attention, matmul,
///    broadcasting arithmetic and the transposed convolution (its kernel fake-quantized as
///    the simulation's) compute in float with xquant's own functions (function_op.hpp); a
///    value the forward code makes without the input (position indices) is a constant;
///  - Larq layers with sign quantizers on input and kernel become XNOR-popcount ops on
///    bit-packed ±1 values; a float-input layer with a binary kernel (a BNN's stem) stays a
///    float op with the ±1 kernel; batch norms between binary layers run in float with the
///    simulation's arithmetic, and the next sign packs their output into bits.
///  - a quantizer on a layer's output (tfmot's and PyTorch's placement) is the grid the
///    layer lands on: a conv or dense is requantized onto it (a relu after the conv whose
///    output it rounds counts as commuting, so the conv lands on the relu's grid and the
///    relu runs on integers), any other layer's output is quantized by it; a conv or dense
///    whose input is already on a grid and has no input quantizer of its own takes those
///    integers as they are.
/// Every place where the simulation quantizes becomes a `parity_point` (parity.hpp).
///
/// Errors name the layer path: a layer with no integer form, a per-channel grid on an
/// axis the integer op cannot use, a sum that could overflow int32, a multiplier that
/// TFLite's fixed point cannot represent.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/model_call.hpp"
#include "../core/tensor.hpp"
#include "graph/build_graph.hpp"
#include "graph/deploy_graph.hpp"
#include "integer_model.hpp"
#include "requantize.hpp"

namespace xq::deploy {

/// Where a requantized layer adds its bias.
enum class bias_precision {
  /// Rounded to int32 at the accumulator's scale s_in * s_w (TFLite, onnxruntime, the
  /// ONNX file's int32 bias + DequantizeLinear). The rounding moves each output by up to
  /// half an accumulator step, s_in * s_w / 2: a few outputs in 10^4 that sat within that
  /// distance of a rounding boundary land one step from the simulation's.
  int32,
  /// Added in float after scaling, as FBGEMM's float-bias path and TensorRT do: the
  /// simulation adds its bias in float too, and the lowered model then gives the
  /// simulation's integers (measured: every element of every layer on the tests' models).
  float32
};

/// How average pooling (and global average pooling) of a quantized input is lowered.
enum class average_pooling {
  /// The dequantized values averaged in float with xquant's own pooling, as the simulation
  /// computes them: the next quantizer then rounds the simulation's floats (bit-exact).
  simulated,
  /// Integer-only, as TFLite: the window's integers summed and divided by the count,
  /// rounded half away from zero, on the input's grid (integer_average_pool_op). The next
  /// quantizer then rounds an already rounded average, so its integers can move by a step
  /// (the parity report counts them). Measured on the tests' layer zoo
  /// (tests/deploy/test_integer_engine.cpp): 70% of the integers at the pools' successors'
  /// quantizers identical to the simulation's (the rest one step away), 50-80% further
  /// on (up to 4 steps away), 98.5% of predictions identical.
  integer
};

/// How add, multiply and concatenation of quantized inputs are lowered.
enum class merge_arithmetic {
  /// add and multiply in float on the dequantized values with xquant's own functions, as
  /// the simulation computes them, then the next quantizer rounds (bit-exact); a
  /// concatenation copies integers when its inputs share a grid, else floats.
  simulated,
  /// Integer-only, as TFLite and onnxruntime's QLinear ops, wherever every input is on an
  /// integer grid and one per-tensor quantizer follows the output (through ReLU, max
  /// pooling, flatten): integer_add_op, integer_multiply_op (two inputs), and a
  /// concatenation of inputs each rescaled onto that quantizer's grid (rescale_op). The
  /// output is rounded once, from the inputs' integers, by the model's requantization
  /// scheme; the simulation rounds the float sum, so an output can land one step away.
  /// Elsewhere, as simulated.
  integer
};

/// How a dense layer with a low-bit kernel multiplies (engine/low_bit_ops.hpp).
enum class low_bit_product {
  /// The block-scaled integer product of the kernel's and the input's codes where they fit
  /// it (per-token int8, FP4 blocks as the kernel's, a static int8 grid): exact int32 per
  /// block, the blocks added in float in the kernel's order; elsewhere `simulated`.
  integer,
  /// The float product of the decoded kernel and the quantized input: the simulation's bits.
  simulated
};

struct lower_options {
  requantization requant = requantization::float_multiplier;
  low_bit_product low_bit = low_bit_product::integer;
  bias_precision bias = bias_precision::int32;
  average_pooling average_pool = average_pooling::simulated;
  merge_arithmetic merge = merge_arithmetic::simulated;
  /// What the graph build allows (an uncalibrated model's placeholder ranges, names).
  graph_options graph;
};

/// A deploy graph (graph/build_graph.hpp) lowered to the engine's ops: what `lower` does
/// after building the model's graph.
XQ_DECL integer_model lower_graph(const deploy_graph& g, const lower_options& o = {});

namespace detail {

/// build_graph, then lower_graph.
XQ_DECL integer_model lower_model(const model_handle& m, const std::vector<std::vector<std::size_t>>& shapes,
                                  const lower_options& o);

}  // namespace detail

/// `model` lowered to integers for inputs of shape (N, sample_shape...). The model is
/// run once (inference mode, nothing recorded) and read, not changed; the integer model
/// owns copies of everything it needs.
template <class Model>
integer_model lower(Model& model, const std::vector<std::size_t>& sample_shape, const lower_options& o = {}) {
  return detail::lower_model(detail::handle_of(model), detail::one_input(sample_shape), o);
}

/// The same for a model of any number of inputs, with their shapes as `xq::build` takes them
/// (batch axis first).
template <class Model>
integer_model lower(Model& model, const input_shapes& shapes, const lower_options& o = {}) {
  return detail::lower_model(detail::handle_of(model), detail::checked_shapes(shapes, "xq::deploy::lower"), o);
}

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/lower.ipp"
#endif
