#pragma once
/// \file elementwise_ops.hpp
/// The engine's elementwise ops and requantizing merges: relu, an integer clamp, batch
/// norm in float, and the integer add, multiply and rescale of TFLite's and onnxruntime's
/// arithmetic (each input on its own grid, the output on the next quantizer's).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "lowered_op.hpp"
#include "requantize.hpp"

namespace xq::deploy {

/// ReLU: max(x, 0) on real tensors, max(q - zp, 0) on centred integers (0 is real 0).
class relu_op final : public lowered_op {
 public:
  const char* kind() const noexcept override { return "relu"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

/// Batch norm at inference on a real or accumulator tensor, with the float arithmetic
/// of xq::batch_norm: y = (x - mean[c]) * scale[c] + offset[c].
class batch_norm_op final : public lowered_op {
 public:
  std::vector<float> mean, scale, offset;  ///< one per channel (the last axis)
  const char* kind() const noexcept override { return "batch_norm"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
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
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);

 private:
  bool prepared_ = false;
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
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);

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
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);

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
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/elementwise_ops.ipp"
#endif
