#pragma once
/// \file float8_scaled.hpp
/// FP8 (E4M3FN or E5M2) with one float32 scale per tensor or per row, quantize then
/// dequantize, as torchao and TransformerEngine compute it, bit for bit (docs/semantics.md §9):
///
///  | variant (peer function) | scale s from amax | quantize | dequantize | gradient |
///  |---|---|---|---|---|
///  | torchao (`Float8FakeQuantizer`: `_choose_scale_float8`, `_quantize_affine_float8`, `_dequantize_affine_float8`; Float8DynamicActivationFloat8WeightConfig's QAT) | amax / max (0 → a 0/0 NaN, as torchao computes it) | x / s, clamp ±max, RNE cast (torch's) | q · s | torch's autograd of those ops: dy · s is cast to the element type on its way back through the cast (`.to(float32)`'s backward), masked where x / s is **strictly** inside ±max (torch 2.15's clamp gives 0 at the bounds), divided by s; and the scale's gradient Σ(dy · q) − Σ(g · ((x / s) / s)) reaches the amax elements: / max, / their count, · sgn x |
///  | transformer_engine (`reference_current_scaling.py::CurrentScalingQuantizerRef`; per row: that reference on each row) | S = max / amax (Inf → FLT_MAX; amax 0 → 1), s = 1 / S | x · S, RNE cast (saturating for E4M3, Inf past E5M2's max) | q · s | (TE has no fake quantization: the identity) |
///
/// "Per row": one scale per slice along `axis` (default the last: torchao's PerRow, a token's
/// row; a Keras dense kernel (in, out) scaled per output channel takes axis 0). The state a
/// quantizer keeps is the amax of each row (or of the tensor): both peers derive their scale
/// from it. Sums in torchao's backward follow torch's CPU reduction order (per row: each row's
/// vectorized sum; per tensor: the cascade sum with `torch::cpu::reduction_threads()` threads).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../kernels/block_scaled.hpp"
#include "../kernels/math.hpp"
#include "../kernels/parallel.hpp"
#include "../kernels/policy.hpp"
#include "low_bit_float.hpp"
#include "low_bit_specs.hpp"

namespace xq::low_bit {

/// What an FP8 quantization keeps: the amax of the tensor (per_tensor) or of each row, rows in
/// the row-major order of the other axes.
struct fp8_state {
  std::vector<float> amax;
};

/// "torchao", "transformer_engine".
XQ_DECL const char* to_string(fp8_variant v);
/// "fp8_e4m3fn torchao per_row axis -1" style.
XQ_DECL std::string describe(const fp8_spec& s);
/// The row layout (per_tensor: one block over the whole tensor), checked (argument_error naming
/// `where` for an element other than E4M3FN/E5M2 or an axis outside x's rank).
XQ_DECL kernels::block_layout fp8_layout(const tensor& x, const fp8_spec& s, const std::string& where);
/// The dequantization scale of each row (torchao: amax / max; TE: 1 / S).
XQ_DECL std::vector<float> fp8_scales(const fp8_spec& s, const fp8_state& state);

/// The quantize-dequantize of x (the state written to `state` when not null).
template <class Policy = default_policy>
tensor fp8_quantize_dequantize(const tensor& x, const fp8_spec& s, const std::string& where = "xq::low_bit::fp8",
                               fp8_state* state = nullptr);
/// The quantize-dequantize of x with a given state.
template <class Policy = default_policy>
tensor fp8_apply(const tensor& x, const fp8_spec& s, const fp8_state& state, const std::string& where = "xq::low_bit::fp8");
/// The input gradient for dy at x (the forward's state): torchao's autograd, TE's identity.
template <class Policy = default_policy>
tensor fp8_backward(const tensor& x, const tensor& dy, const fp8_spec& s, const fp8_state& state,
                    const std::string& where = "xq::low_bit::fp8");

}  // namespace xq::low_bit

