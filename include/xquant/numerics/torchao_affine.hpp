#pragma once
/// \file torchao_affine.hpp
/// torchao's integer QAT numerics (quantization/qat/fake_quantizer.py, quant_primitives.py),
/// quantize then dequantize, forward and autograd, bit for bit (docs/semantics.md §9):
///
///  | scheme (peer) | per | scale, zero point | quantize | dequantize | gradient |
///  |---|---|---|---|---|---|
///  | intx_symmetric (`IntxFakeQuantizer`, `IntxFakeQuantizeConfig(torch.intB, group_size=G)`: Int8DynamicActivationIntxWeightConfig's weights; 8da4w: B = 4) | group of G along the axis (0: the whole row) | max(−min⁻, max⁺) / ((qmax − qmin) / 2), clamped ≥ eps; zp 0 | clamp(round(x · (1 / s)) + zp, qmin, qmax) | (q − zp) · s | dy · s where the rounded value is **strictly** inside (qmin, qmax) (torch 2.15's clamp gives 0 at the bounds), times 1 / s |
///  | intx_per_token (`IntxFakeQuantizeConfig(torch.intB, "per_token", is_symmetric=False)`: the 8da4w activations) | row | (max⁺ − min⁻) / (qmax − qmin), ≥ eps; zp = clamp(qmin − round(min⁻ / s)) | as above | as above | as above |
///  | int4_weight_only (`Int4WeightFakeQuantizer`, activation_dtype bf16: Int4WeightOnlyConfig's QAT) | group of G | s = max(max − min, 1e-6) / 15, float zero point min + 8 · s | clamp(round((x − min) / s), 0, 15) | (q − 8) · s + (min + 8 · s) | torch's autograd through s, min and max too (sums in torch's order, accumulated in its engine's order) |
///
/// min⁻ = min(min, 0), max⁺ = max(max, 0); eps defaults to float32's smallest normal (torchao's
/// `eps=None`). Rounding is to nearest even. Scales and zero points are computed from each
/// tensor (`is_dynamic=True`); the state a quantizer keeps is (scale, zero point) per group or
/// row for the intx schemes and (min, max) per group for int4_weight_only (its scale and
/// zero point derive from them). torchao asserts that the axis length is a multiple of the
/// group size (argument_error here too) and refuses a per-token last axis of length 1 (taken
/// here: one value per row).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../kernels/block_scaled.hpp"
#include "../kernels/math.hpp"
#include "../kernels/parallel.hpp"
#include "../kernels/policy.hpp"
#include "low_bit_specs.hpp"

namespace xq::low_bit {

/// What an integer quantization keeps, two floats per group or row: (scale, zero point) for
/// the intx schemes, (min, max) for int4_weight_only.
struct intx_state {
  std::vector<float> values;
};

/// "intx_symmetric", "intx_per_token", "int4_weight_only".
XQ_DECL const char* to_string(intx_scheme s);
/// "int4 intx_symmetric group 32 axis -1" style.
XQ_DECL std::string describe(const intx_spec& s);
/// Bits per value stored: the integer's, plus a float32 scale (and for the asymmetric schemes a
/// zero point, 8 bits for intx_per_token, 32 for int4_weight_only's float one) per group of
/// `group_size` (or per row of `row_length`).
XQ_DECL double bits_per_value(const intx_spec& s, std::size_t row_length);
/// The group layout (checked: argument_error naming `where`).
XQ_DECL kernels::block_layout intx_layout(const tensor& x, const intx_spec& s, const std::string& where);
/// Scale and zero point per group (int4_weight_only: the float zero point min + 8 · scale).
XQ_DECL void intx_scales(const intx_spec& s, const intx_state& state, std::vector<float>& scale,
                         std::vector<float>& zero_point);

template <class Policy = default_policy>
tensor intx_quantize_dequantize(const tensor& x, const intx_spec& s, const std::string& where = "xq::low_bit::intx",
                                intx_state* state = nullptr, bool* mask = nullptr);
template <class Policy = default_policy>
tensor intx_apply(const tensor& x, const intx_spec& s, const intx_state& state,
                  const std::string& where = "xq::low_bit::intx", bool* mask = nullptr);
/// The input gradient: from the forward's mask for the intx schemes, torchao's autograd
/// through the group's min and max for int4_weight_only (which needs x, not the mask).
template <class Policy = default_policy>
tensor intx_backward(const tensor& x, const tensor& dy, const intx_spec& s, const intx_state& state, const bool* mask,
                     const std::string& where = "xq::low_bit::intx");

/// torchao's range learning (intx_spec::range_learning): the first call's state — each
/// group's dynamic scale clamped to >= 1e-9, zero points 0 — from which the scales are
/// learned; intx_apply and intx_backward then quantize with the learned state.
XQ_DECL intx_state intx_learned_state(const tensor& x, const intx_spec& s,
                                      const std::string& where = "xq::low_bit::intx");
/// The learned scales' gradient (one per group, in the state's order): torch's autograd of
/// the fake quantization with the scales as parameters (see learned_scale_group_gradient).
XQ_DECL std::vector<float> intx_learned_scale_gradient(const tensor& x, const tensor& dy, const intx_spec& s,
                                                       const intx_state& state,
                                                       const std::string& where = "xq::low_bit::intx");

}  // namespace xq::low_bit

