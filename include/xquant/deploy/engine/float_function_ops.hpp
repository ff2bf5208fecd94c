#pragma once
/// \file float_function_ops.hpp
/// The engine's float functions, for the layers that have no integer arithmetic of their
/// own: two ops computed by xquant's own float functions, so the engine gives the
/// simulation's floats bit for bit.
///
///  - `real_function_op`: pooling in float, the activations with no exact integer form,
///    add and multiply of inputs on different grids;
///  - `function_op`: a layer or function with arguments (layer normalization, GELU,
///    attention, a transposed convolution, the LSTM's and GRU's loops over time on their
///    projected inputs, ...). Its layout functions — zero padding, cropping, slicing,
///    nearest upsampling, transposition — only move elements (layout_ops.hpp's
///    move_elements), so on an integer input they move its centred integers and keep its
///    grid: a padded zero is the zero point, real 0, as the simulation pads.
///
/// The functions' calls record nothing: no tape, no node in a graph trace a caller has
/// active (detail/float_call_scope.hpp).
///
/// function_op's functions and their arguments (`ints`, `floats`, `tensors`):
///
/// | function                  | ints                              | floats  | tensors          |
/// |---------------------------|-----------------------------------|---------|------------------|
/// | zero_padding2d            | top, bottom, left, right          |         |                  |
/// | cropping2d                | top, bottom, left, right          |         |                  |
/// | slice                     | axis, begin, end                  |         |                  |
/// | upsampling2d              | size_h, size_w, bilinear (0 or 1) |         |                  |
/// | transpose                 | the permutation                   |         |                  |
/// | gelu                      | approximate (0 or 1)              |         |                  |
/// | layer_norm                | the normalized axes               | epsilon | gamma, beta      |
/// | broadcast_add, subtract, broadcast_multiply | —               |         |                  |
/// | matmul                    | transpose_a, transpose_b          |         |                  |
/// | attention_probabilities   | heads, causal (0 or 1)            |         |                  |
/// | attend                    | —                                 |         |                  |
/// | conv2d_transpose          | strides (2), dilation (2), same   |         | kernel, bias     |
/// | lstm_recurrence           | return_sequences, go_backwards    |         | recurrent kernel, bias |
/// | gru_recurrence            | the same, reset_after             |         | recurrent kernel, bias |
/// A tensor of size 0 is "none" (layer_norm without scale or offset, a transposed
/// convolution without bias). Axes are non-negative, of the batch-first tensor, and never
/// the batch axis (0).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/tensor.hpp"
#include "lowered_op.hpp"

namespace xq::deploy {

/// A float operation computed by xquant's own function (`xq::ops::<function>`) on real
/// tensors, so it gives the simulation's floats bit for bit: average pooling (the
/// simulation averages the dequantized values in float: an integer sum would round
/// differently; integer_average_pool_op is the integer-only choice), global average pooling, the activations with no exact integer form
/// (relu6 on reals, leaky_relu, sigmoid, tanh, swish, softmax), and add and multiply of
/// inputs on different grids (the simulation adds the dequantized floats). The next
/// quantizer downstream then rounds with the simulation's own quantizer. Its rule: real
/// inputs (add and multiply: one or more of one shape; the others one), rank 4 for pooling.
class real_function_op final : public lowered_op {
 public:
  /// "average_pool2d", "global_average_pool2d", "relu6", "leaky_relu", "sigmoid", "tanh",
  /// "swish", "softmax", "add", "multiply".
  std::string function;
  std::array<std::size_t, 2> pool{1, 1}, strides{1, 1};  ///< average_pool2d
  int padding = 0;                                       ///< average_pool2d: valid 0, same 1
  bool keepdims = false;                                 ///< global_average_pool2d
  float alpha = 0.3f;                                    ///< leaky_relu
  /// Whether `f` is one of the functions above.
  XQ_DECL static bool known(const std::string& f) noexcept;
  /// The functions above (each one an op kind).
  XQ_DECL static std::vector<std::string> functions();
  XQ_DECL const char* kind() const noexcept override;
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  /// Each function's name is its kind.
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

/// Whether function `f` with arguments `ints` only moves elements (see the file comment):
/// integers keep their grid through it, and rounding commutes with it.
XQ_DECL bool moves_elements(const std::string& f, const std::vector<std::int64_t>& ints) noexcept;

/// A layer or function computed by xquant's own float function with its arguments (the
/// table in the file comment). Its rule: the function's own — its input count, kinds and
/// shapes, its arguments against them (layout_shape for the layout functions).
class function_op final : public lowered_op {
 public:
  std::string function;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
  std::vector<tensor> tensors;

  /// Whether `f` is one of the functions above.
  XQ_DECL static bool known(const std::string& f) noexcept;
  /// The functions of the table (each one an op kind).
  XQ_DECL static std::vector<std::string> functions();
  /// Whether this op only moves elements (the layout functions; upsampling when nearest).
  XQ_DECL bool moves_only() const noexcept;
  /// Checks the arguments' counts and ranges (an op read from a file, before it runs);
  /// argument_error naming the path and function otherwise.
  XQ_DECL void validate() const;
  XQ_DECL const char* kind() const noexcept override;
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  /// Each function's name is its kind.
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
  /// A product's sum order follows BLAS's tiles, which follow the batch: GEMM functions
  /// compute the whole batch at once, as the simulation does.
  XQ_DECL bool batch_invariant() const noexcept override;
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/float_function_ops.ipp"
#endif
