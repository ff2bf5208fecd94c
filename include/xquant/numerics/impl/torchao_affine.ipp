#pragma once
/// \file torchao_affine.ipp
/// torchao's integer schemes: names, layouts, int4_weight_only's autograd
/// (numerics/torchao_affine.hpp).

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "../torch_cpu_kernels.hpp"
#include "../torchao_affine.hpp"

namespace xq::low_bit {

XQ_DECL const char* to_string(intx_scheme s) {
  switch (s) {
    case intx_scheme::intx_symmetric: return "intx_symmetric";
    case intx_scheme::intx_per_token: return "intx_per_token";
    case intx_scheme::int4_weight_only: return "int4_weight_only";
  }
  throw argument_error("xq::low_bit::intx_scheme", "intx_symmetric, intx_per_token or int4_weight_only",
                       xq::detail::concat("value ", static_cast<int>(s)));
}

XQ_DECL std::string describe(const intx_spec& s) {
  if (s.scheme == intx_scheme::intx_per_token) return xq::detail::concat("int", s.bits, " intx_per_token axis ", s.axis);
  return xq::detail::concat("int", s.bits, " ", to_string(s.scheme), " group ",
                            s.group_size == 0 ? std::string("row") : std::to_string(s.group_size), " axis ", s.axis);
}

XQ_DECL double bits_per_value(const intx_spec& s, std::size_t row_length) {
  const double group = s.scheme == intx_scheme::intx_per_token || s.group_size == 0 ? double(row_length)
                                                                                   : double(s.group_size);
  const double per_group = s.scheme == intx_scheme::intx_symmetric ? 32.0
                           : s.scheme == intx_scheme::intx_per_token ? 32.0 + 8.0
                                                                      : 32.0 + 32.0;
  return double(s.bits) + (group > 0 ? per_group / group : 0.0);
}

XQ_DECL kernels::block_layout intx_layout(const tensor& x, const intx_spec& s, const std::string& where) {
  to_string(s.scheme);
  if (s.scheme == intx_scheme::int4_weight_only && s.bits != 4)
    throw argument_error(where, "4 bits for int4_weight_only", xq::detail::concat(s.bits, " bits"));
  if (s.bits < 2 || s.bits > 8) throw argument_error(where, "bits in [2, 8]", xq::detail::concat(s.bits));
  if (s.group_size < 0) throw argument_error(where, "a group size >= 0 (0: the whole axis)", xq::detail::concat(s.group_size));
  if (!(s.eps >= 0.0f)) throw argument_error(where, "eps >= 0", xq::detail::concat(s.eps));
  const long r = long(x.dimension());
  if (r == 0 || s.axis < -r || s.axis >= r)
    throw argument_error(where, xq::detail::concat("an axis in [", -r, ", ", r, ")"),
                         xq::detail::concat("axis ", s.axis, " of a rank-", r, " tensor"));
  kernels::block_layout bl;
  bl.shape = kernels::channel_layout::of(x.shape(), s.axis, where.c_str());
  const std::size_t L = bl.shape.channels;
  const bool whole = s.scheme == intx_scheme::intx_per_token || s.group_size == 0;
  bl.block = whole ? std::max<std::size_t>(L, 1) : std::size_t(s.group_size);
  if (!whole && L % bl.block != 0)
    throw argument_error(where,
                         xq::detail::concat("an axis length that is a multiple of the group size ", s.group_size,
                                            " (torchao asserts it)"),
                         xq::detail::concat("length ", L, " on axis ", s.axis));
  return bl;
}

namespace detail {

XQ_DECL intx_format intx_format::make(const intx_spec& s) {
  intx_format f;
  f.scheme = s.scheme;
  if (s.scheme == intx_scheme::intx_symmetric) {
    f.qmin = -std::ldexp(1.0f, s.bits - 1);
    f.qmax = std::ldexp(1.0f, s.bits - 1) - 1.0f;
  } else {  // torch.intB for per-token too: a signed range
    f.qmin = -std::ldexp(1.0f, s.bits - 1);
    f.qmax = std::ldexp(1.0f, s.bits - 1) - 1.0f;
  }
  f.eps = s.eps > 0.0f ? s.eps : 1.17549435e-38f;  // torch.finfo(torch.float32).smallest_normal
  return f;
}

XQ_DECL float int4_group_sum(const float* p, std::size_t n) { return torch::cpu::sum(p, n); }

}  // namespace detail

XQ_DECL void intx_scales(const intx_spec& s, const intx_state& state, std::vector<float>& scale,
                         std::vector<float>& zero_point) {
  const std::size_t n = state.values.size() / 2;
  scale.resize(n);
  zero_point.resize(n);
  for (std::size_t g = 0; g < n; ++g) {
    if (s.scheme == intx_scheme::int4_weight_only) {
      float p[3];
      detail::int4_weight_only_format{}.kernel_params(&state.values[2 * g], p);
      scale[g] = p[1];
      zero_point[g] = p[2];
    } else {
      scale[g] = state.values[2 * g];
      zero_point[g] = state.values[2 * g + 1];
    }
  }
}

}  // namespace xq::low_bit
