#pragma once
/// \file binary_ops.hpp
/// The engine's binary ops (Larq's compute engine): sign (floats to ±1 bits) and the binary
/// convolution and dense layer by XNOR-popcount (binary_gemm.hpp).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "lowered_op.hpp"
#include "window_geometry.hpp"

namespace xq::deploy {

/// real (or integer, accumulator) -> bits: Larq's sign (x >= 0 gives +1; a denormal reads
/// as 0, as under TF's flushing, so it gives +1 too).
class sign_op final : public lowered_op {
 public:
  const char* kind() const noexcept override { return "sign"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

/// Binary conv2d / dense: bits in, ±1 weights packed per output channel, XNOR-popcount
/// into an accumulator. Convolution padding is +1 (Larq's pad_values=1): padded words are
/// all zero bits. Its rule: a bits input of in_channels channels, (N, H, W, C) for the
/// convolution, (N, C) for the dense form, and weights_per_row words per output channel.
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
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL std::size_t weight_bytes() const noexcept override { return weights.size() * 8; }
  /// "binary_conv2d", "binary_dense".
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/binary_ops.ipp"
#endif
