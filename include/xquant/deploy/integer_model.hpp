#pragma once
/// \file integer_model.hpp
/// `xq::deploy::integer_model`: a trained model lowered to integers (lower.hpp makes one),
/// as a list of operations over numbered tensors, and the engine that runs it.
///
/// What flows between operations (`engine_tensor`):
///  - integer: 8-bit (or narrower) activations on one per-tensor grid, stored *centred*,
///    q - zero_point, in int16. Centring once at quantization means no kernel handles zero
///    points; int16 is the operand width of the exact x86 product (integer_gemm.hpp);
///  - accumulator: int32 sums (a binary layer's K - 2 * popcount before its batch norm);
///  - bits: ±1 activations, one bit per channel (bit 1 = -1), ceil(C / 64) words per pixel;
///  - real: float32, where the model itself is float (its input, logits, a layer left
///    unquantized).
///
/// The operations are the integer runtime's instruction set: quantize (float to integers,
/// with the simulation's own quantizer), integer convolution / depthwise / dense with int32
/// accumulation, an int32 bias and a requantizer (requantize.hpp) or a float epilogue,
/// integer max pooling and ReLU, integer average pooling, add, multiply and rescaling
/// between grids (TFLite's and onnxruntime's merges), reshape, float batch norm, sign (float
/// to bits) and the binary convolution / dense of XNOR-popcount (binary_gemm.hpp); and
/// (function_op.hpp) xquant's own functions for the layers with no integer arithmetic —
/// padding, cropping, slicing, upsampling and transposition moving integers, layer norm,
/// GELU, attention, matmul and the transposed convolution in float — and constants.
///
/// Every kernel has an exact scalar reference (`run_options::reference_kernels`); the
/// fast path must give the same integers, and the tests compare the two on every model.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "../quantizers/fake_quantizer.hpp"
#include "integer_gemm.hpp"
#include "requantize.hpp"

namespace xq::deploy {

enum class value_kind { real, integer, accumulator, bits };

/// "real", "integer", "accumulator", "bits".
XQ_DECL const char* to_string(value_kind k) noexcept;

/// One tensor of the engine (see the file comment). Batch first: (N, H, W, C) or (N, C).
struct engine_tensor {
  value_kind kind = value_kind::real;
  std::vector<std::size_t> shape;
  std::vector<float> real;
  std::vector<std::int16_t> integer;  ///< q - zero_point
  std::vector<std::int32_t> accumulator;
  std::vector<std::uint64_t> bits;    ///< words_per_pixel() per pixel, bit 1 = -1
  /// integer: the grid, real = (q - zero_point) * scale with qmin <= q <= qmax.
  float scale = 1.0f;
  std::int32_t zero_point = 0, qmin = -128, qmax = 127;

