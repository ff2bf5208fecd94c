#pragma once
/// \file nvfp4_block.hpp
/// NVFP4 (E2M1 elements, a UE4M3 scale per 16 values, a float32 scale per tensor) as each peer
/// computes it, quantize then dequantize, bit for bit. The peers agree on the grid and disagree
/// on the order of operations, the clamps and the zeros (research/low-bit.md §1.3;
/// docs/semantics.md §9):
///
///  | variant (peer function) | tensor scale g | block scale bs (UE4M3, RNE) | elements | output |
///  |---|---|---|---|---|
///  | torchao (`nvfp4_tensor.py::nvfp4_quantize` with `per_tensor_scale = amax / 2688`, `NVFP4Tensor.dequantize`; NVFP4FakeQuantizeConfig's default) | amax / 2688 | clamp((amax_b / 6) / g, 2^-6, 448) | x · ((1/g) / bs), clamp ±6, RNE; NaN → ±1.5 | v · (g · bs) |
///  | torchao_one_level (`per_tensor_scale=None`) | — | clamp(amax_b / 6, 2^-6, 448) | x · (1 / bs) | v · bs |
///  | transformer_engine (`reference_nvfp4.py::NVFP4QuantizerRef._quantize_blockwise_reference`, 1x16 or 16x16 tiles) | S = min(2688 / amax, FLT_MAX), 1 when 0; g = 1 / S | clamp(min(amax_b · (S · (1/6)), FLT_MAX), ±448); no lower clamp (→ 0) | x · min(1 / (bs · g), FLT_MAX), clamp ±6, RNE by comparisons: −0 and NaN → +0 | v · (bs · g): TE's reference has no dequantize (its GEMM folds amax_x · amax_w / 2688² into alpha), so this product is xquant's; the codes and scales are the peer's |
///  | modelopt_qtensor (`NVFP4QTensor.quantize` + `dequantize`) | amax / 2688 | amax_b / (6 · g), 0 → 1, clamp [2^-9, 448] | x / (bs · g), RNE (`searchsorted` + tie fix): a zero takes no sign, NaN → 6 | v · (bs · g), −0 → +0 |
///  | modelopt_triton (`tensor_quant.static_blockwise_fp4_fake_quant`: `compute_fp4_scales` + the Triton kernel `nvfp4_scalar_quant`) | sfa = amax / 6; S8 = `448.0 / sfa`, which torch computes as reciprocal × 448 (sfa 1 when <= 2^-24) | q = E4M3(clamp((amax_b / 6) · S8, ±448)); s = q · (1 / S8) | |x| / s, RNE by comparisons (NaN → 6), sign from x >= 0 | q · s; **s = 0 zeroes the block**, a NaN or infinite s is taken as 1 |
///
/// The gradient is the identity for every variant (torchao's NVFP4 QAT backward multiplies
/// the incoming gradient by the dequantized operands as they are; TransformerEngine has no
/// fake quantization), except modelopt_triton, whose autograd passes dy where |x| <= the
/// block's amax, so a block holding a NaN gets no gradient.
///
/// What a quantizer keeps (`nvfp4_state`): the tensor's amax (every variant derives its tensor
/// scale from it) and one float per block: the UE4M3 block scale's value, except for
/// modelopt_triton, whose state is the block amax (ModelOpt's NVFP4StaticQuantizer keeps
/// that). Blocks run along `axis` (default the last; a weight of Keras layout (in, out)
/// takes axis 0). Only TransformerEngine pads a partial last block (with zeros); torchao
/// asserts whole blocks, NVFP4QTensor pads in `quantize` but its `dequantize` then fails, and
/// the Triton path cuts the flattened tensor into runs of 16: for those the axis length must
/// be a multiple of 16 (argument_error otherwise). TransformerEngine's 16x16 weight tiles
/// (`tiles_16x16`) share one amax over 16 consecutive block rows.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../kernels/block_scaled.hpp"
#include "../kernels/float_bits.hpp"
#include "../kernels/math.hpp"
#include "../kernels/policy.hpp"
#include "low_bit_float.hpp"
#include "low_bit_specs.hpp"

