#pragma once
/// \file float8_scaled.ipp
/// FP8 per tensor / per row: names, layouts, torchao's backward (numerics/float8_scaled.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "../float8_scaled.hpp"
#include "../torch_cpu_kernels.hpp"

namespace xq::low_bit {

XQ_DECL const char* to_string(fp8_variant v) {
  switch (v) {
    case fp8_variant::torchao: return "torchao";
    case fp8_variant::transformer_engine: return "transformer_engine";
  }
  throw argument_error("xq::low_bit::fp8_variant", "torchao or transformer_engine",
                       xq::detail::concat("value ", static_cast<int>(v)));
}

XQ_DECL std::string describe(const fp8_spec& s) {
  return xq::detail::concat(info(s.element).name, " ", to_string(s.variant), " ",
                            s.granularity == fp8_granularity::per_tensor ? "per_tensor" : "per_row", " axis ", s.axis);
}

XQ_DECL kernels::block_layout fp8_layout(const tensor& x, const fp8_spec& s, const std::string& where) {
  to_string(s.variant);
  if (s.element != element_type::e4m3fn && s.element != element_type::e5m2)
    throw argument_error(where, "an FP8 element: fp8_e4m3fn or fp8_e5m2", to_string(s.element));
  if (s.granularity != fp8_granularity::per_tensor && s.granularity != fp8_granularity::per_row)
    throw argument_error(where, "per_tensor or per_row", xq::detail::concat("granularity ", int(s.granularity)));
  const long r = long(x.dimension());
  kernels::block_layout bl;
  if (s.granularity == fp8_granularity::per_tensor) {
    bl.shape.channels = x.size();
    bl.block = std::max<std::size_t>(x.size(), 1);
    return bl;
  }
  if (r == 0 || s.axis < -r || s.axis >= r)
    throw argument_error(where, xq::detail::concat("a row axis in [", -r, ", ", r, ")"),
                         xq::detail::concat("axis ", s.axis, " of a rank-", r, " tensor"));
  bl.shape = kernels::channel_layout::of(x.shape(), s.axis, where.c_str());
  bl.block = std::max<std::size_t>(bl.shape.channels, 1);
  return bl;
}

namespace detail {

XQ_DECL void fp8_torchao_backward(const fp8_spec& s, const kernels::block_layout& bl, const float* x,
                                  const float* dy, const float* amax, float* dx) {
  fp8_format<fp8_variant::torchao> f;
  f.cast = element_cast::make(s.element, torch_rule(s.element));
  f.max = info(s.element).max;
  const std::size_t rows = s.granularity == fp8_granularity::per_tensor ? 1 : bl.rows();
  const std::size_t cols = s.granularity == fp8_granularity::per_tensor ? bl.shape.size() : bl.shape.channels;
  const std::size_t inner = s.granularity == fp8_granularity::per_tensor ? 1 : bl.shape.inner;
  const std::size_t L = cols;
  // Rows gathered contiguous (a middle axis), then the products whose sums give d scale.
  std::vector<float> xs(rows * cols), gs(rows * cols), prod_a(rows * cols), prod_b(rows * cols), g(rows * cols);
  const auto at = [&](std::size_t row, std::size_t c) {  // element c of row `row` in x's layout
    if (inner == 1) return row * L + c;
    const std::size_t o = row / inner, i = row % inner;
    return (o * L + c) * inner + i;
  };
  for (std::size_t r = 0; r < rows; ++r) {
    const float sc = amax[r] / f.max;
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t k = r * cols + c, a = at(r, c);
      const float v = x[a] / sc;
      const float clamped = math::min(math::max(v, -f.max), f.max);
      const float q = f.cast.forward(clamped);
      // ToCopyBackward: dy · s cast to the element type (torch's cast) and back
      const float gq = f.cast.forward(dy[a] * sc);
      const float gm = (v > -f.max && v < f.max) ? gq : 0.0f;  // clamp's backward: 0 at the bounds
      g[k] = gm;
      prod_a[k] = dy[a] * q;
      prod_b[k] = -gm * ((x[a] / sc) / sc);
      xs[k] = x[a];
    }
  }
  std::vector<float> ds_a(rows), ds_b(rows);
  if (s.granularity == fp8_granularity::per_tensor) {
    ds_a[0] = torch::cpu::sum(prod_a.data(), prod_a.size(), torch::cpu::reduction_threads());
    ds_b[0] = torch::cpu::sum(prod_b.data(), prod_b.size(), torch::cpu::reduction_threads());
  } else {
    kernels::channel_layout l;
    l.outer = 1;
    l.channels = rows;
    l.inner = cols;
    torch::cpu::sum_except_axis(prod_a.data(), l, ds_a.data());
    torch::cpu::sum_except_axis(prod_b.data(), l, ds_b.data());
  }
  for (std::size_t r = 0; r < rows; ++r) {
    const float sc = amax[r] / f.max;
    const float damax = (ds_a[r] + ds_b[r]) / f.max;
    std::size_t count = 0;
    for (std::size_t c = 0; c < cols; ++c) count += std::fabs(xs[r * cols + c]) == amax[r];
    const float per = damax / float(count);  // amax's backward: grad / count at each maximum
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t k = r * cols + c;
      const float xv = xs[k];
      const float is_max = std::fabs(xv) == amax[r] ? 1.0f : 0.0f;
      const float sgn = xv > 0.0f ? 1.0f : xv < 0.0f ? -1.0f : (xv == 0.0f ? 0.0f : xv);  // torch.sgn
      dx[at(r, c)] = g[k] / sc + (per * is_max) * sgn;
    }
  }
}

}  // namespace detail

XQ_DECL std::vector<float> fp8_scales(const fp8_spec& s, const fp8_state& state) {
  std::vector<float> out(state.amax.size());
  detail::visit_fp8(s, [&](const auto& f) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      float p[2];
      f.kernel_params(&state.amax[i], p);
      out[i] = p[1];
    }
  });
  return out;
}

}  // namespace xq::low_bit