namespace xq::low_bit::detail {

/// One group: q = clamp(rne(x · inv) + zp, qmin, qmax), (q − zp) · s.
struct intx_kernel {
  float scale = 1.0f, inv = 1.0f, zero_point = 0.0f, qmin = -8.0f, qmax = 7.0f;

  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V rounded(const V& x) const {
    return math::round_half_even(x * V(inv)) + V(zero_point);
  }
  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V forward(const V& x) const {
    const V q = math::min(math::max(rounded(x), V(qmin)), V(qmax));  // torch.clamp keeps NaN
    return (q - V(zero_point)) * V(scale);
  }
  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE auto passes(const V& x) const {
    const V r = rounded(x);
    return math::logical_and(r > V(qmin), r < V(qmax));
  }
  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V backward(const V& dy, const V& m) const {
    return math::select(m != V(0.0f), dy * V(scale), V(0.0f)) * V(inv);
  }
};

/// int4_weight_only: q = clamp(rne((x − min) / s), 0, 15); (q − 8) · s + zp.
struct int4_weight_only_kernel {
  float min = 0.0f, scale = 1.0f, zero_point = 0.0f;

  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V forward(const V& x) const {
    const V r = math::round_half_even((x - V(min)) / V(scale));
    const V q = math::min(math::max(r, V(0.0f)), V(15.0f));
    return (q - V(8.0f)) * V(scale) + V(zero_point);
  }
};

struct intx_format {
  static constexpr kernels::block_statistic statistic = kernels::block_statistic::min_max;
  static constexpr std::size_t state_size = 2;
  static constexpr std::size_t param_count = 3;
  static constexpr bool identity_gradient = false;
  using kernel_type = intx_kernel;

  intx_scheme scheme = intx_scheme::intx_symmetric;
  float qmin = -8.0f, qmax = 7.0f, eps = 1.17549435e-38f;

  XQ_DECL static intx_format make(const intx_spec& s);

  template <class V>
  XQ_HOST_DEVICE void block_state(const V& lo, const V& hi, V* state) const {
    const V min_neg = math::min(lo, V(0.0f)), max_pos = math::max(hi, V(0.0f));  // NaN stays NaN
    if (scheme == intx_scheme::intx_symmetric) {
      const V amax = math::max(math::flip_sign_bit(min_neg), max_pos);  // torch.max(-min_neg, max_pos)
      state[0] = math::max(amax / V((qmax - qmin) / 2.0f), V(eps));  // torch.clamp(min=eps) keeps NaN
      state[1] = V(0.0f);
      return;
    }
    const V scale = math::max((max_pos - min_neg) / V(qmax - qmin), V(eps));
    V zp = V(qmin) - math::round_half_even(min_neg / scale);
    zp = math::min(math::max(zp, V(qmin)), V(qmax));
    state[0] = scale;
    state[1] = math::select(zp == zp, zp, V(-2147483648.0f));  // .to(torch.int32) of a NaN on x86
  }

  template <class V>
  XQ_HOST_DEVICE void kernel_params(const V* state, V* p) const {
    p[0] = state[0];
    p[1] = V(1.0f) / state[0];  // `1.0 / scale`: Tensor.__rtruediv__, reciprocal times 1
    p[2] = state[1];
  }

  XQ_HOST_DEVICE intx_kernel kernel(const float* p) const {
    intx_kernel k;
    k.scale = p[0];
    k.inv = p[1];
    k.zero_point = p[2];
    k.qmin = qmin;
    k.qmax = qmax;
    return k;
  }
};

struct int4_weight_only_format {
  static constexpr kernels::block_statistic statistic = kernels::block_statistic::min_max;
  static constexpr std::size_t state_size = 2;
  static constexpr std::size_t param_count = 3;
  static constexpr bool identity_gradient = true;  // its backward is intx_backward's own
  using kernel_type = int4_weight_only_kernel;

