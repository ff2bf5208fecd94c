#pragma once
/// \file integer_linear_op.hpp
/// The engine's integer linear op: conv2d, depthwise conv2d and dense on centred int16
/// activations and int16 weights, accumulated exactly in int32 (integer_gemm.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "integer_gemm.hpp"
#include "lowered_op.hpp"
#include "requantize.hpp"
#include "window_geometry.hpp"

namespace xq::deploy {

/// Integer conv2d / depthwise conv2d / dense: int16 centred input, int16 weights, int32
/// accumulation; then one of three epilogues:
///  - int32 bias (TFLite, onnxruntime): acc + round(b / (s_in * s_w)), then the requantizer
///    onto the output grid;
///  - float bias (FBGEMM's float-bias path, TensorRT): round((float(acc) * s_in * s_w[c]
///    + b[c]) * (1 / s_out)), half to even — no bias rounding, so with the simulation's
///    grid this gives the simulation's integers (lower_options::bias says why);
///  - real output (no quantizer downstream, the logits): float(acc) * s_in * s_w[c] + b[c].
/// Its rule: one integer input, NHWC with in_channels channels (conv forms) or in_channels
/// features on the last axis (dense); weights, bias and multipliers sized by the channel
/// counts; every sum within int32 (K * max|input| * max|weight| + max|bias| < 2^31).
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
  /// A ReLU after it, fused by the lowering: integer outputs saturate to
  /// [max(out_qmin, out_zero_point), out_qmax], which is max(q - zp, 0) of the requantized
  /// value exactly (relu_op's arithmetic), without a pass of its own.
  bool relu = false;
  /// The integer outputs' lower bound: out_qmin, or with the fused ReLU the zero point.
  std::int32_t saturation_min() const noexcept { return relu ? std::max(out_qmin, out_zero_point) : out_qmin; }
  std::vector<float> real_scale, real_bias;  ///< real output and the float-bias epilogue (s_in * s_w[c], b[c])
  XQ_DECL const char* kind() const noexcept override;
  /// Packs the weights (after they are set), and notes their largest magnitude for the rule.
  XQ_DECL void prepare();
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL std::size_t weight_bytes() const noexcept override;
  /// "conv2d", "depthwise_conv2d", "dense".
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);

 private:
  std::int64_t largest_weight_ = -1;  // max |w| once prepared
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/integer_linear_op.ipp"
#endif
