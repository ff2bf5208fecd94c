#pragma once
/// \file gather_op.ipp
/// The gather op (deploy/engine/gather_op.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../gather_op.hpp"

namespace xq::deploy {

XQ_DECL void gather_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& ids = values.at(inputs.at(0));
  engine_tensor y;
  y.shape = ids.shape;
  y.shape.push_back(dim);
  y.real.resize(ids.real.size() * dim);
  for (std::size_t i = 0; i < ids.real.size(); ++i) {
    const float id = ids.real[i];
    if (!(id >= 0.0f && id < static_cast<float>(rows) && std::floor(id) == id))
      throw argument_error(path + " (gather)", xq::detail::concat("integer ids in [0, ", rows, ")"),
                           xq::detail::concat("id ", id, " at flat position ", i));
    const std::size_t r = static_cast<std::size_t>(id);
    float* out = y.real.data() + i * dim;
    if (quantized)
      for (std::size_t d = 0; d < dim; ++d) out[d] = float(integers[r * dim + d]) * row_scale[r];
    else
      std::copy(table.begin() + std::ptrdiff_t(r * dim), table.begin() + std::ptrdiff_t((r + 1) * dim), out);
  }
  values[output] = std::move(y);
}

XQ_DECL std::string gather_op::describe() const {
  return xq::detail::concat("gather rows of a ", rows, "x", dim, quantized ? " int8 table (a scale per row)" : " float table");
}

XQ_DECL engine_tensor gather_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  const engine_tensor& ids = expect_one(in, value_kind::real);
  const std::uint64_t n = std::uint64_t(rows) * dim;
  if (!rows || !dim || rows > (std::size_t(1) << 30) || dim > (std::size_t(1) << 30) || n > (std::uint64_t(1) << 30))
    refuse("a table of 1 to 2^30 elements", xq::detail::concat(rows, " x ", dim));
  if (quantized ? integers.size() != n || row_scale.size() != rows : table.size() != n)
    refuse(quantized ? xq::detail::concat(n, " integers and ", rows, " row scales") : xq::detail::concat(n, " table values"),
           quantized ? xq::detail::concat(integers.size(), " and ", row_scale.size()) : xq::detail::concat(table.size()));
  std::vector<std::size_t> shape = ids.shape;
  shape.push_back(dim);
  work = detail::element_count(shape);
  return detail::value_of(value_kind::real, shape);
}

XQ_DECL void gather_op::encode(op_writer& w) const {
  w.size("rows", rows);
  w.size("dim", dim);
  w.flag("quantized", quantized);
  w.numbers("integers", integers);
  w.numbers("row_scale", row_scale);
  w.numbers("table", table);
}

XQ_DECL std::size_t gather_op::weight_bytes() const noexcept {
  return quantized ? integers.size() + row_scale.size() * 4 : table.size() * 4;
}

XQ_DECL std::unique_ptr<lowered_op> gather_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<gather_op>();
  op->rows = r.size("rows", std::size_t(1) << 30);
  op->dim = r.size("dim", std::size_t(1) << 30);
  op->quantized = r.flag("quantized");
  op->integers = r.numbers<std::int16_t>("integers");
  op->row_scale = r.numbers<float>("row_scale");
  op->table = r.numbers<float>("table");
  return op;
}

}  // namespace xq::deploy
