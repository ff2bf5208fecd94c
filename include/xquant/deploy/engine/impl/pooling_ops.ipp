#pragma once
/// \file pooling_ops.ipp
/// The pooling ops (deploy/engine/pooling_ops.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../engine_kernels.hpp"
#include "../pooling_ops.hpp"

namespace xq::deploy {

XQ_DECL void max_pool_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = values.at(inputs.at(0));
  if (x.shape.size() != 4 || x.kind == value_kind::bits)
    throw argument_error(path + " (max_pool2d)", "a rank-4 real, integer or accumulator tensor",
                         std::string("a ") + to_string(x.kind) + " tensor of rank " + std::to_string(x.shape.size()));
  const std::size_t oh = geometry.output_extent(x.shape[1], 0), ow = geometry.output_extent(x.shape[2], 1);
  engine_tensor y;  // grid and kind carried over
  y.kind = x.kind;
  y.scale = x.scale;
  y.zero_point = x.zero_point;
  y.qmin = x.qmin;
  y.qmax = x.qmax;
  y.shape = {x.shape[0], oh, ow, x.shape[3]};
  const std::size_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
  if (!o.reference_kernels) {
    switch (x.kind) {
      case value_kind::real:
        y.real.resize(y.elements());
        max_pool_nhwc_f32(x.real.data(), n, h, w, c, geometry, y.real.data());
        break;
      case value_kind::integer:
        y.integer.resize(y.elements());
        max_pool_nhwc_s16(x.integer.data(), n, h, w, c, geometry, y.integer.data());
        break;
      case value_kind::accumulator:
        y.accumulator.resize(y.elements());
        max_pool_nhwc_s32(x.accumulator.data(), n, h, w, c, geometry, y.accumulator.data());
        break;
      case value_kind::bits: break;
    }
    values[output] = std::move(y);
    return;
  }
  switch (x.kind) {
    case value_kind::real: detail::max_pool_nhwc(x.real, x.shape, geometry, oh, ow, y.real); break;
    case value_kind::integer: detail::max_pool_nhwc(x.integer, x.shape, geometry, oh, ow, y.integer); break;
    case value_kind::accumulator:
      detail::max_pool_nhwc(x.accumulator, x.shape, geometry, oh, ow, y.accumulator);
      break;
    case value_kind::bits: break;
  }
  values[output] = std::move(y);
}

XQ_DECL std::string max_pool_op::describe() const { return "max_pool2d " + deploy::describe(geometry); }

XQ_DECL void integer_average_pool_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& x = values.at(inputs.at(0));
  if (x.shape.size() != 4 || x.kind != value_kind::integer)
    throw argument_error(path + " (integer_average_pool2d)", "a rank-4 integer tensor",
                         std::string("a ") + to_string(x.kind) + " tensor of rank " + std::to_string(x.shape.size()));
  const std::size_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
  const std::size_t oh = geometry.output_extent(h, 0), ow = geometry.output_extent(w, 1);
  engine_tensor y;  // the input's grid
  y.kind = value_kind::integer;
  y.scale = x.scale;
  y.zero_point = x.zero_point;
  y.qmin = x.qmin;
  y.qmax = x.qmax;
  y.shape = {n, oh, ow, c};
  y.integer.resize(y.elements());
  std::vector<std::int64_t> sum(c);
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j) {
        std::fill(sum.begin(), sum.end(), 0);
        std::int64_t count = 0;
        detail::for_each_window_pixel(geometry, h, w, c, b, i, j, [&](std::size_t at) {
          const std::int16_t* p = x.integer.data() + at;
          for (std::size_t q = 0; q < c; ++q) sum[q] += p[q];
          ++count;
        });
        std::int16_t* o = y.integer.data() + ((b * oh + i) * ow + j) * c;
        for (std::size_t q = 0; q < c; ++q) {
          // TFLite: (sum ± count / 2) / count, truncating: half away from zero.
          const std::int64_t s = sum[q];
          o[q] = count ? std::int16_t((s >= 0 ? s + count / 2 : s - count / 2) / count) : std::int16_t(0);
        }
      }
  values[output] = std::move(y);
}

XQ_DECL std::string integer_average_pool_op::describe() const {
  return "integer_average_pool2d " + deploy::describe(geometry);
}

namespace detail {

/// The pooled shape of `x` through `g` (no dilation), or argument_error from `op`.
inline std::vector<std::size_t> pooled_shape(const engine_tensor& x, const window_geometry& g, const std::string& where) {
  check_window(g, where);
  if (g.dilation[0] != 1 || g.dilation[1] != 1)
    throw argument_error(where, "a pooling window without dilation", deploy::describe(g));
  const std::size_t oh = g.output_extent(x.shape[1], 0), ow = g.output_extent(x.shape[2], 1);
  if (!oh || !ow) throw argument_error(where, "an input at least as large as the window", detail::tensor_string(x));
  return {x.shape[0], oh, ow, x.shape[3]};
}

}  // namespace detail

XQ_DECL engine_tensor max_pool_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 1, 1);
  const engine_tensor& x = *in[0];
  if (x.kind == value_kind::bits || x.shape.size() != 4)
    refuse("a rank-4 real, integer or accumulator tensor", detail::tensor_string(x));
  engine_tensor y = detail::value_of(x.kind, detail::pooled_shape(x, geometry, where()));
  y.set_grid(x.grid());
  work = detail::saturating_product(detail::element_count(y.shape), std::uint64_t(geometry.window[0]) * geometry.window[1]);
  return y;
}

XQ_DECL void max_pool_op::encode(op_writer& w) const { w.window("window", geometry); }

XQ_DECL std::unique_ptr<lowered_op> max_pool_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<max_pool_op>();
  op->geometry = r.window("window");
  return op;
}

XQ_DECL engine_tensor integer_average_pool_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  const engine_tensor& x = expect_one(in, value_kind::integer, 4);
  engine_tensor y = detail::integer_value_of(detail::pooled_shape(x, geometry, where()), x.grid());
  work = detail::saturating_product(detail::element_count(y.shape), std::uint64_t(geometry.window[0]) * geometry.window[1]);
  return y;
}

XQ_DECL void integer_average_pool_op::encode(op_writer& w) const { w.window("window", geometry); }

XQ_DECL std::unique_ptr<lowered_op> integer_average_pool_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<integer_average_pool_op>();
  op->geometry = r.window("window");
  return op;
}

}  // namespace xq::deploy