  template <class V>
  XQ_HOST_DEVICE void block_state(const V& lo, const V& hi, V* state) const {
    state[0] = lo;
    state[1] = hi;
  }
  template <class V>
  XQ_HOST_DEVICE static V scale_of(const V& min, const V& max) {
    return math::max(max - min, V(1e-6f)) / V(15.0f);
  }
  template <class V>
  XQ_HOST_DEVICE void kernel_params(const V* state, V* p) const {
    p[0] = state[0];
    p[1] = scale_of(state[0], state[1]);
    p[2] = p[0] + p[1] * V(8.0f);
  }
  XQ_HOST_DEVICE int4_weight_only_kernel kernel(const float* p) const {
    int4_weight_only_kernel k;
    k.min = p[0];
    k.scale = p[1];
    k.zero_point = p[2];
    return k;
  }
};

/// A group's sum as torch's sum_to_size over the last dim gives it: 0 + its vectorized sum
/// (compiled: torchao_affine.ipp).
XQ_DECL float int4_group_sum(const float* p, std::size_t n);

/// int4_weight_only's autograd for one group of n contiguous values (its state mn, mx): the
/// graph of Int4WeightFakeQuantizer._bf16_activations_forward node by node, each gradient
/// that several nodes send to one tensor added in the order torch's engine runs those nodes
/// (the most recently created first): scale gets (fq · scale) + (the division) + (zero_point's
/// scale · 8); min gets (w − min) + (zero_point) + (max − min); w gets (w − min) + amin + amax.
struct int4_backward_step {
  float mn, s;
  template <class V>
  XQ_ALWAYS_INLINE void operator()(const V& xv, const V& dyv, V& gn, V& c1, V& c2, V& m1) const {
    const V num = xv - V(mn);
    const V r = math::round_half_even(num / V(s));
    const V k2 = math::min(math::max(r, V(0.0f)), V(15.0f)) - V(8.0f);
    const V gt = math::select(math::logical_and(r > V(0.0f), r < V(15.0f)), dyv * V(s), V(0.0f));  // clamp: 0 at 0, 15
    gn = gt / V(s);
    c1 = dyv * k2;
    c2 = math::flip_sign_bit(gt) * ((num / V(s)) / V(s));
    m1 = math::flip_sign_bit(gn);
  }
};

struct int4_backward_input_step {
  float mn, mx, per_min, per_max;
  template <class V>
  XQ_ALWAYS_INLINE V operator()(const V& xv, const V& gn) const {
    return (gn + V(per_min) * math::as_float(xv == V(mn))) + V(per_max) * math::as_float(xv == V(mx));
  }
};

template <class Policy>
void int4_weight_only_group_backward(float mn, float mx, const float* x, const float* dy, float* dx, std::size_t n,
                                     float* gnum, float* c1p, float* c2p, float* m1p) {
  const float s = int4_weight_only_format::scale_of(mn, mx);
  const int4_backward_step step{mn, s};
  std::size_t i = 0;
  if constexpr (is_simd_policy_v<Policy>) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    for (; i + B::size <= n; i += B::size) {
      B gn, c1, c2, m1;
      step(B::load_unaligned(x + i), B::load_unaligned(dy + i), gn, c1, c2, m1);
      gn.store_unaligned(gnum + i);
      c1.store_unaligned(c1p + i);
      c2.store_unaligned(c2p + i);
      m1.store_unaligned(m1p + i);
    }
  }
  for (; i < n; ++i) step(x[i], dy[i], gnum[i], c1p[i], c2p[i], m1p[i]);
  const float zp = int4_group_sum(dy, n);
  const float grad_scale = (int4_group_sum(c1p, n) + int4_group_sum(c2p, n)) + zp * 8.0f;
  const float grad_c = grad_scale / 15.0f;
  const float grad_d = mx - mn > 1e-6f ? grad_c : 0.0f;  // clamp(min=1e-6)'s backward, strict
  const float grad_min = (int4_group_sum(m1p, n) + zp) + math::flip_sign_bit(grad_d);
  std::size_t count_min = 0, count_max = 0;
  for (std::size_t j = 0; j < n; ++j) {
    count_min += x[j] == mn;
    count_max += x[j] == mx;
  }
  const int4_backward_input_step out{mn, mx, grad_min / float(count_min), grad_d / float(count_max)};
  i = 0;
  if constexpr (is_simd_policy_v<Policy>) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    for (; i + B::size <= n; i += B::size) out(B::load_unaligned(x + i), B::load_unaligned(gnum + i)).store_unaligned(dx + i);
  }
  for (; i < n; ++i) dx[i] = out(x[i], gnum[i]);
}