namespace xq::low_bit::detail {

/// One row's FP8 kernel: q = cast(clamp(x / s)) · s (torchao) or cast(x · S) · (1 / S) (TE).
template <fp8_variant Var>
struct fp8_kernel {
  element_cast cast;
  float pre = 1.0f, post = 1.0f, max = 448.0f;

  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V forward(const V& x) const {
    if constexpr (Var == fp8_variant::torchao) {
      const V t = math::min(math::max(x / V(pre), V(-max)), V(max));  // torch.clamp keeps NaN
      return cast.template forward_rounded<rounding::half_even, false>(t) * V(post);
    } else {
      return cast.template forward_rounded<rounding::half_even, false>(x * V(pre)) * V(post);
    }
  }
};

template <fp8_variant Var>
struct fp8_format {
  static constexpr kernels::block_statistic statistic = kernels::block_statistic::abs_max;
  static constexpr std::size_t state_size = 1;
  static constexpr std::size_t param_count = 2;
  static constexpr bool identity_gradient = true;  // torchao's backward is fp8_backward's own
  using kernel_type = fp8_kernel<Var>;

  element_cast cast;
  float max = 448.0f;

  template <class V>
  XQ_HOST_DEVICE void block_state(const V& amax, const V&, V* state) const {
    state[0] = amax;
  }

  /// torchao's s = amax / max; TE's S = max / amax, fixed for Inf and 0.
  template <class V>
  XQ_HOST_DEVICE V scale_of(const V& amax) const {
    if constexpr (Var == fp8_variant::torchao) {
      return amax / V(max);
    } else {
      V scale = V(max) / amax;  // torch.div(fp8_max, amax)
      scale = math::select(scale == V(INFINITY), V(3.40282347e38f), scale);
      return math::select(amax == V(0.0f), V(1.0f), scale);
    }
  }

  template <class V>
  XQ_HOST_DEVICE void kernel_params(const V* state, V* p) const {
    const V scale = scale_of(state[0]);
    p[0] = scale;
    p[1] = Var == fp8_variant::torchao ? scale : V(1.0f) / scale;  // TE: torch.reciprocal
  }

  XQ_HOST_DEVICE kernel_type kernel(const float* p) const {
    kernel_type k;
    k.cast = cast;
    k.max = max;
    k.pre = p[0];
    k.post = p[1];
    return k;
  }
};

/// Calls fn(format) with the format of s's variant.
template <class Fn>
void visit_fp8(const fp8_spec& s, Fn&& fn) {
  const auto run = [&](auto f) {
    f.cast = element_cast::make(s.element, torch_rule(s.element));
    f.max = info(s.element).max;
    fn(f);
  };
  if (s.variant == fp8_variant::transformer_engine) return run(fp8_format<fp8_variant::transformer_engine>{});
  run(fp8_format<fp8_variant::torchao>{});
}

}  // namespace xq::low_bit::detail

