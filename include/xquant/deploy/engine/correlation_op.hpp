#pragma once
/// \file correlation_op.hpp
/// The engine's cost volume (layers/correlation.hpp: FlowNet's and PWC-Net's 1x1
/// correlation): for each pixel and displacement within `max_displacement`, the mean over
/// channels of the first map times the second map's shifted pixel, 0 where the partner
/// lies outside the image.
///
///  - On integers (each input centred on its own grid, the quantization points of the
///    correlation's twin): exact int32 sums Σ_c q_a·q_b, then either requantized onto the
///    grid of the next quantizer by the model's scheme with the multiplier
///    s_a·s_b / (C·s_out) — the output zero point added, saturated — or, with no quantizer
///    after it, floats sum · (s_a·s_b) · (1/C). The simulation sums the dequantized floats in
///    float, so an output that lands within a rounding of a grid boundary can be one step
///    away (the parity report counts them).
///  - On real tensors: the simulation's float volume itself (the same loop, in float), bit
///    for bit.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "lowered_op.hpp"
#include "requantize.hpp"

namespace xq::deploy {

class correlation_op final : public lowered_op {
 public:
  std::size_t max_displacement = 4;
  /// Integer inputs on grids of these two scales (empty: real inputs).
  std::vector<float> input_scales;
  /// The channels C the integer multiplier divides by (integer inputs).
  std::size_t channels = 0;
  /// Integer inputs: requantized onto `out` (else float output).
  bool integer_output = false;
  requantization scheme = requantization::float_multiplier;
  integer_grid out;

  const char* kind() const noexcept override { return "correlation"; }
  /// Prepares the multiplier (integer output; after the fields are set); argument_error
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

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/correlation_op.ipp"
#endif
