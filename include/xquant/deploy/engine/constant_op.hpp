#pragma once
/// \file constant_op.hpp
/// The engine's constant op.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/tensor.hpp"
#include "lowered_op.hpp"

namespace xq::deploy {

/// A value the model's forward code makes without its input (the position indices a
/// transformer looks up), fixed when it was lowered: no inputs, its output the same real
/// tensor for every batch (no batch axis of its own).
class constant_op final : public lowered_op {
 public:
  tensor value = tensor::from_shape({0});
  const char* kind() const noexcept override { return "constant"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/constant_op.ipp"
#endif