namespace xq::low_bit {

/// What an NVFP4 quantization keeps: the tensor amax and one float per block (a UE4M3 block
/// scale's value; the block amax for modelopt_triton), blocks in block_layout order.
struct nvfp4_state {
  float tensor_amax = 0.0f;
  std::vector<float> block;
};

/// "torchao", "transformer_engine", ... (argument_error outside the enum).
XQ_DECL const char* to_string(nvfp4_variant v);
/// "nvfp4 transformer_engine 16x16 axis -1" style.
XQ_DECL std::string describe(const nvfp4_spec& s);
/// Bits per value stored: 4 per element plus 8 per block of 16 (4.5; the float32 tensor scale
/// is one per tensor and not counted).
constexpr double nvfp4_bits_per_value() noexcept { return 4.0 + 8.0 / 16.0; }
/// The block layout of x under s (argument_error naming `where` for a bad spec, an axis
/// outside x's rank, tiles on another variant, or a partial block where the peer refuses one).
XQ_DECL kernels::block_layout nvfp4_layout(const tensor& x, const nvfp4_spec& s, const std::string& where);

/// The quantize-dequantize of x under s, computing the state from x (written to `state` when
/// not null) and, when `mask` is not null, the gradient mask (x.size() bools).
template <class Policy = default_policy>
tensor nvfp4_quantize_dequantize(const tensor& x, const nvfp4_spec& s, const std::string& where = "xq::low_bit::nvfp4",
                                 nvfp4_state* state = nullptr, bool* mask = nullptr);
/// The quantize-dequantize of x with a given state (as nvfp4_quantize_dequantize wrote it for
/// a tensor of x's shape; argument_error otherwise).
template <class Policy = default_policy>
tensor nvfp4_apply(const tensor& x, const nvfp4_spec& s, const nvfp4_state& state,
                   const std::string& where = "xq::low_bit::nvfp4", bool* mask = nullptr);
/// dx for dy under the forward's mask (the identity but for modelopt_triton).
template <class Policy = default_policy>
tensor nvfp4_backward(const tensor& dy, const nvfp4_spec& s, const bool* mask);
/// The E2M1 code (sign bit 3) of each element of x under s and `state`, as the peer stores it.
XQ_DECL std::vector<std::uint8_t> nvfp4_codes(const tensor& x, const nvfp4_spec& s, const nvfp4_state& state,
                                              const std::string& where = "xq::low_bit::nvfp4");
/// The dequantization's two levels per block: block scale bs and tensor scale g, such that the
/// output is element · (bs · g) rounded once (modelopt_triton: q and 1 / (448 / sfa)).
XQ_DECL void nvfp4_scales(const nvfp4_spec& s, const nvfp4_state& state, std::vector<float>& block_scale,
                          float& tensor_scale);

}  // namespace xq::low_bit

namespace xq::low_bit::detail {

/// E2M1 magnitudes rounded to nearest even and saturated at 6 (NaN handled by the caller).
/// The grid step is a power of two, so c · (1 / step) is exact, as c / step would be.
template <class V>
XQ_HOST_DEVICE XQ_ALWAYS_INLINE V e2m1_magnitude(const V& a) {
  const V c = math::min(a, V(24.0f));
  const V step = math::max(math::pow2_floor(c), V(1.0f)) * V(0.5f);  // 0.5, 1, 2, 4, 8
  const V inv_step = math::reciprocal_pow2(step);                     // exact: a power of two
  const V q = math::round_half_even(c * inv_step) * step;
  return math::min(q, V(6.0f));
}

/// One NVFP4 block of variant Var: t = x · pre (x / pre), clamped, rounded, signed; times post.
template <nvfp4_variant Var>
struct nvfp4_kernel {
  float pre = 1.0f, post = 1.0f;
  float amax = 0.0f;  ///< modelopt_triton: the block amax (its gradient passes where |x| <= amax)
  bool zero = false;  ///< modelopt_triton: the block scale is 0, the block is +0

  static constexpr bool torchao_like = Var == nvfp4_variant::torchao || Var == nvfp4_variant::torchao_one_level;

