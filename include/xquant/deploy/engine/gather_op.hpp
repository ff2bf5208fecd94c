#pragma once
/// \file gather_op.hpp
/// The engine's gather op: an embedding table's rows looked up by id.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "lowered_op.hpp"

namespace xq::deploy {

/// An embedding lookup: ids (a real tensor of integer values, any shape) -> real rows
/// (shape + (dim,)). A quantized table is kept as its kernel quantizer's integers (int8,
/// centred) with a scale per row, and a row is (q - zp) * scale in float: the simulation's
/// fake-quantized table exactly; an unquantized one as floats. Its rule: a real input (ids
/// checked when it runs: an id outside [0, rows) is an argument_error), a table of rows x dim.
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
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL std::size_t weight_bytes() const noexcept override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/gather_op.ipp"
#endif