  XQ_DECL std::size_t elements() const noexcept;
  std::size_t channels() const noexcept { return shape.empty() ? 0 : shape.back(); }
  std::size_t words_per_pixel() const noexcept { return (channels() + 63) / 64; }
  /// As floats: integer (q - zp) * scale, accumulator and bits (±1) as they are.
  XQ_DECL tensor to_real() const;
  /// The integers q (zero point added back): integer tensors only.
  XQ_DECL std::vector<std::int32_t> integers() const;
};

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

/// The geometry of a windowed operation: window, strides, dilation and explicit padding
/// (top, left, bottom, right), from the layer's Keras padding at the lowered input size.
struct window_geometry {
  std::array<std::size_t, 2> window{1, 1}, strides{1, 1}, dilation{1, 1};
  std::array<std::size_t, 4> pads{0, 0, 0, 0};
  /// The output extent along axis `a` (0: rows, 1: columns) for an input extent `in`.
  XQ_DECL std::size_t output_extent(std::size_t in, int a) const noexcept;
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
  virtual void run(std::vector<engine_tensor>& values, const run_options& o) const = 0;
  /// One line for the model's summary: what it computes, its grids.
  virtual std::string describe() const = 0;
  /// Whether each sample's result is the same bits whatever the batch size around it
  /// (integer_model::run then computes the batch in slices).
  virtual bool batch_invariant() const noexcept { return true; }
};

/// real -> integer, with the simulation's quantizer (any numerics: its own fake-quant
/// call, then the integers of its grid, quantization_grid.hpp).
class quantize_op final : public lowered_op {
 public:
  fake_quantizer quantizer;  ///< a copy with the trained range (per tensor)
  const char* kind() const noexcept override { return "quantize"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// integer -> real: (q - zero_point) * scale.
class dequantize_op final : public lowered_op {
 public:
  const char* kind() const noexcept override { return "dequantize"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// Integer conv2d / depthwise conv2d / dense: int16 centred input, int16 weights, int32
/// accumulation; then one of three epilogues:
///  - int32 bias (TFLite, onnxruntime): acc + round(b / (s_in * s_w)), then the requantizer
///    onto the output grid;
///  - float bias (FBGEMM's float-bias path, TensorRT): round((float(acc) * s_in * s_w[c]
///    + b[c]) * (1 / s_out)), half to even — no bias rounding, so with the simulation's
///    grid this gives the simulation's integers (lower_options::bias says why);
///  - real output (no quantizer downstream, the logits): float(acc) * s_in * s_w[c] + b[c].
class integer_linear_op final : public lowered_op {
 public:
  enum class form { conv2d, depthwise_conv2d, dense };
  form shape_form = form::conv2d;
  window_geometry geometry;            ///< conv forms
  std::size_t in_channels = 0, out_channels = 0, depth_multiplier = 1;
  std::vector<std::int16_t> weights;   ///< (KH, KW, Cin, F), (KH, KW, C, M) or (K, F)
  std::vector<std::int32_t> bias;      ///< per output channel (empty: none)
  packed_s16_matrix packed;            ///< the weights as the fast GEMM takes them
  bool integer_output = true;
  bool float_bias = false;             ///< integer output with the float-bias epilogue
  requantizer requant;                 ///< integer output with an int32 bias
  float out_scale = 1.0f;
  std::int32_t out_zero_point = 0, out_qmin = -128, out_qmax = 127;
  std::vector<float> real_scale, real_bias;  ///< real output and the float-bias epilogue (s_in * s_w[c], b[c])
  const char* kind() const noexcept override;
  /// Packs the weights (after they are set).
  XQ_DECL void prepare();
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// Max pooling of any tensor kind but bits (padding never wins a max).
class max_pool_op final : public lowered_op {
 public:
  window_geometry geometry;
  const char* kind() const noexcept override { return "max_pool2d"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// Average pooling on centred integers, TFLite's integer kernel: each window's int64 sum
/// over the cells inside the image (padding is not counted, as Keras counts), divided by
/// that count and rounded half away from zero, on the input's own grid. Lowered only with
/// lower_options::average_pool = average_pooling::integer; the default pools the
/// dequantized floats as the simulation does (real_function_op).
class integer_average_pool_op final : public lowered_op {
 public:
  window_geometry geometry;
  const char* kind() const noexcept override { return "integer_average_pool2d"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// ReLU: max(x, 0) on real tensors, max(q - zp, 0) on centred integers (0 is real 0).
class relu_op final : public lowered_op {
 public:
  const char* kind() const noexcept override { return "relu"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// A new shape for the same elements (flatten, reshape; dropout at inference is not
/// lowered at all).
class reshape_op final : public lowered_op {
 public:
  std::vector<std::size_t> target;  ///< without the batch axis
  const char* kind() const noexcept override { return "reshape"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// Batch norm at inference on a real or accumulator tensor, with the float arithmetic
/// of xq::batch_norm: y = (x - mean[c]) * scale[c] + offset[c].
class batch_norm_op final : public lowered_op {
 public:
  std::vector<float> mean, scale, offset;
  const char* kind() const noexcept override { return "batch_norm"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// real -> bits: Larq's sign (x >= 0 gives +1; a denormal reads as 0, as under TF's
/// flushing, so it gives +1 too).
class sign_op final : public lowered_op {
 public:
  const char* kind() const noexcept override { return "sign"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// Binary conv2d / dense: bits in, ±1 weights packed per output channel, XNOR-popcount
/// into an accumulator. Convolution padding is +1 (Larq's pad_values=1): padded words are
/// all zero bits.
class binary_linear_op final : public lowered_op {
 public:
  bool dense = false;
  window_geometry geometry;
  std::size_t in_channels = 0, out_channels = 0;
  std::size_t words_per_row = 0;       ///< packed words per output channel's weights
  std::vector<std::uint64_t> weights;  ///< out_channels rows of words_per_row words
  const char* kind() const noexcept override { return dense ? "binary_dense" : "binary_conv2d"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// A float convolution or dense layer (a float-input layer with binary weights, such as
/// a BNN's stem, or a layer the model leaves unquantized), with xquant's float kernels,
/// so it computes what the simulation computed (a ±1 kernel: within the rounding of the
/// sum's order, see unit_kernel).
class real_linear_op final : public lowered_op {
 public:
  bool dense = false, depthwise = false;
  tensor kernel;  ///< the kernel the simulation multiplies by (fake-quantized if it was)
  tensor bias;    ///< with has_bias
  bool has_bias = false;
  std::array<std::size_t, 2> strides{1, 1}, dilation{1, 1};
  int padding = 0;  ///< xq::padding as int (valid 0, same 1)
  float pad_value = 0.0f;
  /// dense only: x · kernelᵀ with the kernel (V, D) (a tied projection), as
  /// xq::ops::matmul_transposed computes it.
  bool transposed = false;
  /// conv only: the max pooling that followed it, fused (the lowering fuses it after a ±1
  /// kernel: unit_kernel_conv2d_max_pool_f32 never writes the full-size output).
  bool pooled = false;
  window_geometry pool;
  const char* kind() const noexcept override { return dense ? "real_dense" : "real_conv2d"; }
  /// A convolution whose kernel holds only ±1 and 0 (a binarized stem): the fast path
  /// sums its exact products in window order (unit_kernel_conv2d_f32, engine_kernels.hpp),
  /// the same bits for any batch size, within a K-term sum's rounding of the simulation's
  /// GEMM, whose order follows OpenBLAS's tiles. Other kernels, and the reference path, run
  /// xquant's im2col + BLAS GEMM, the simulation's own arithmetic on the same batch.
  XQ_DECL bool unit_kernel() const noexcept;
  bool batch_invariant() const noexcept override { return !dense && unit_kernel(); }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// A float operation computed by xquant's own function (`xq::ops::<function>`) on real
/// tensors, so it gives the simulation's floats bit for bit: average pooling (the
/// simulation averages the dequantized values in float: an integer sum would round
/// differently; integer_average_pool_op is the integer-only choice), global average pooling, the activations with no exact integer form
/// (relu6 on reals, leaky_relu, sigmoid, tanh, swish, softmax), and add and multiply of
/// inputs on different grids (the simulation adds the dequantized floats). The next
/// quantizer downstream then rounds with the simulation's own quantizer.
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
  XQ_DECL const char* kind() const noexcept override;
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// Concatenation along `axis` (of the batch-first tensor, non-negative) of real tensors,
/// or of integer tensors on one grid (the integers are copied: rounding commutes with
/// concatenation).
class concatenate_op final : public lowered_op {
 public:
  std::size_t axis = 0;
  const char* kind() const noexcept override { return "concatenate"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// The grid an op writes its integers on (the next quantizer's): real = (q - zero_point) *
/// scale, qmin <= q <= qmax.
struct integer_grid {
  float scale = 1.0f;
  std::int32_t zero_point = 0, qmin = -128, qmax = 127;
};

/// Integer addition of inputs each on its own grid, onto the grid of the next quantizer,
/// computed by the model's requantization scheme (lowered with
/// lower_options::merge = merge_arithmetic::integer):
///  - TFLite's two schemes: TFLite's int8 ADD, for any number of inputs. Each centred input
///    is shifted left by `left_shift` bits (TFLite: 20) and multiplied by s_k / (2 max s),
///    at most 1/2, so that the sum cannot overflow; the sum is multiplied by
///    2 max s / (2^left_shift * s_out). Both multiplies round by the scheme (requantizer);
///  - float_multiplier: onnxruntime's QLinearAdd (MLAS's scalar rule): each s_k * (q_k - zp_k)
///    in float32, summed in input order, divided by s_out and rounded half to even.
/// Then the output zero point is added and the result saturated to [qmin, qmax].
class integer_add_op final : public lowered_op {
 public:
  requantization scheme = requantization::float_multiplier;
  int left_shift = 20;
  std::vector<float> input_scales;  ///< one per input, the scale of its grid
  integer_grid out;
  const char* kind() const noexcept override { return "integer_add"; }
  /// Prepares the multipliers from the scales (after they are set); argument_error naming
  /// the path for a multiplier the scheme cannot represent.
  XQ_DECL void prepare();
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;

 private:
  std::vector<requantizer> input_multipliers_;  // s_k / (2 max s), TFLite's schemes
  requantizer output_multiplier_;               // 2 max s / (2^left_shift s_out)
};

/// Integer product of two inputs on their own grids, onto the grid of the next quantizer
/// (TFLite's int8 MUL): the product of the centred integers, an int32, requantized by the
/// model's scheme with the multiplier s_a * s_b / s_out, plus the output zero point,
/// saturated.
class integer_multiply_op final : public lowered_op {
 public:
  requantization scheme = requantization::float_multiplier;
  std::vector<float> input_scales;  ///< the two inputs' scales
  integer_grid out;
  const char* kind() const noexcept override { return "integer_multiply"; }
  /// Prepares the multiplier s_a * s_b / s_out (after the fields are set); argument_error
  /// naming the path for scales the scheme cannot use.
  XQ_DECL void prepare();
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;

 private:
  requantizer requant_;
};

/// Integers moved from one grid to another: q_out = requant(q - zp) + zp_out, saturated, with
/// the multiplier s_in / s_out by the model's scheme. A concatenation lowered with
/// merge_arithmetic::integer brings each input to the next quantizer's grid this way (the
/// form of TFLite's concatenation with scaling), then copies the integers.
class rescale_op final : public lowered_op {
 public:
  requantization scheme = requantization::float_multiplier;
  float in_scale = 1.0f;
  integer_grid out;
  const char* kind() const noexcept override { return "rescale"; }
  /// Prepares the multiplier s_in / s_out (after the fields are set).
  XQ_DECL void prepare();
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;

 private:
  requantizer requant_;
};

/// An integer clamp of centred integers to [lo, hi]: relu6 on a tensor already on the next
/// quantizer's grid, lo = q(0) - zp and hi = q(6) - zp with that quantizer's own rounding
/// of 6 (a monotone rounding commutes with the clamp: q(min(max(x, 0), 6)) =
/// min(max(q(x), q(0)), q(6))).
class clamp_op final : public lowered_op {
 public:
  std::int32_t lo = 0, hi = 0;
  const char* kind() const noexcept override { return "clamp"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

/// An embedding lookup: ids (a real tensor of integer values, any shape) -> real rows
/// (shape + (dim,)). A quantized table is kept as its kernel quantizer's integers (int8,
/// centred) with a scale per row, and a row is (q - zp) * scale in float: the simulation's
/// fake-quantized table exactly; an unquantized one as floats.
class gather_op final : public lowered_op {
 public:
  std::size_t rows = 0, dim = 0;
  bool quantized = false;
  std::vector<std::int16_t> integers;  ///< rows * dim, q - zero_point (quantized)
  std::vector<float> row_scale;        ///< per row (quantized)
  std::vector<float> table;            ///< rows * dim (not quantized)
  const char* kind() const noexcept override { return "gather"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
};

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

class integer_model {
 public:
  std::vector<std::unique_ptr<lowered_op>> ops;
  std::size_t value_count = 0;
  std::size_t input_value = 0, output_value = 0;
  std::vector<std::size_t> input_shape;  ///< one sample, without the batch axis
  requantization scheme = requantization::float_multiplier;
  std::vector<parity_point> parity_points;

  /// Runs the model on a float batch (N, input_shape...) and returns its output as
  /// floats. argument_error for an input of another shape.
  XQ_DECL tensor run(const tensor& x, const run_options& o = {}) const;
  /// The same, keeping every tensor (the parity report reads them).
  XQ_DECL std::vector<engine_tensor> run_all(const tensor& x, const run_options& o = {}) const;
  /// One line per op: kind, path, what it computes.
  XQ_DECL std::string summary() const;
  /// Bytes of weights and biases the engine holds.
  XQ_DECL std::size_t weight_bytes() const;
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/integer_model.ipp"
#endif