  /// The signed element value (before `post`).
  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V element(const V& x) const {
    if constexpr (Var == nvfp4_variant::modelopt_triton) {
      // abs(x) / scale, fp4_round_magnitude (NaN -> 6), the sign of x >= 0
      const V a = math::abs(x) / V(pre);
      const V q = math::select(a == a, e2m1_magnitude(a), V(6.0f));
      return math::select(x >= V(0.0f), q, math::flip_sign_bit(q));
    } else {
      V t = Var == nvfp4_variant::modelopt_qtensor ? x / V(pre) : x * V(pre);
      if constexpr (Var != nvfp4_variant::modelopt_qtensor)
        t = math::min(math::max(t, V(-6.0f)), V(6.0f));  // torch.clamp keeps NaN
      const V a = math::abs(t);
      const auto nan = math::logical_not(a == a);
      // torchao's cast: NaN -> 1.5 with its sign (the default NaN's code); ModelOpt's
      // searchsorted: 6; TE's comparisons: +0
      const float nan_magnitude = torchao_like ? 1.5f : Var == nvfp4_variant::modelopt_qtensor ? 6.0f : 0.0f;
      const V q = math::select(nan, V(nan_magnitude), e2m1_magnitude(a));
      if constexpr (torchao_like) return math::copy_sign_bit(q, t);
      else return math::select(t < V(0.0f), math::flip_sign_bit(q), q);
    }
  }

  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V forward(const V& x) const {
    if constexpr (Var == nvfp4_variant::modelopt_triton)
      if (zero) return V(0.0f);  // nvfp4_scalar_quant: tl.where(zero_scale, 0.0, x_quant)
    const V v = element(x);
    V y = v * V(post);
    if constexpr (Var == nvfp4_variant::modelopt_qtensor)  // its table dequantizes code 8 to +0
      y = math::select(v == V(0.0f), V(0.0f), y);
    return y;
  }

  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE auto passes(const V& x) const {
    return math::abs(x) <= V(amax);
  }
  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V backward(const V& dy, const V& m) const {
    return math::select(m != V(0.0f), dy, V(0.0f));  // torch.where(|x| <= amax, dy, 0)
  }
};

/// The constants of a variant that derive from the tensor amax.
struct nvfp4_tensor_constants {
  float g = 1.0f, inv_g = 1.0f;        // torchao: amax / 2688 and its reciprocal; ModelOpt: amax / 2688
  float six_g = 6.0f;                  // ModelOpt QTensor: 6 · g
  float encode = 1.0f, decode = 1.0f;  // TE: S and 1 / S
  float multiplier = 1.0f;             // TE: S · (1/6)
  float fp8_scale = 1.0f, fp8_inv = 1.0f;  // ModelOpt Triton: 448 / sfa and 1 / that

  XQ_DECL static nvfp4_tensor_constants make(nvfp4_variant v, float tensor_amax);
};

/// NVFP4 of variant Var for the block walker: a block's state is its UE4M3 scale (Triton:
/// its amax), computed for W blocks at once.
template <nvfp4_variant Var>
struct nvfp4_format : nvfp4_tensor_constants {
  static constexpr kernels::block_statistic statistic = kernels::block_statistic::abs_max;
  static constexpr std::size_t state_size = 1;
  static constexpr std::size_t param_count = 4;
  static constexpr bool identity_gradient = Var != nvfp4_variant::modelopt_triton;
  using kernel_type = nvfp4_kernel<Var>;

  element_cast e4m3 = element_cast::make(element_type::e4m3fn, torch_rule(element_type::e4m3fn));

  explicit nvfp4_format(const nvfp4_tensor_constants& c) : nvfp4_tensor_constants(c) {}

  template <class V>
  XQ_HOST_DEVICE static V clamp(const V& v, float lo, float hi) {
    return math::min(math::max(v, V(lo)), V(hi));  // torch.clamp keeps NaN
  }

  /// ModelOpt Triton: the UE4M3 value of a block's scale from its amax (compute_fp4_scales).
  template <class V>
  XQ_HOST_DEVICE V triton_e4m3(const V& block_amax) const {
    return e4m3.forward(clamp((block_amax / V(6.0f)) * V(fp8_scale), -448.0f, 448.0f));
  }

  template <class V>
  XQ_HOST_DEVICE void block_state(const V& amax, const V&, V* state) const {
    const float tiny = 0.015625f;  // 2^-6: E4M3's smallest normal, torchao's E4M3_EPS
    if constexpr (Var == nvfp4_variant::torchao) {
      state[0] = e4m3.forward(clamp((amax / V(6.0f)) / V(g), tiny, 448.0f));
    } else if constexpr (Var == nvfp4_variant::torchao_one_level) {
      state[0] = e4m3.forward(clamp(amax / V(6.0f), tiny, 448.0f));
    } else if constexpr (Var == nvfp4_variant::transformer_engine) {
      const V d = math::min(amax * V(multiplier), V(3.40282347e38f));
      state[0] = e4m3.forward(clamp(d, -448.0f, 448.0f));
    } else if constexpr (Var == nvfp4_variant::modelopt_qtensor) {
      V sc = amax / V(six_g);
      sc = math::select(sc == V(0.0f), V(1.0f), sc);
      state[0] = e4m3.forward(clamp(sc, 0.001953125f, 448.0f));  // [2^-9, 448]
    } else {
      state[0] = amax;
    }
  }

