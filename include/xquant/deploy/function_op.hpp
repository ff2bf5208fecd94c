#pragma once
/// \file function_op.hpp
/// Two of the integer engine's operations (integer_model.hpp) for the layers that have no
/// integer arithmetic of their own:
///
///  - `function_op`: a layer or function computed by xquant's own float function with
///    its arguments, so the engine gives the simulation's floats bit for bit (layer
///    normalization, GELU, attention, a transposed convolution, the LSTM's and GRU's loops
///    over time on their projected inputs, ...). The layout
///    functions — zero padding, cropping, slicing, nearest upsampling, transposition — only
///    move elements, so on an integer input they move its centred integers and keep its
///    grid: a padded zero is the zero point, real 0, as the simulation pads.
///  - `constant_op`: a value the model's forward code makes without its input (the position
///    indices a transformer looks up), captured when it was lowered.
///
/// Each function and its arguments (`ints`, `floats`, `tensors`):
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
///
/// A tensor of size 0 is "none" (layer_norm without scale or offset, a transposed
/// convolution without bias). Axes are non-negative, of the batch-first tensor.

#include <cstdint>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "integer_model.hpp"

namespace xq::deploy {

/// Whether function `f` with arguments `ints` only moves elements (see the file comment):
/// integers keep their grid through it, and rounding commutes with it.
XQ_DECL bool moves_elements(const std::string& f, const std::vector<std::int64_t>& ints) noexcept;

class function_op final : public lowered_op {
 public:
  std::string function;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
  std::vector<tensor> tensors;

  /// Whether `f` is one of the functions above.
  XQ_DECL static bool known(const std::string& f) noexcept;
  /// Whether this op only moves elements (the layout functions; upsampling when nearest).
  XQ_DECL bool moves_only() const noexcept;
  /// Checks the arguments' counts and ranges (an op read from a file, before it runs);
  /// argument_error naming the path and function otherwise.
  XQ_DECL void validate() const;
  XQ_DECL const char* kind() const noexcept override;
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  /// A product's sum order follows BLAS's tiles, which follow the batch: GEMM functions
  /// compute the whole batch at once, as the simulation does.
  XQ_DECL bool batch_invariant() const noexcept override;
};

/// A value fixed when the model was lowered (see the file comment): no inputs, its output
/// the same real tensor for every batch.
class constant_op final : public lowered_op {
 public:
  tensor value = tensor::from_shape({0});
  const char* kind() const noexcept override { return "constant"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/function_op.ipp"
#endif