namespace xq::low_bit {

template <class Policy>
tensor fp8_quantize_dequantize(const tensor& x, const fp8_spec& s, const std::string& where, fp8_state* state) {
  const kernels::block_layout bl = fp8_layout(x, s, where);
  fp8_state local;
  fp8_state& st = state ? *state : local;
  tensor y = tensor::from_shape(x.shape());
  if (s.granularity == fp8_granularity::per_tensor)
    st.amax.assign(1, kernels::tensor_stats<Policy>(kernels::block_statistic::abs_max, x.data(), x.size()).a);
  else
    st.amax.assign(bl.block_count(), 0.0f);
  detail::visit_fp8(s, [&](const auto& f) {
    if (s.granularity == fp8_granularity::per_tensor) {
      float p[2];
      f.kernel_params(st.amax.data(), p);
      kernels::elementwise_apply<Policy, std::decay_t<decltype(f)>>(f.kernel(p), x.data(), y.data(), nullptr, x.size());
    } else {
      kernels::block_scaled_forward<Policy>(f, bl, x.data(), y.data(), st.amax.data());
    }
  });
  return y;
}

template <class Policy>
tensor fp8_apply(const tensor& x, const fp8_spec& s, const fp8_state& state, const std::string& where) {
  const kernels::block_layout bl = fp8_layout(x, s, where);
  const std::size_t want = s.granularity == fp8_granularity::per_tensor ? 1 : bl.block_count();
  if (state.amax.size() != want)
    throw argument_error(where, xq::detail::concat("a state of ", want, " amax values for this tensor"),
                         xq::detail::concat(state.amax.size(), " values"));
  tensor y = tensor::from_shape(x.shape());
  detail::visit_fp8(s, [&](const auto& f) {
    if (s.granularity == fp8_granularity::per_tensor) {
      float p[2];
      f.kernel_params(state.amax.data(), p);
      kernels::elementwise_apply<Policy, std::decay_t<decltype(f)>>(f.kernel(p), x.data(), y.data(), nullptr, x.size());
    } else {
      kernels::block_scaled_apply<Policy>(f, bl, x.data(), y.data(), state.amax.data());
    }
  });
  return y;
}

namespace detail {

/// torchao's FP8 backward, elementwise part 1 over n contiguous values of one row of scale
/// sc: the gradient after the cast and the clamp (g), and the two products whose sums are the
/// scale's gradient (pa, pb); returns how many |x| equal the row's amax (amax's backward).
struct fp8_backward_step {
  element_cast cast;
  float max, sc;
  template <class V>
  XQ_ALWAYS_INLINE void operator()(const V& xv, const V& dyv, V& gm, V& a, V& b) const {
    const V v = xv / V(sc);
    const V q = cast.template forward_rounded<rounding::half_even, false>(math::min(math::max(v, V(-max)), V(max)));
    const V gq = cast.template forward_rounded<rounding::half_even, false>(dyv * V(sc));  // ToCopyBackward: grad to FP8
    gm = math::select(math::logical_and(v > V(-max), v < V(max)), gq, V(0.0f));  // clamp: 0 at the bounds
    a = dyv * q;                                           // MulBackward (dequantize), other: grad * self
    b = math::flip_sign_bit(gm) * ((xv / V(sc)) / V(sc));  // DivBackward, other: -grad * ((self / other) / other)
  }
};

template <class Policy>
std::size_t fp8_backward_products(const element_cast& cast, float max, float sc, float amax, const float* x,
                                  const float* dy, float* g, float* pa, float* pb, std::size_t n) {
  const fp8_backward_step step{cast, max, sc};
  std::size_t i = 0, count = 0;
  if constexpr (is_simd_policy_v<Policy>) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    B counted(0.0f);
    for (; i + B::size <= n; i += B::size) {
      const B xv = B::load_unaligned(x + i);
      B gm, a, b;
      step(xv, B::load_unaligned(dy + i), gm, a, b);
      gm.store_unaligned(g + i);
      a.store_unaligned(pa + i);
      b.store_unaligned(pb + i);
      counted = counted + math::as_float(math::abs(xv) == B(amax));
    }
    alignas(64) float lanes[B::size];
    counted.store_aligned(lanes);
    for (std::size_t k = 0; k < B::size; ++k) count += std::size_t(lanes[k]);
  }
  for (; i < n; ++i) {
    float gm, a, b;
    step(x[i], dy[i], gm, a, b);
    g[i] = gm;
    pa[i] = a;
    pb[i] = b;
    count += math::abs(x[i]) == amax;
  }
  return count;
}

/// Part 2: dx = g / s + (d amax / count) · [|x| = amax] · sgn x (the two paths into x added).
struct fp8_backward_input_step {
  float sc, amax, per;
  template <class V>
  XQ_ALWAYS_INLINE V operator()(const V& xv, const V& gm) const {
    const V is_max = math::as_float(math::abs(xv) == V(amax));
    const V sgn = math::select(xv > V(0.0f), V(1.0f),
                               math::select(xv < V(0.0f), V(-1.0f), math::select(xv == V(0.0f), V(0.0f), xv)));
    return gm / V(sc) + (V(per) * is_max) * sgn;  // AbsBackward: grad * sgn(self)
  }
};

template <class Policy>
void fp8_backward_input(float sc, float amax, float per, const float* x, const float* g, float* dx, std::size_t n) {
  const fp8_backward_input_step step{sc, amax, per};
  std::size_t i = 0;
  if constexpr (is_simd_policy_v<Policy>) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    for (; i + B::size <= n; i += B::size) step(B::load_unaligned(x + i), B::load_unaligned(g + i)).store_unaligned(dx + i);
  }
  for (; i < n; ++i) dx[i] = step(x[i], g[i]);
}

