#pragma once
/// \file integer_model.hpp
/// `xq::deploy::integer_model`: a trained model lowered to integers (lower.hpp makes one),
/// as a list of operations over numbered tensors (lowered_op.hpp and the op families beside
/// it), and the runtime that runs it.
///
/// The operations are the integer runtime's instruction set: quantize (float to integers on
/// a grid, rounded as the simulation's quantizer rounds), integer convolution / depthwise /
/// dense with int32 accumulation, an int32 bias and a requantizer (requantize.hpp) or a
/// float epilogue, integer max pooling and ReLU, integer average pooling, add, multiply and
/// rescaling between grids (TFLite's and onnxruntime's merges), reshape, float batch norm,
/// sign (float to bits) and the binary convolution / dense of XNOR-popcount
/// (binary_gemm.hpp); and xquant's own float functions for the layers with no integer
/// arithmetic — padding, cropping, slicing, upsampling and transposition moving integers,
/// layer norm, GELU, attention, matmul and the transposed convolution in float — and
/// constants.
///
/// A runtime: no layer, tape or quantizer object is part of it. Before it computes
/// anything, `run` checks the model as a whole for the batch it is given (`check`): every
/// op's rule against the kinds and shapes it reads, computed from input_shape forward, and
/// the bounds of `engine_limits` — so no op reads or writes past a tensor, and what a run
/// costs is known and bounded before anything is allocated. A model loaded from a file is
/// checked so when read (integer_model_file.hpp).
///
/// Every kernel has an exact scalar reference (`run_options::reference_kernels`); the
/// fast path must give the same integers, and the tests compare the two on every model.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/tensor.hpp"
#include "engine_tensor.hpp"
#include "lowered_op.hpp"
#include "requantize.hpp"

namespace xq::deploy {

/// Where the simulation quantizes and the engine holds the integers: the parity report
/// compares them (parity.hpp).
struct parity_point {
  std::string label;           ///< "conv_block_1/conv input"
  std::string layer_path;      ///< the traced layer whose input it is
  std::size_t call = 0;        ///< which call of that layer (0: the first)
  std::size_t input = 0;       ///< which of its inputs
  std::string quantizer_path;  ///< the fake quantizer that rounds it
  std::size_t value = 0;       ///< the engine's tensor
  bool binary = false;         ///< ±1 values (Larq's sign of the input), not a fake quantizer's grid
  bool output = false;         ///< the layer's output (its output quantizer), not input `input`
};

/// The bounds `integer_model::check` holds a model to, per sample of the batch (a run of N
/// samples may use N times as much). They are far above what xquant's models need (a
/// ResNet-50 is about 2^22 elements per activation and 2^32 multiply-adds per image) and
/// far below what would exhaust a machine: a crafted file cannot make a run allocate or
/// compute more.
struct engine_limits {
  /// Ops in a model.
  static constexpr std::size_t ops = std::size_t(1) << 16;
  /// Axes of a tensor.
  static constexpr std::size_t rank = 8;
  /// Elements of one tensor, per sample (a float tensor of 256 MiB).
  static constexpr std::uint64_t tensor_elements = std::uint64_t(1) << 26;
  /// Elements of every tensor of a run together, per sample (run_all keeps them all).
  static constexpr std::uint64_t model_elements = std::uint64_t(1) << 28;
  /// Multiply-adds (or elements touched) of every op together, per sample.
  static constexpr std::uint64_t work = std::uint64_t(1) << 36;
};

class integer_model {
 public:
  std::vector<std::unique_ptr<lowered_op>> ops;
  /// Tensors the ops number: at most 2 * ops + 1 (each op's output and the input, and a
  /// number left over where the lowering fused two ops into one).
  std::size_t value_count = 0;
  /// The first input and output (the only ones of most models).
  std::size_t input_value = 0, output_value = 0;
  std::vector<std::size_t> input_shape;  ///< one sample, without the batch axis
  /// A model of several inputs or outputs (a siamese pair, a flow network's two frames):
  /// the others, in the model's order, each input with its sample shape. Empty for one each.
  std::vector<std::size_t> other_input_values, other_output_values;
  std::vector<std::vector<std::size_t>> other_input_shapes;
  requantization scheme = requantization::float_multiplier;
  std::vector<parity_point> parity_points;

  /// Every input's tensor, every input's sample shape, every output's tensor, in order.
  XQ_DECL std::vector<std::size_t> input_values() const;
  XQ_DECL std::vector<std::vector<std::size_t>> input_shapes() const;
  XQ_DECL std::vector<std::size_t> output_values() const;

  /// Runs the model on a float batch (N, input_shape...) and returns its output as
  /// floats. argument_error for an input of another shape, for a model of several inputs
  /// or outputs (see below), or a model `check` refuses.
  XQ_DECL tensor run(const tensor& x, const run_options& o = {}) const;
  /// The same for any number of inputs (one batch each, the same N): every output.
  XQ_DECL std::vector<tensor> run(const std::vector<tensor>& inputs, const run_options& o = {}) const;
  /// The same, keeping every tensor (the parity report reads them).
  XQ_DECL std::vector<engine_tensor> run_all(const tensor& x, const run_options& o = {}) const;
  XQ_DECL std::vector<engine_tensor> run_all(const std::vector<tensor>& inputs, const run_options& o = {}) const;
  /// One line per op: kind, path, what it computes.
  XQ_DECL std::string summary() const;
  /// Bytes of weights and biases the engine holds.
  XQ_DECL std::size_t weight_bytes() const;
  /// Checks the model as a whole for a batch of `batch` samples and returns every tensor
  /// as each op's rule describes it (kind, shape, grid; no data): the numbering (each
  /// tensor computed once, from tensors computed before it; the output computed; parity
  /// points on computed tensors), input_shape, every op's rule (lowered_op::infer) from the
  /// input forward, and engine_limits. argument_error naming the op (or the field) otherwise.
  XQ_DECL std::vector<engine_tensor> check(std::size_t batch = 1) const;
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/integer_model.ipp"
#endif
