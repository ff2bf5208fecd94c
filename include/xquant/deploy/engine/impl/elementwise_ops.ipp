#pragma once
/// \file elementwise_ops.ipp
/// The elementwise ops and integer merges (deploy/engine/elementwise_ops.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../detail/integer_grids.hpp"
#include "../elementwise_ops.hpp"
#include "../engine_kernels.hpp"

namespace xq::deploy {

XQ_DECL void relu_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  engine_tensor y = values.at(inputs.at(0));
  switch (y.kind) {
    case value_kind::real:
      for (float& v : y.real) v = v > 0.0f ? v : 0.0f;
      break;
    case value_kind::integer:
      for (std::int16_t& v : y.integer) v = std::max<std::int16_t>(v, 0);
      break;
    case value_kind::accumulator:
      for (std::int32_t& v : y.accumulator) v = std::max<std::int32_t>(v, 0);
      break;
    case value_kind::bits:
      throw argument_error(path + " (relu)", "a real, integer or accumulator tensor", "bits");
  }
  values[output] = std::move(y);
}

XQ_DECL std::string relu_op::describe() const { return "relu"; }

XQ_DECL void batch_norm_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = values.at(inputs.at(0));
  if (x.kind != value_kind::real && x.kind != value_kind::accumulator)
    throw argument_error(path + " (batch_norm)", "a real or accumulator tensor", to_string(x.kind));
  engine_tensor y;
  y.shape = x.shape;
  const std::size_t c = mean.size(), n = x.elements();
  y.real.resize(n);
  if (!o.reference_kernels) {
    if (x.kind == value_kind::real)
      batch_norm_f32(x.real.data(), n, mean.data(), scale.data(), offset.data(), c, y.real.data());
    else
      batch_norm_f32(x.accumulator.data(), n, mean.data(), scale.data(), offset.data(), c, y.real.data());
    values[output] = std::move(y);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x.kind == value_kind::real ? x.real[i] : float(x.accumulator[i]);
    y.real[i] = (v - mean[i % c]) * scale[i % c] + offset[i % c];
  }
  values[output] = std::move(y);
}

XQ_DECL std::string batch_norm_op::describe() const {
  return xq::detail::concat("batch_norm (", mean.size(), " channels, float)");
}


XQ_DECL void integer_add_op::prepare() {
  prepared_ = false;
  if (input_scales.empty()) throw argument_error(path + " (integer_add)", "at least one input scale", "none");
  float largest = 0.0f;
  for (float s : input_scales) {
    if (!(s > 0.0f) || !std::isfinite(s))
      throw argument_error(path + " (integer_add)", "finite positive input scales", xq::detail::concat(s));
    largest = std::max(largest, s);
  }
  if (!(out.scale > 0.0f) || !std::isfinite(out.scale))
    throw argument_error(path + " (integer_add)", "a finite positive output scale", xq::detail::concat(out.scale));
  if (left_shift < 0 || left_shift > 20)
    throw argument_error(path + " (integer_add)", "a left shift from 0 to 20 bits", xq::detail::concat(left_shift));
  input_multipliers_.clear();
  prepared_ = true;
  if (scheme == requantization::float_multiplier) return;
  // TFLite's Prepare, in double from the float scales.
  const double twice_max = 2.0 * double(largest);
  for (float s : input_scales) input_multipliers_.emplace_back(scheme, std::vector<double>{double(s) / twice_max}, path);
  output_multiplier_ =
      requantizer(scheme, {twice_max / (double(std::int64_t(1) << left_shift) * double(out.scale))}, path);
}

XQ_DECL void integer_add_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  if (inputs.size() != input_scales.size() ||
      (scheme != requantization::float_multiplier && input_multipliers_.size() != inputs.size()))
    throw argument_error(path + " (integer_add)", xq::detail::concat(input_scales.size(), " prepared inputs"),
                         xq::detail::concat(inputs.size(), " inputs and ", input_multipliers_.size(), " multipliers"));
  const engine_tensor& first = detail::integer_input(values, *this, 0, input_scales[0], nullptr);
  std::vector<const std::int16_t*> in;
  for (std::size_t k = 0; k < inputs.size(); ++k)
    in.push_back(detail::integer_input(values, *this, k, input_scales[k], &first).integer.data());
  engine_tensor y = detail::integer_output(first, out);
  const std::size_t n = y.integer.size();
  if (scheme == requantization::float_multiplier) {
    for (std::size_t e = 0; e < n; ++e) {
      float sum = 0.0f;
      for (std::size_t k = 0; k < in.size(); ++k) {
        const float v = input_scales[k] * static_cast<float>(in[k][e]);
        sum = k ? sum + v : v;
      }
      y.integer[e] = detail::saturate_centred(static_cast<std::int64_t>(std::nearbyint(sum / out.scale)), out);
    }
  } else {
    for (std::size_t e = 0; e < n; ++e) {
      // int32 throughout, as TFLite; the lowering picks left_shift so nothing saturates.
      std::int64_t sum = 0;
      for (std::size_t k = 0; k < in.size(); ++k)
        sum += input_multipliers_[k](detail::saturate_int32(std::int64_t(in[k][e]) << left_shift), 0);
      y.integer[e] = detail::saturate_centred(output_multiplier_(detail::saturate_int32(sum), 0), out);
    }
  }
  values[output] = std::move(y);
}

