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

XQ_DECL void int4_weight_only_backward(const kernels::block_layout& bl, const float* x, const float* dy,
                                       const float* state, float* dx) {
  // The autograd graph of Int4WeightFakeQuantizer._bf16_activations_forward, node by node, with
  // each gradient that several nodes send to one tensor added in the order torch's engine runs
  // those nodes (the most recently created first): scale gets (fq·scale) + (the division) +
  // (zero_point's scale·8); min gets (w − min) + (zero_point) + (max − min); w gets (w − min) +
  // amin + amax. Sums over a group are torch's row sums (sum_to_size over the last dim).
  const std::size_t G = bl.block, groups = bl.block_count(), L = bl.shape.channels, inner = bl.shape.inner;
  const std::size_t nb = bl.blocks_per_row();
  const auto at = [&](std::size_t g, std::size_t j) {  // element j of group g in x's layout
    const std::size_t row = g / nb, b = g % nb;
    if (inner == 1) return row * L + b * G + j;
    const std::size_t o = row / inner, i = row % inner;
    return (o * L + b * G + j) * inner + i;
  };
  std::vector<float> grad_t(groups * G), c1p(groups * G), c2p(groups * G), m1p(groups * G), dyp(groups * G);
  for (std::size_t g = 0; g < groups; ++g) {
    const float mn = state[2 * g], mx = state[2 * g + 1];
    const float s = int4_weight_only_format::scale_of(mn, mx);
    for (std::size_t j = 0; j < G; ++j) {
      const std::size_t k = g * G + j, a = at(g, j);
      const float num = x[a] - mn;
      const float r = math::round_half_even(num / s);
      const float q = math::min(math::max(r, 0.0f), 15.0f);
      const float k2 = q - 8.0f;
      const float gk2 = dy[a] * s;
      const float gt = (r > 0.0f && r < 15.0f) ? gk2 : 0.0f;  // clamp's backward: 0 at the bounds
      const float gnum = gt / s;
      grad_t[k] = gnum;
      c1p[k] = dy[a] * k2;
      c2p[k] = -gt * ((num / s) / s);
      m1p[k] = -gnum;
      dyp[k] = dy[a];
    }
  }
  kernels::channel_layout rows;
  rows.outer = 1;
  rows.channels = groups;
  rows.inner = G;
  std::vector<float> c1(groups), c2(groups), m1(groups), zp(groups);
  torch::cpu::sum_except_axis(c1p.data(), rows, c1.data());
  torch::cpu::sum_except_axis(c2p.data(), rows, c2.data());
  torch::cpu::sum_except_axis(m1p.data(), rows, m1.data());
  torch::cpu::sum_except_axis(dyp.data(), rows, zp.data());
  for (std::size_t g = 0; g < groups; ++g) {
    const float mn = state[2 * g], mx = state[2 * g + 1];
    const float grad_scale = (c1[g] + c2[g]) + zp[g] * 8.0f;
    const float grad_c = grad_scale / 15.0f;
    const float d = mx - mn;
    const float grad_d = d > 1e-6f ? grad_c : 0.0f;  // clamp(min=1e-6)'s backward, strict
    const float grad_max = grad_d;
    const float grad_min = (m1[g] + zp[g]) + (-grad_d);
    std::size_t count_min = 0, count_max = 0;
    for (std::size_t j = 0; j < G; ++j) {
      const float v = x[at(g, j)];
      count_min += v == mn;
      count_max += v == mx;
    }
    const float per_min = grad_min / float(count_min), per_max = grad_max / float(count_max);
    for (std::size_t j = 0; j < G; ++j) {
      const std::size_t a = at(g, j);
      const float v = x[a];
      dx[a] = (grad_t[g * G + j] + per_min * (v == mn ? 1.0f : 0.0f)) + per_max * (v == mx ? 1.0f : 0.0f);
    }
  }
}

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