  template <class V>
  XQ_HOST_DEVICE void kernel_params(const V* state, V* p) const {
    const V bs = state[0];
    p[2] = V(0.0f);
    p[3] = V(0.0f);
    if constexpr (Var == nvfp4_variant::torchao) {
      p[0] = V(inv_g) / bs;
      p[1] = V(g) * bs;
    } else if constexpr (Var == nvfp4_variant::torchao_one_level) {
      p[0] = V(1.0f) / bs;
      p[1] = bs;
    } else if constexpr (Var == nvfp4_variant::transformer_engine) {
      p[0] = math::min(V(1.0f) / (bs * V(decode)), V(3.40282347e38f));
      p[1] = bs * V(decode);
    } else if constexpr (Var == nvfp4_variant::modelopt_qtensor) {
      p[0] = bs * V(g);
      p[1] = p[0];
    } else {
      const V sc = triton_e4m3(bs) * V(fp8_inv);
      const auto bad = math::logical_or(math::logical_not(sc == sc), math::abs(sc) == V(INFINITY));
      const V safe = math::select(bad, V(1.0f), sc);
      p[0] = safe;
      p[1] = safe;
      p[2] = bs;
      p[3] = math::select(sc == V(0.0f), V(1.0f), V(0.0f));
    }
  }

  XQ_HOST_DEVICE kernel_type kernel(const float* p) const {
    kernel_type k;
    k.pre = p[0];
    k.post = p[1];
    k.amax = p[2];
    k.zero = p[3] != 0.0f;
    return k;
  }
};

/// Calls fn(format) with the format of variant v for a tensor of amax `tensor_amax`.
template <class Fn>
decltype(auto) visit_nvfp4(nvfp4_variant v, float tensor_amax, Fn&& fn) {
  const nvfp4_tensor_constants c = nvfp4_tensor_constants::make(v, tensor_amax);
  switch (v) {
    case nvfp4_variant::torchao_one_level: return fn(nvfp4_format<nvfp4_variant::torchao_one_level>(c));
    case nvfp4_variant::transformer_engine: return fn(nvfp4_format<nvfp4_variant::transformer_engine>(c));
    case nvfp4_variant::modelopt_qtensor: return fn(nvfp4_format<nvfp4_variant::modelopt_qtensor>(c));
    case nvfp4_variant::modelopt_triton: return fn(nvfp4_format<nvfp4_variant::modelopt_triton>(c));
    case nvfp4_variant::torchao: break;
  }
  return fn(nvfp4_format<nvfp4_variant::torchao>(c));
}

}  // namespace xq::low_bit::detail

namespace xq::low_bit {

template <class Policy>
tensor nvfp4_quantize_dequantize(const tensor& x, const nvfp4_spec& s, const std::string& where, nvfp4_state* state,
                                 bool* mask) {
  const kernels::block_layout bl = nvfp4_layout(x, s, where);
  const float amax = kernels::tensor_stats<Policy>(kernels::block_statistic::abs_max, x.data(), x.size()).a;
  nvfp4_state local;
  nvfp4_state& st = state ? *state : local;
  st.tensor_amax = amax;
  st.block.assign(bl.block_count(), 0.0f);
  tensor y = tensor::from_shape(x.shape());
  detail::visit_nvfp4(s.variant, amax, [&](const auto& f) {
    kernels::block_scaled_forward<Policy>(f, bl, x.data(), y.data(), st.block.data(), mask);
  });
  return y;
}

template <class Policy>
tensor nvfp4_apply(const tensor& x, const nvfp4_spec& s, const nvfp4_state& state, const std::string& where,
                   bool* mask) {
  const kernels::block_layout bl = nvfp4_layout(x, s, where);
  if (state.block.size() != bl.block_count())
    throw argument_error(where, xq::detail::concat("a state of ", bl.block_count(), " block values for this tensor"),
                         xq::detail::concat(state.block.size(), " block values"));
  tensor y = tensor::from_shape(x.shape());
  detail::visit_nvfp4(s.variant, state.tensor_amax, [&](const auto& f) {
    kernels::block_scaled_apply<Policy>(f, bl, x.data(), y.data(), state.block.data(), mask);
  });
  return y;
}

template <class Policy>
tensor nvfp4_backward(const tensor& dy, const nvfp4_spec& s, const bool* mask) {
  tensor dx = tensor::from_shape(dy.shape());
  if (s.variant != nvfp4_variant::modelopt_triton || mask == nullptr) {
    std::copy(dy.begin(), dy.end(), dx.begin());
    return dx;
  }
  std::size_t i = 0;
  const std::size_t n = dy.size();
  const float* g = dy.data();
  float* out = dx.data();
  if constexpr (is_simd_policy_v<Policy>) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    for (; i + B::size <= n; i += B::size) {
      const B m = kernels::detail::load_mask_as_float<typename Policy::arch_type>(mask + i);
      xsimd::select(m != B(0.0f), B::load_unaligned(g + i), B(0.0f)).store_unaligned(out + i);
    }
  }
  for (; i < n; ++i) out[i] = mask[i] ? g[i] : 0.0f;
  return dx;
}

}  // namespace xq::low_bit

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/nvfp4_block.ipp"
#endif
