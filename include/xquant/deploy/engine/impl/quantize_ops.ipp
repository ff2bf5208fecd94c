#pragma once
/// \file quantize_ops.ipp
/// The quantize and dequantize ops (deploy/engine/quantize_ops.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../quantizers/quantize_on_grid.hpp"
#include "../quantize_ops.hpp"

namespace xq::deploy {

XQ_DECL void quantize_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& x = values.at(inputs.at(0));
  tensor t = tensor::from_shape(x.shape);
  std::copy(x.real.begin(), x.real.end(), t.data());
  const std::vector<std::int32_t> q = quantize_on_grid(grid, t, path);
  engine_tensor y;
  y.kind = value_kind::integer;
  y.shape = x.shape;
  y.set_grid({grid.scale[0], grid.zero_point[0], grid.qmin, grid.qmax});
  y.integer.resize(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) y.integer[i] = std::int16_t(q[i] - y.zero_point);
  values[output] = std::move(y);
}

XQ_DECL std::string quantize_op::describe() const { return "quantize " + xq::describe(grid); }

XQ_DECL engine_tensor quantize_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  const engine_tensor& x = expect_one(in, value_kind::real);
  check_grid(grid, where());
  if (grid.element != grid_element::integer || grid.granularity() != grid_granularity::per_tensor || grid.dynamic ||
      grid.tensor_scale)
    refuse("a static per-tensor grid of integers (the engine's activations have one grid)", xq::describe(grid));
  const std::int64_t lo = std::int64_t(grid.qmin) - grid.zero_point[0], hi = std::int64_t(grid.qmax) - grid.zero_point[0];
  if (lo < -32768 || hi > 32767)
    refuse("a grid whose centred integers q - zero point fit int16", xq::describe(grid));
  work = detail::element_count(x.shape);
  return detail::integer_value_of(x.shape, {grid.scale[0], grid.zero_point[0], grid.qmin, grid.qmax});
}

XQ_DECL void quantize_op::encode(op_writer& w) const { w.grid("grid", grid); }

XQ_DECL std::unique_ptr<lowered_op> quantize_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<quantize_op>();
  op->grid = r.grid("grid");
  return op;
}

XQ_DECL void dequantize_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& x = values.at(inputs.at(0));
  engine_tensor y;
  y.shape = x.shape;
  y.real.resize(x.integer.size());
  for (std::size_t i = 0; i < y.real.size(); ++i) y.real[i] = float(x.integer[i]) * x.scale;
  values[output] = std::move(y);
}

XQ_DECL std::string dequantize_op::describe() const { return "dequantize"; }

XQ_DECL engine_tensor dequantize_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  const engine_tensor& x = expect_one(in, value_kind::integer);
  work = detail::element_count(x.shape);
  return detail::value_of(value_kind::real, x.shape);
}

XQ_DECL void dequantize_op::encode(op_writer&) const {}

XQ_DECL std::unique_ptr<lowered_op> dequantize_op::decode(const std::string&, const op_reader&) {
  return std::make_unique<dequantize_op>();
}

}  // namespace xq::deploy
