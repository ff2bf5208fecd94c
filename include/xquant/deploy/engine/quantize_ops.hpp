#pragma once
/// \file quantize_ops.hpp
/// The engine's quantize and dequantize ops: floats onto an activation grid and back.

#include <memory>
#include <string>

#include "../../config.hpp"
#include "../../quantizers/quantization_grid.hpp"
#include "lowered_op.hpp"

namespace xq::deploy {

/// real -> integer on `grid`, rounded by the grid's rounding rule (quantize_on_grid: the
/// integers the simulation's quantizer computes, whichever peer's operator it runs). The
/// grid is per tensor, of integer elements, static, its centred integers within int16.
class quantize_op final : public lowered_op {
 public:
  quantization_grid grid;  ///< the quantizer's grid (quantizer_base::grid_of) with its rounding rule
  const char* kind() const noexcept override { return "quantize"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

/// integer -> real: (q - zero_point) * scale.
class dequantize_op final : public lowered_op {
 public:
  const char* kind() const noexcept override { return "dequantize"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantize_ops.ipp"
#endif