XQ_DECL std::string integer_add_op::describe() const {
  std::ostringstream s;
  s << "integer add of " << inputs.size() << " inputs (scales";
  for (float v : input_scales) s << " " << v;
  s << ") onto " << deploy::describe(out) << ", " << to_string(scheme);
  if (scheme != requantization::float_multiplier) s << ", left shift " << left_shift;
  return s.str();
}

XQ_DECL void integer_multiply_op::prepare() {
  if (input_scales.size() != 2)
    throw argument_error(path + " (integer_multiply)", "two input scales", xq::detail::concat(input_scales.size()));
  requant_ = requantizer(scheme, {double(input_scales[0]) * double(input_scales[1]) / double(out.scale)},
                         path + " (integer_multiply)");
}

XQ_DECL void integer_multiply_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  if (inputs.size() != 2 || input_scales.size() != 2 || requant_.channels() != 1)
    throw argument_error(path + " (integer_multiply)", "two inputs, two scales and a prepared multiplier",
                         xq::detail::concat(inputs.size(), " inputs, ", input_scales.size(), " scales, ",
                                            requant_.channels(), " multipliers"));
  const engine_tensor& a = detail::integer_input(values, *this, 0, input_scales[0], nullptr);
  const engine_tensor& b = detail::integer_input(values, *this, 1, input_scales[1], &a);
  engine_tensor y = detail::integer_output(a, out);
  for (std::size_t e = 0; e < y.integer.size(); ++e)
    y.integer[e] = detail::saturate_centred(requant_(std::int32_t(a.integer[e]) * std::int32_t(b.integer[e]), 0), out);
  values[output] = std::move(y);
}

XQ_DECL std::string integer_multiply_op::describe() const {
  return xq::detail::concat("integer multiply (scales ", input_scales.at(0), " ", input_scales.at(1), ") onto ",
                            deploy::describe(out), ", ", to_string(scheme));
}

XQ_DECL void rescale_op::prepare() {
  requant_ = requantizer(scheme, {double(in_scale) / double(out.scale)}, path + " (rescale)");
}

XQ_DECL void rescale_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  if (requant_.channels() != 1)
    throw argument_error(path + " (rescale)", "a prepared multiplier", xq::detail::concat(requant_.channels()));
  const engine_tensor& x = detail::integer_input(values, *this, 0, in_scale, nullptr);
  engine_tensor y = detail::integer_output(x, out);
  for (std::size_t e = 0; e < y.integer.size(); ++e) y.integer[e] = detail::saturate_centred(requant_(x.integer[e], 0), out);
  values[output] = std::move(y);
}

XQ_DECL std::string rescale_op::describe() const {
  return xq::detail::concat("rescale from scale ", in_scale, " onto ", deploy::describe(out), ", ",
                            to_string(scheme));
}

XQ_DECL void clamp_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  engine_tensor y = values.at(inputs.at(0));
  for (std::int16_t& v : y.integer) v = static_cast<std::int16_t>(std::max<std::int32_t>(lo, std::min<std::int32_t>(hi, v)));
  values[output] = std::move(y);
}

XQ_DECL std::string clamp_op::describe() const {
  return xq::detail::concat("clamp to [", lo, ", ", hi, "] (centred integers)");
}


XQ_DECL engine_tensor relu_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 1, 1);
  if (in[0]->kind == value_kind::bits) refuse("a real, integer or accumulator tensor", detail::tensor_string(*in[0]));
  work = detail::element_count(in[0]->shape);
  engine_tensor y = detail::value_of(in[0]->kind, in[0]->shape);
  y.set_grid(in[0]->grid());
  return y;
}

XQ_DECL void relu_op::encode(op_writer&) const {}

XQ_DECL std::unique_ptr<lowered_op> relu_op::decode(const std::string&, const op_reader&) { return std::make_unique<relu_op>(); }