/// The sums of torch's backward: per row, each row's own sum (sum_to_size over the last dim);
/// per tensor, the full sum with the peer run's thread count (compiled: float8_scaled.ipp).
XQ_DECL float fp8_row_sum(const float* p, std::size_t n, bool whole_tensor);

template <class Policy>
void fp8_torchao_backward(const fp8_spec& s, const kernels::block_layout& bl, const float* x, const float* dy,
                          const float* amax, float* dx) {
  const element_cast cast = element_cast::make(s.element, torch_rule(s.element));
  const float max = info(s.element).max;
  const bool whole = s.granularity == fp8_granularity::per_tensor;
  const std::size_t rows = whole ? 1 : bl.rows(), cols = whole ? bl.shape.size() : bl.shape.channels;
  const std::size_t inner = whole ? 1 : bl.shape.inner;
  const auto run_rows = [&](std::size_t begin, std::size_t end) {
    std::vector<float> xs(inner == 1 ? 0 : cols), dys(inner == 1 ? 0 : cols), dxs(inner == 1 ? 0 : cols);
    // (tensors: a per-tensor scale's buffers are the tensor's size, kept mapped by the cache)
    tensor g = tensor::from_shape({cols}), pa = tensor::from_shape({cols}), pb = tensor::from_shape({cols});
    for (std::size_t r = begin; r < end; ++r) {
      const float* xr = x + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      if (inner != 1) {  // a row along a middle axis: gathered
        const std::size_t o = r / inner, i = r % inner;
        for (std::size_t c = 0; c < cols; ++c) {
          xs[c] = x[(o * cols + c) * inner + i];
          dys[c] = dy[(o * cols + c) * inner + i];
        }
        xr = xs.data();
        dyr = dys.data();
        dxr = dxs.data();
      }
      const float sc = amax[r] / max;
      const std::size_t count = fp8_backward_products<Policy>(cast, max, sc, amax[r], xr, dyr, g.data(), pa.data(),
                                                              pb.data(), cols);
      const float ds = fp8_row_sum(pa.data(), cols, whole) + fp8_row_sum(pb.data(), cols, whole);
      const float per = (ds / max) / float(count);  // DivBackward by max, then amax's grad / count
      fp8_backward_input<Policy>(sc, amax[r], per, xr, g.data(), dxr, cols);
      if (inner != 1) {
        const std::size_t o = r / inner, i = r % inner;
        for (std::size_t c = 0; c < cols; ++c) dx[(o * cols + c) * inner + i] = dxs[c];
      }
    }
  };
  kernels::parallel_chunks(bl.shape.size() >= XQ_PARALLEL_THRESHOLD && rows > 1 ? kernels::max_threads() : 1, rows, 1,
                           run_rows);
}

}  // namespace detail

template <class Policy>
tensor fp8_backward(const tensor& x, const tensor& dy, const fp8_spec& s, const fp8_state& state,
                    const std::string& where) {
  const kernels::block_layout bl = fp8_layout(x, s, where);
  if (dy.shape() != x.shape())
    throw argument_error(where, "dy of x's shape", "another shape");
  tensor dx = tensor::from_shape(x.shape());
  if (s.variant == fp8_variant::transformer_engine) {
    std::copy(dy.begin(), dy.end(), dx.begin());
    return dx;
  }
  detail::fp8_torchao_backward<Policy>(s, bl, x.data(), dy.data(), state.amax.data(), dx.data());
  return dx;
}

}  // namespace xq::low_bit

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/float8_scaled.ipp"
#endif
