#pragma once
/// \file graph_ops.hpp
/// The operations of the deploy graph (deploy_graph.hpp), each a struct of typed
/// attributes in `xq::deploy::op`, and `deploy_op`, the variant a node holds.
///
/// This is the instruction set every layer deploys as: a built-in or a user's layer
/// describes one call of itself as one of these ops or a composition of them
/// (layer_builder.hpp), and the two back-ends — the integer engine's lowering and the ONNX
/// exporter — each have one translation per op, checked by the compiler (`std::visit` over
/// `deploy_op` fails to compile where a back-end misses one). Adding an op is adding a
/// struct here and its translation in each back-end; adding a layer adds nothing here.
///
/// Semantics are xquant's, in float, on batch-first tensors (NHWC for images), exactly as
/// the simulation computes them: a back-end that computes otherwise says so. Weights are
/// `weight_use`s: a weight of the graph (one per parameter, a tied one once) as a use
/// sees it, quantized or not.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "../../config.hpp"
#include "../../core/tensor.hpp"
#include "../../kernels/padding.hpp"
#include "../../quantizers/low_bit_format.hpp"
#include "../../quantizers/quantization_grid.hpp"

namespace xq::deploy {

/// Index of a value (a tensor) in a deploy graph.
using value_id = std::size_t;
/// "No value / no weight".
inline constexpr std::size_t no_index = std::numeric_limits<std::size_t>::max();

/// A tensor rounded onto a grid: the integers the simulation computed, and the grid they
/// are on (real = (q - zero_point) * scale, per tensor, channel or block). What a quantized
/// weight is in the graph, whatever quantizer made it.
struct quantized_tensor {
  quantization_grid grid;
  std::vector<std::int32_t> integers;  ///< in the tensor's own layout
  std::string quantizer;               ///< the path of the quantizer that made it
  std::string description;             ///< that quantizer's describe(): for files' metadata
  tensor dequantized;                  ///< the simulation's fake-quantized values
};

/// A weight as one use of it sees it: which weight of the graph, and, where the use's
/// kernel quantizer is on, the integers it rounds it to. A tied weight is one graph weight
/// with a use per layer, each with its own quantizer.
struct weight_use {
  std::size_t weight = no_index;  ///< index into deploy_graph::weights (no_index: none)
  bool quantized = false;
  quantized_tensor q;             ///< with `quantized`
  /// A batch norm folded into the kernel (batch_norm_folding.hpp): the simulation divides
  /// the quantized kernel's output channels by this before use (empty: no fold).
  std::vector<float> fold_divisor;

