#pragma once
/// \file correlation_op.ipp
/// The engine's cost volume (deploy/engine/correlation_op.hpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../layers/correlation.hpp"
#include "../correlation_op.hpp"
#include "../detail/integer_grids.hpp"

namespace xq::deploy {

namespace detail {
inline xq::detail::correlation_shape correlation_of(const std::vector<std::size_t>& s, std::size_t d) {
  return {s[0], s[1], s[2], s[3], d, 2 * d + 1};
}
}  // namespace detail

XQ_DECL void correlation_op::prepare() {
  if (!integer_output) return;
  if (input_scales.size() != 2 || channels == 0)
    throw argument_error(path + " (correlation)", "two input scales and the channel count", "fewer");
  requant_ = requantizer(scheme,
                         std::vector<double>((2 * max_displacement + 1) * (2 * max_displacement + 1),
                                             double(input_scales[0]) * double(input_scales[1]) /
                                                 (double(channels) * double(out.scale))),
                         path + " (correlation)");
}

XQ_DECL void correlation_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& a = values.at(inputs.at(0));
  const engine_tensor& b = values.at(inputs.at(1));
  const xq::detail::correlation_shape s = detail::correlation_of(a.shape, max_displacement);
  const std::size_t k_all = s.span * s.span;
  engine_tensor y;
  y.shape = {s.n, s.h, s.w, k_all};
  const std::size_t size = s.n * s.volume();
  if (input_scales.empty()) {  // the simulation's float volume
    y.kind = value_kind::real;
    y.real.assign(size, 0.0f);
    const float inv_c = s.c ? 1.0f / static_cast<float>(s.c) : 0.0f;
    for (std::size_t n = 0; n < s.n; ++n) {
      float* yn = y.real.data() + n * s.volume();
      xq::detail::correlation_sums<float>(s, a.real.data() + n * s.image(), b.real.data() + n * s.image(),
                                          [&](std::size_t at, float sum) { yn[at] = sum * inv_c; });
    }
    values[output] = std::move(y);
    return;
  }
  std::vector<std::int32_t> acc(size, 0);  // displacements that leave the image stay 0
  for (std::size_t n = 0; n < s.n; ++n) {
    std::int32_t* an = acc.data() + n * s.volume();
    xq::detail::correlation_sums<std::int32_t>(s, a.integer.data() + n * s.image(), b.integer.data() + n * s.image(),
                                               [&](std::size_t at, std::int32_t sum) { an[at] = sum; });
  }
  if (integer_output) {
    y = detail::value_of(value_kind::integer, y.shape);
    y.set_grid(out);
    y.integer.resize(size);
    requant_.apply(acc.data(), s.n * s.h * s.w, out.zero_point, out.qmin, out.qmax, y.integer.data());
  } else {
    y.kind = value_kind::real;
    y.real.resize(size);
    const float step = input_scales[0] * input_scales[1];
    const float inv_c = 1.0f / static_cast<float>(s.c);
    for (std::size_t e = 0; e < size; ++e) y.real[e] = static_cast<float>(acc[e]) * step * inv_c;
  }
  values[output] = std::move(y);
}

XQ_DECL std::string correlation_op::describe() const {
  const std::size_t span = 2 * max_displacement + 1;
  std::string s = xq::detail::concat("correlation ", span, "x", span, " displacements");
  if (input_scales.empty()) return s + ", float (the simulation's)";
  s += xq::detail::concat(", int32 sums of integers (scales ", input_scales[0], " ", input_scales[1], ")");
  return integer_output ? s + ", requantized (" + to_string(scheme) + ") onto " + deploy::describe(out)
                        : s + ", float output";
}

XQ_DECL engine_tensor correlation_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  expect_inputs(in, 2, 2);
  const value_kind k = input_scales.empty() ? value_kind::real : value_kind::integer;
  const engine_tensor& a = expect(*in[0], k, 4);
  const engine_tensor& b = expect(*in[1], k, 4);
  if (a.shape != b.shape)
    refuse("two maps of one shape " + xq::detail::shape_string(a.shape), detail::tensor_string(b));
  if (max_displacement > 256) refuse("a displacement of at most 256", xq::detail::concat(max_displacement));
  const std::size_t span = 2 * max_displacement + 1;
  if (k == value_kind::integer) {
    if (input_scales.size() != 2 || a.scale != input_scales[0] || b.scale != input_scales[1])
      refuse("integer maps on grids of the op's two scales", xq::detail::concat("scales ", a.scale, " and ", b.scale));
    if (a.shape[3] != channels) refuse(xq::detail::concat("maps of ", channels, " channels"), detail::tensor_string(a));
    // The int32 sums cannot overflow: C products of the grids' largest centred integers.
    auto widest = [](const engine_tensor& t) {
      return double(std::max(std::abs(std::int64_t(t.qmin) - t.zero_point), std::abs(std::int64_t(t.qmax) - t.zero_point)));
    };
    if (!(double(channels) * widest(a) * widest(b) < 2147483647.0))
      refuse("int32 sums that cannot overflow", xq::detail::concat(channels, " channels of these grids"));
    if (integer_output) {
      detail::check_output_grid(out, where());
      if (requant_.channels() != span * span) refuse("a prepared op (correlation_op::prepare)", "no multiplier");
    }
  }
  work = detail::saturating_product(detail::element_count(a.shape), span * span);
  std::vector<std::size_t> shape{a.shape[0], a.shape[1], a.shape[2], span * span};
  if (k == value_kind::integer && integer_output) return detail::integer_value_of(shape, out);
  return detail::value_of(value_kind::real, shape);
}

XQ_DECL void correlation_op::encode(op_writer& w) const {
  w.size("max_displacement", max_displacement);
  w.numbers("input_scales", input_scales);
  w.size("channels", channels);
  w.flag("integer_output", integer_output);
  w.text("requantization", to_string(scheme));
  detail::write_grid(w, "out", out);
}

XQ_DECL std::unique_ptr<lowered_op> correlation_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<correlation_op>();
  op->path = r.where();
  op->max_displacement = r.size("max_displacement", 256);
  op->input_scales = r.numbers<float>("input_scales");
  if (!op->input_scales.empty() && op->input_scales.size() != 2) r.fail("input_scales: expected 0 or 2 values");
  op->channels = r.size("channels", std::size_t(1) << 20);
  op->integer_output = r.flag("integer_output");
  op->scheme = requantization_from_string(r.text("requantization"));
  op->out = detail::read_grid(r, "out");
  op->prepare();
  return op;
}

}  // namespace xq::deploy
