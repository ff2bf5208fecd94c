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

XQ_DECL float fp8_row_sum(const float* p, std::size_t n, bool whole_tensor) {
  // sum_to_size of a per-row scale: each row's vectorized sum onto a zero output (0 + sum,
  // torch.sum's own); of a per-tensor scale: the full reduction, split as torch splits it
  return whole_tensor ? torch::cpu::sum(p, n, torch::cpu::reduction_threads()) : torch::cpu::sum(p, n);
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