  bool present() const noexcept { return weight != no_index; }
};

namespace op {

/// A 2-D window at the traced input size: the layer's padding rule resolved to explicit
/// pads (kernels/padding.hpp's rules; top, left, bottom, right: ONNX's `pads` order).
struct window {
  std::array<std::size_t, 2> size{1, 1}, strides{1, 1}, dilation{1, 1};
  std::array<std::size_t, 4> pads{0, 0, 0, 0};
  xq::padding padding = xq::padding::valid;
};

}  // namespace op

/// The window of `size`, `strides`, `dilation` and `padding` over an NHWC input of shape `s`.
XQ_DECL op::window window_over(const std::vector<std::size_t>& s, std::array<std::size_t, 2> size,
                               std::array<std::size_t, 2> strides, std::array<std::size_t, 2> dilation, xq::padding p);

namespace op {

/// Where the simulation fake-quantizes a tensor: the value after it is the quantizer's
/// output, reals on `grid`. A Larq sign is one too (a binary grid).
struct quantize {
  quantization_grid grid;
  std::string quantizer;    ///< the quantizer's path
  std::string description;  ///< its describe()
  std::string label;        ///< "block/conv input", "block/conv output", "mix input 1 (call 2)"
  std::string layer;        ///< the layer whose input or output it rounds
  std::size_t call = 0;     ///< which call of that layer
  std::size_t input = 0;    ///< which input (when not `output`)
  bool output = false;      ///< the layer's output (tfmot's and PyTorch's placement)
  /// A low-bit format whose scales follow each tensor (quantizer_base::dynamic_format):
  /// `grid` is then the traced tensor's, and a back-end computes each tensor's scales with
  /// the format (per token, per block), as the simulation does. None: `grid` is fixed.
  low_bit_format format;
};

/// conv2d, depthwise_conv2d, dense: y = x ⊛ kernel + bias (Keras layouts: HWIO, HW·C·M,
/// (in, out); with `transposed` a dense x · kernelᵀ on a (out, in) table: a tied
/// projection). Inputs: x.
struct linear {
  enum class form { conv2d, depthwise_conv2d, dense };
  form shape = form::dense;
  bool transposed = false;
  op::window geometry;  ///< conv forms
  std::size_t depth_multiplier = 1;
  weight_use kernel, bias;
  /// The value a same-padded border holds (Larq's pad_values on a ±1 input; 0 otherwise).
  float pad_value = 0.0f;
  /// The output channel count.
  XQ_DECL std::size_t out_channels(const tensor::shape_type& kernel_shape) const;
};

/// Max or average pooling over a window, or over the whole image (global). Average
/// pooling divides by the cells inside the image (Keras, ONNX's count_include_pad 0).
struct pool {
  enum class kind { max, average };
  kind what = kind::max;
  bool global = false;
  bool keepdims = false;  ///< global: (N, 1, 1, C) rather than (N, C)
  op::window geometry;    ///< not global
};

/// A batch norm at inference, as xq::batch_norm computes it: (x - mean) * scale + offset
/// per channel (the last axis), scale = gamma * float(1 / sqrt(double(variance) + eps)).
struct batch_norm {
  std::vector<float> mean, scale, offset;
  /// Folded into the linear op before it (quantize_model's fold_batch_norm): its
  /// statistics are frozen into that op's kernel divisor and bias.
  bool folded = false;
};

/// An elementwise function of one input.
struct activation {
  enum class function { relu, relu6, leaky_relu, sigmoid, tanh, swish, softmax, gelu, gelu_tanh };
  function f = function::relu;
  float alpha = 0.3f;  ///< leaky_relu
};

/// add / multiply / subtract of same-shape or broadcasting inputs (numpy's rules; add
/// and multiply take any count), or a concatenation along `axis` (non-negative).
struct merge {
  enum class kind { add, multiply, subtract, concatenate };
  kind what = kind::add;
  bool broadcast = false;  ///< shapes may differ (xq::ops::broadcast_add, ...)
  std::size_t axis = 0;    ///< concatenate
};

/// The same elements in another shape (flatten, reshape): the target without the batch axis.
struct reshape {
  std::vector<std::size_t> target;
};

/// Zeros around the image: {top, bottom, left, right} rows and columns (NHWC).
struct pad {
  std::array<std::size_t, 4> margins{0, 0, 0, 0};
};

/// Elements begin..end of each of `axes` (non-negative axes of the batch-first tensor).
struct slice {
  std::vector<std::size_t> axes, begins, ends;
};

/// Upsampling of an NHWC image by whole factors: nearest (Keras's repeat) or bilinear
/// (tf.image.resize's half-pixel centres).
struct upsample {
  std::array<std::size_t, 2> factors{2, 2};
  bool bilinear = false;
};

/// Axes permuted (the batch axis included).
struct transpose {
  std::vector<std::size_t> permutation;
};

/// A table lookup: rows of `table` at the (integer-valued, float) ids. Inputs: ids.
struct gather {
  weight_use table;
};

/// (x - mean) / sqrt(variance + epsilon) * gamma + beta over `axes` (biased variance).
struct layer_norm {
  std::vector<std::size_t> axes;
  float epsilon = 1e-3f;
  weight_use gamma, beta;  ///< either may be absent
};

/// Batched matrix product a · b, either operand transposed on its last two axes.
struct matmul {
  bool transpose_a = false, transpose_b = false;
};

/// Keras MultiHeadAttention's scores: softmax(q kᵀ / sqrt(d)) per head, masked (a causal
/// mask and/or a mask input: zeros drop); inputs q, k [, mask].
struct attention_probabilities {
  std::size_t heads = 1;
  bool causal = false;
};

/// Probabilities (B, H, Tq, Tk) times the values (B, Tk, H·V), heads merged: (B, Tq, H·V).
struct attend {};

/// Keras Conv2DTranspose (kernel (KH, KW, F, C)), the adjoint of the convolution with the
/// same geometry; its output size is the traced one.
struct conv_transpose {
  std::array<std::size_t, 2> size{1, 1}, strides{1, 1}, dilation{1, 1};
  xq::padding padding = xq::padding::valid;
  weight_use kernel, bias;
};

/// The loop over time of Keras's LSTM or GRU on its projected inputs (B, T, G·u): the
/// recurrent kernel (u, G·u), the bias, as xquant's recurrence computes it.
struct recurrence {
  enum class cell { lstm, gru };
  cell kind = cell::lstm;
  bool return_sequences = false, go_backwards = false, reset_after = true;
  weight_use recurrent_kernel, bias;
};

/// FlowNet's / PWC-Net's 1x1 correlation (layers/correlation.hpp): for each displacement
/// (dy, dx) in [-d, d]², the mean over channels of a · shift(b, dy, dx), zero outside;
/// output channel (dy + d)(2d + 1) + (dx + d). Inputs: a, b.
struct correlation {
  std::size_t max_displacement = 4;
};

/// A value the forward code made without the model's input (position indices): fixed.
struct constant {
  tensor value = tensor::from_shape({0});
};

}  // namespace op

/// What a node computes: one op with its attributes.
using deploy_op = std::variant<op::quantize, op::linear, op::pool, op::batch_norm, op::activation, op::merge,
                               op::reshape, op::pad, op::slice, op::upsample, op::transpose, op::gather,
                               op::layer_norm, op::matmul, op::attention_probabilities, op::attend,
                               op::conv_transpose, op::recurrence, op::correlation, op::constant>;

/// The op's name ("quantize", "linear", ...), for messages and summaries.
XQ_DECL const char* op_name(const deploy_op& o) noexcept;

/// "relu", "relu6", ..., and the function for a name (argument_error for another).
XQ_DECL const char* to_string(op::activation::function f) noexcept;

/// Whether an op only moves or selects elements, or is monotone and keeps 0 and its grid
/// (relu, max pooling, reshape, padding with zeros, slicing, nearest upsampling,
/// transposition): a monotone rounding commutes with it, q(f(x)) = f(q(x)), so integers
/// pass through it on their grid and a quantizer after it rounds what came before it.
/// relu6 commutes as a clamp to the grid's own q(0), q(6); a concatenation of inputs on
/// one grid too, decided where the grids are known.
XQ_DECL bool commutes_with_rounding(const deploy_op& o) noexcept;

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/graph_ops.ipp"
#endif