template <class Policy>
void int4_weight_only_backward(const kernels::block_layout& bl, const float* x, const float* dy, const float* state,
                               float* dx) {
  const std::size_t G = bl.block, groups = bl.block_count(), L = bl.shape.channels, inner = bl.shape.inner;
  const std::size_t nb = bl.blocks_per_row();
  const auto run = [&](std::size_t begin, std::size_t end) {
    std::vector<float> xs(G), dys(G), dxs(G), gnum(G), c1(G), c2(G), m1(G);
    for (std::size_t g = begin; g < end; ++g) {
      const std::size_t row = g / nb, b = g % nb;
      if (inner == 1) {
        const std::size_t at = row * L + b * G;
        int4_weight_only_group_backward<Policy>(state[2 * g], state[2 * g + 1], x + at, dy + at, dx + at, G,
                                                gnum.data(), c1.data(), c2.data(), m1.data());
        continue;
      }
      const std::size_t o = row / inner, i = row % inner;  // a group along a middle axis: gathered
      for (std::size_t j = 0; j < G; ++j) {
        xs[j] = x[(o * L + b * G + j) * inner + i];
        dys[j] = dy[(o * L + b * G + j) * inner + i];
      }
      const std::size_t at = (o * nb + b) * inner + i;  // the forward's state order (outer, block, inner)
      int4_weight_only_group_backward<Policy>(state[2 * at], state[2 * at + 1], xs.data(), dys.data(), dxs.data(), G,
                                              gnum.data(), c1.data(), c2.data(), m1.data());
      for (std::size_t j = 0; j < G; ++j) dx[(o * L + b * G + j) * inner + i] = dxs[j];
    }
  };
  kernels::parallel_chunks(bl.shape.size() >= XQ_PARALLEL_THRESHOLD ? kernels::max_threads() : 1, groups, 1, run);
}

}  // namespace xq::low_bit::detail

namespace xq::low_bit {

template <class Policy>
tensor intx_quantize_dequantize(const tensor& x, const intx_spec& s, const std::string& where, intx_state* state,
                                bool* mask) {
  const kernels::block_layout bl = intx_layout(x, s, where);
  intx_state local;
  intx_state& st = state ? *state : local;
  st.values.assign(bl.block_count() * 2, 0.0f);
  tensor y = tensor::from_shape(x.shape());
  if (s.scheme == intx_scheme::int4_weight_only) {
    kernels::block_scaled_forward<Policy>(detail::int4_weight_only_format{}, bl, x.data(), y.data(), st.values.data(),
                                          mask);
  } else {
    kernels::block_scaled_forward<Policy>(detail::intx_format::make(s), bl, x.data(), y.data(), st.values.data(), mask);
  }
  return y;
}

template <class Policy>
tensor intx_apply(const tensor& x, const intx_spec& s, const intx_state& state, const std::string& where, bool* mask) {
  const kernels::block_layout bl = intx_layout(x, s, where);
  if (state.values.size() != bl.block_count() * 2)
    throw argument_error(where, xq::detail::concat("a state of ", bl.block_count() * 2, " values for this tensor"),
                         xq::detail::concat(state.values.size(), " values"));
  tensor y = tensor::from_shape(x.shape());
  if (s.scheme == intx_scheme::int4_weight_only)
    kernels::block_scaled_apply<Policy>(detail::int4_weight_only_format{}, bl, x.data(), y.data(), state.values.data(),
                                        mask);
  else
    kernels::block_scaled_apply<Policy>(detail::intx_format::make(s), bl, x.data(), y.data(), state.values.data(), mask);
  return y;
}

template <class Policy>
tensor intx_backward(const tensor& x, const tensor& dy, const intx_spec& s, const intx_state& state, const bool* mask,
                     const std::string& where) {
  const kernels::block_layout bl = intx_layout(x, s, where);
  if (dy.shape() != x.shape()) throw argument_error(where, "dy of x's shape", "another shape");
  tensor dx = tensor::from_shape(x.shape());
  if (s.scheme == intx_scheme::int4_weight_only) {
    detail::int4_weight_only_backward<Policy>(bl, x.data(), dy.data(), state.values.data(), dx.data());
    return dx;
  }
  if (mask == nullptr) throw argument_error(where, "the forward's gradient mask", "none");
  kernels::block_scaled_backward<Policy>(detail::intx_format::make(s), bl, mask, dy.data(), dx.data(),
                                         state.values.data());
  return dx;
}

}  // namespace xq::low_bit

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/torchao_affine.ipp"
#endif
