#pragma once
/// \file constant_op.ipp
/// The constant op (deploy/engine/constant_op.hpp).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../constant_op.hpp"

namespace xq::deploy {

XQ_DECL void constant_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  engine_tensor out;
  out.shape.assign(value.shape().begin(), value.shape().end());
  out.real.assign(value.begin(), value.end());
  values[output] = std::move(out);
}

XQ_DECL std::string constant_op::describe() const {
  return "constant " + xq::detail::shape_string(value.shape()) + " (fixed when lowered: computed without the input)";
}

XQ_DECL engine_tensor constant_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 0, 0);
  if (value.dimension() == 0 || value.dimension() > 8) refuse("a constant of rank 1 to 8", xq::detail::shape_string(value.shape()));
  std::vector<std::size_t> shape(value.shape().begin(), value.shape().end());
  work = detail::element_count(shape);
  return detail::value_of(value_kind::real, std::move(shape));
}

XQ_DECL void constant_op::encode(op_writer& w) const { w.tensor_value("value", value); }

XQ_DECL std::unique_ptr<lowered_op> constant_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<constant_op>();
  op->value = r.tensor_value("value", std::uint64_t(1) << 28);
  return op;
}

}  // namespace xq::deploy