XQ_DECL engine_tensor batch_norm_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 1, 1);
  const engine_tensor& x = *in[0];
  if ((x.kind != value_kind::real && x.kind != value_kind::accumulator) || x.shape.empty())
    refuse("a real or accumulator tensor", detail::tensor_string(x));
  if (mean.empty() || mean.size() != x.channels() || scale.size() != mean.size() || offset.size() != mean.size())
    refuse(xq::detail::concat("a mean, scale and offset per channel (", x.channels(), ")"),
           xq::detail::concat(mean.size(), ", ", scale.size(), " and ", offset.size()));
  work = detail::element_count(x.shape);
  return detail::value_of(value_kind::real, x.shape);
}

XQ_DECL void batch_norm_op::encode(op_writer& w) const {
  w.numbers("mean", mean);
  w.numbers("scale", scale);
  w.numbers("offset", offset);
}

XQ_DECL std::unique_ptr<lowered_op> batch_norm_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<batch_norm_op>();
  op->mean = r.numbers<float>("mean");
  op->scale = r.numbers<float>("scale", op->mean.size());
  op->offset = r.numbers<float>("offset", op->mean.size());
  return op;
}

XQ_DECL engine_tensor integer_add_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  detail::check_integer_inputs(in, input_scales, where());
  detail::check_output_grid(out, where());
  if (!prepared_ || (scheme != requantization::float_multiplier && input_multipliers_.size() != in.size()))
    refuse("a prepared op (integer_add_op::prepare)", "multipliers for other inputs");
  work = detail::saturating_product(detail::element_count(in[0]->shape), in.size());
  return detail::integer_value_of(in[0]->shape, out);
}

XQ_DECL void integer_add_op::encode(op_writer& w) const {
  w.text("requantization", to_string(scheme));
  w.integer("left_shift", left_shift);
  w.numbers("input_scales", input_scales);
  detail::write_grid(w, "out", out);
}

XQ_DECL std::unique_ptr<lowered_op> integer_add_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<integer_add_op>();
  op->path = r.where();
  op->scheme = requantization_from_string(r.text("requantization"));
  op->left_shift = int(r.integer("left_shift", 0, 20));
  op->input_scales = r.numbers<float>("input_scales");
  op->out = detail::read_grid(r, "out");
  op->prepare();
  return op;
}

XQ_DECL engine_tensor integer_multiply_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 2, 2);
  detail::check_integer_inputs(in, input_scales, where());
  detail::check_output_grid(out, where());
  if (requant_.channels() != 1) refuse("a prepared op (integer_multiply_op::prepare)", "no multiplier");
  work = detail::element_count(in[0]->shape);
  return detail::integer_value_of(in[0]->shape, out);
}

XQ_DECL void integer_multiply_op::encode(op_writer& w) const {
  w.text("requantization", to_string(scheme));
  w.numbers("input_scales", input_scales);
  detail::write_grid(w, "out", out);
}

XQ_DECL std::unique_ptr<lowered_op> integer_multiply_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<integer_multiply_op>();
  op->path = r.where();
  op->scheme = requantization_from_string(r.text("requantization"));
  op->input_scales = r.numbers<float>("input_scales", 2);
  op->out = detail::read_grid(r, "out");
  op->prepare();
  return op;
}

XQ_DECL engine_tensor rescale_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 1, 1);
  detail::check_integer_inputs(in, {in_scale}, where());
  detail::check_output_grid(out, where());
  if (requant_.channels() != 1) refuse("a prepared op (rescale_op::prepare)", "no multiplier");
  work = detail::element_count(in[0]->shape);
  return detail::integer_value_of(in[0]->shape, out);
}

XQ_DECL void rescale_op::encode(op_writer& w) const {
  w.text("requantization", to_string(scheme));
  w.number("in_scale", double(in_scale));
  detail::write_grid(w, "out", out);
}

XQ_DECL std::unique_ptr<lowered_op> rescale_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<rescale_op>();
  op->path = r.where();
  op->scheme = requantization_from_string(r.text("requantization"));
  op->in_scale = float(r.number("in_scale"));
  op->out = detail::read_grid(r, "out");
  op->prepare();
  return op;
}

XQ_DECL engine_tensor clamp_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  const engine_tensor& x = expect_one(in, value_kind::integer);
  if (lo > hi || lo < -32768 || hi > 32767) refuse("-32768 <= lo <= hi <= 32767", xq::detail::concat("[", lo, ", ", hi, "]"));
  work = detail::element_count(x.shape);
  return detail::integer_value_of(x.shape, x.grid());
}

XQ_DECL void clamp_op::encode(op_writer& w) const {
  w.integer("lo", lo);
  w.integer("hi", hi);
}

XQ_DECL std::unique_ptr<lowered_op> clamp_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<clamp_op>();
  op->lo = std::int32_t(r.integer("lo", -32768, 32767));
  op->hi = std::int32_t(r.integer("hi", -32768, 32767));
  return op;
}

}  // namespace xq::deploy
