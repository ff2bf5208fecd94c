#pragma once
/// \file lowered_op.hpp
/// `xq::deploy::lowered_op`: one operation of the integer engine (integer_model.hpp), the
/// base of every op family (quantize_ops.hpp, integer_linear_op.hpp, binary_ops.hpp,
/// real_linear_op.hpp, pooling_ops.hpp, elementwise_ops.hpp, layout_ops.hpp,
/// gather_op.hpp, float_function_ops.hpp, constant_op.hpp). An op reads numbered
/// tensors, writes one, and knows
///  - how to run (`run`, with an exact scalar reference behind run_options::reference_kernels);
///  - its rule (`infer`): what it accepts — input count, kinds, rank, channels against its
///    weights, windows, axes — and the output it makes, as an engine_tensor without data.
///    integer_model::check runs every op's rule from the model's input shape forward before
///    anything runs (and a loaded file is checked so when read), so `run` only ever sees the
///    tensors its rule accepted;
///  - how to save itself (`encode`) and, through the decoder registered for its kind
///    (op_registry.hpp), to load itself.
/// No layer, tape or quantizer object is part of an op: it holds numbers, grids and shapes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "engine_tensor.hpp"
#include "op_codec.hpp"

namespace xq::deploy {

struct run_options {
  /// Run the scalar reference kernels instead of the fast ones (the oracle).
  bool reference_kernels = false;
  /// integer_model::run: samples per slice of the batch (0: 8). Every op computes each
  /// sample on its own, so where every op's bits are independent of the batch size
  /// (lowered_op::batch_invariant) the model runs slice by slice, each slice's tensors
  /// small enough to stay in cache, the slices spread over the threads (a binarized CNN's
  /// engine 1.9x faster at batch 64 than whole-batch ops, bench/README.md).
  std::size_t batch_slice = 0;
};

/// One operation. `inputs` and `output` number the model's tensors; `path` is the
/// layer (or "xq::ops::relu after <layer>") it was lowered from.
class lowered_op {
 public:
  virtual ~lowered_op() = default;
  std::string path;
  std::vector<std::size_t> inputs;
  std::size_t output = 0;
  /// "quantize", "conv2d", ... (the op's kind; saved files name it).
  virtual const char* kind() const noexcept = 0;
  /// Computes the output from `values[inputs]` into `values[output]`: tensors the op's
  /// rule (`infer`) accepted.
  virtual void run(std::vector<engine_tensor>& values, const run_options& o) const = 0;
  /// One line for the model's summary: what it computes, its grids.
  virtual std::string describe() const = 0;
  /// Whether each sample's result is the same bits whatever the batch size around it
  /// (integer_model::run then computes the batch in slices).
  virtual bool batch_invariant() const noexcept { return true; }
  /// The op's rule: its output (kind, shape, grid; no data) for inputs described by
  /// `inputs`, in its input order, or argument_error naming the op and what does not fit.
  /// `work` gets what running it costs, in multiply-adds (elements touched for the ops
  /// that only move or map them) for the batch the shapes hold.
  virtual engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const = 0;
  /// Writes the op's own fields (the file writes its kind, path, inputs and output).
  virtual void encode(op_writer& w) const = 0;
  /// Bytes of weights and biases the op holds.
  virtual std::size_t weight_bytes() const noexcept { return 0; }

 protected:
  /// "path (kind)": where messages say the problem is.
  XQ_DECL std::string where() const;
  /// Throws argument_error(where(), expected, given).
  [[noreturn]] XQ_DECL void refuse(const std::string& expected, const std::string& given) const;
  /// Throws unless there are from `min` to `max` inputs.
  XQ_DECL void expect_inputs(const std::vector<const engine_tensor*>& in, std::size_t min, std::size_t max) const;
  /// Input `t` of kind `k` (and of rank `rank` unless 0), or argument_error.
  XQ_DECL const engine_tensor& expect(const engine_tensor& t, value_kind k, std::size_t rank = 0) const;
  /// The input of a one-input op, as `expect`.
  XQ_DECL const engine_tensor& expect_one(const std::vector<const engine_tensor*>& in, value_kind k,
                                          std::size_t rank = 0) const;
};

namespace detail {

/// "an integer tensor of shape (1, 12, 12, 6)".
XQ_DECL std::string tensor_string(const engine_tensor& t);
/// The product of `shape`, saturating at UINT64_MAX (shapes read from files may hold anything).
XQ_DECL std::uint64_t element_count(const std::vector<std::size_t>& shape) noexcept;
/// a * b, saturating.
inline std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) noexcept {
  return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}
/// An engine tensor of kind `k` and `shape`, without data (what `infer` returns).
XQ_DECL engine_tensor value_of(value_kind k, std::vector<std::size_t> shape);
/// The same, an integer tensor on grid `g`.
XQ_DECL engine_tensor integer_value_of(std::vector<std::size_t> shape, const integer_grid& g);

}  // namespace detail

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/lowered_op.ipp"
#endif
