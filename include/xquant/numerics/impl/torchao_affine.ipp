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
                            s.group_size == 0 ? std::string("row") : std::to_string(s.group_size), " axis ", s.axis,
                            s.range_learning ? " range_learning" : "");
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
  if (s.range_learning && s.scheme != intx_scheme::intx_symmetric)
    throw argument_error(where, "range learning on intx_symmetric groups (torchao's weights)", to_string(s.scheme));
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

/// One group's learned-scale gradient: Σ dy·q (the dequantizing product's) plus the
/// reciprocal's path, −(Σ g·x · 1) · (r · r) with r = 1 / scale and g = dy · scale where the
/// rounded value is strictly inside (qmin, qmax) (torch's clamp), else 0; each sum over the
/// group in torch's order.
inline float learned_scale_group_gradient(const intx_kernel& k, const float* x, const float* dy, float* through_product,
                                          float* through_reciprocal, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    const float r = k.rounded(x[j]);
    const float q = math::min(math::max(r, k.qmin), k.qmax);  // torch.clamp keeps NaN
    through_product[j] = dy[j] * (q - k.zero_point);
    through_reciprocal[j] = (r > k.qmin && r < k.qmax ? dy[j] * k.scale : 0.0f) * x[j];
  }
  const float product = int4_group_sum(through_product, n);
  const float reciprocal = math::flip_sign_bit(int4_group_sum(through_reciprocal, n) * 1.0f) * (k.inv * k.inv);
  return product + reciprocal;
}

}  // namespace detail

XQ_DECL intx_state intx_learned_state(const tensor& x, const intx_spec& s, const std::string& where) {
  intx_layout(x, s, where);  // checks the spec (range learning: intx_symmetric only)
  intx_spec dynamic = s;
  dynamic.range_learning = false;
  intx_state st;
  // The scalar walk (the SIMD one gives the same bits: tested): a non-template function
  // instantiates what it calls in every translation unit, CUDA's included.
  intx_quantize_dequantize<scalar_policy>(x, dynamic, where, &st, nullptr);
  for (std::size_t g = 0; g < st.values.size() / 2; ++g) {
    float& scale = st.values[2 * g];
    if (scale < 1e-9f) scale = 1e-9f;  // torch.clamp(scale, min=1e-9): NaN stays NaN
    st.values[2 * g + 1] = 0.0f;       // zero_point.zero_()
  }
  return st;
}

XQ_DECL std::vector<float> intx_learned_scale_gradient(const tensor& x, const tensor& dy, const intx_spec& s,
                                                       const intx_state& state, const std::string& where) {
  const kernels::block_layout bl = intx_layout(x, s, where);
  if (dy.shape() != x.shape()) throw argument_error(where, "dy of x's shape", "another shape");
  if (state.values.size() != bl.block_count() * 2)
    throw argument_error(where, xq::detail::concat("a state of ", bl.block_count() * 2, " values for this tensor"),
                         xq::detail::concat(state.values.size(), " values"));
  const detail::intx_format f = detail::intx_format::make(s);
  const std::size_t G = bl.block, L = bl.shape.channels, inner = bl.shape.inner, nb = bl.blocks_per_row();
  std::vector<float> ds(bl.block_count());
  std::vector<float> xs(G), dys(G), a(G), b(G);
  for (std::size_t g = 0; g < bl.block_count(); ++g) {
    float p[3];
    f.kernel_params(&state.values[2 * g], p);
    const detail::intx_kernel k = f.kernel(p);
    // The state's order is (outer, block, inner); a group along a middle axis is gathered.
    const std::size_t o = g / (nb * inner), blk = (g / inner) % nb, i = g % inner;
    for (std::size_t j = 0; j < G; ++j) {
      const std::size_t at = (o * L + blk * G + j) * inner + i;
      xs[j] = x.data()[at];
      dys[j] = dy.data()[at];
    }
    ds[g] = detail::learned_scale_group_gradient(k, xs.data(), dys.data(), a.data(), b.data(), G);
  }
  return ds;
}

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
