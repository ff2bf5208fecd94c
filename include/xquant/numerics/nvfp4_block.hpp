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
///  | transformer_engine (`reference_nvfp4.py::NVFP4QuantizerRef._quantize_blockwise_reference`, 1x16 or 16x16 tiles) | S = min(2688 / amax, FLT_MAX), 1 when 0; g = 1 / S | clamp(min(amax_b · (S · (1/6)), FLT_MAX), ±448); no lower clamp (→ 0) | x · min(1 / (bs · g), FLT_MAX), clamp ±6, RNE by comparisons: −0 and NaN → +0 | v · (bs · g): TE's reference has no dequantize (its GEMM folds amax/2688 into alpha), so this product is xquant's; the codes and scales are the peer's |
///  | modelopt_qtensor (`NVFP4QTensor.quantize` + `dequantize`) | amax / 2688 | amax_b / (6 · g), 0 → 1, clamp [2^-9, 448] | x / (bs · g), RNE (`searchsorted` + tie fix): a zero takes no sign, NaN → 6 | v · (bs · g), −0 → +0 |
///  | modelopt_triton (`tensor_quant.static_blockwise_fp4_fake_quant`: `compute_fp4_scales` + the Triton kernel `nvfp4_scalar_quant`) | sfa = amax / 6; 448 / sfa (1 when sfa <= 2^-24) | q = E4M3(clamp((amax_b / 6) · (448 / sfa), ±448)); s = q · (1 / (448 / sfa)) | |x| / s, RNE by comparisons (NaN → 6), sign from x >= 0 | q · s; **s = 0 zeroes the block**, a NaN or infinite s is taken as 1 |
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
/// be a multiple of 16 (argument_error otherwise). TransformerEngine's 16x16 weight tiles (`tiles_16x16`) share
/// one amax over 16 consecutive block rows.

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

namespace xq::low_bit {

/// Which peer function an NVFP4 quantize-dequantize reproduces (the table above).
enum class nvfp4_variant : std::uint8_t {
  torchao,
  torchao_one_level,
  transformer_engine,
  modelopt_qtensor,
  modelopt_triton,
};

/// An NVFP4 format: variant, TransformerEngine's 16x16 weight tiles, the axis of the blocks.
struct nvfp4_spec {
  nvfp4_variant variant = nvfp4_variant::torchao;
  bool tiles_16x16 = false;  ///< transformer_engine only: 16 block rows share one block scale
  int axis = -1;             ///< negative counts from the end
};

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
template <class V>
XQ_HOST_DEVICE XQ_ALWAYS_INLINE V e2m1_magnitude(const V& a) {
  const V c = math::min(a, V(24.0f));
  const V step = math::max(math::pow2_floor(c), V(1.0f)) * V(0.5f);
  const V q = math::round_half_even(c / step) * step;
  return math::min(q, V(6.0f));
}

/// One NVFP4 block: t = x · pre (x / pre), clamped, rounded, signed; times post.
struct nvfp4_kernel {
  enum class sign_rule : std::uint8_t {
    sign_bit,       ///< torchao: the sign bit of t (NaN → ±1.5 by torchao's cast)
    negative_only,  ///< TE, ModelOpt QTensor: negative iff t < 0 (−0 and NaN positive)
    from_input,     ///< ModelOpt Triton: negative iff !(x >= 0), magnitude from |x|
  };
  float pre = 1.0f, post = 1.0f;
  bool divide = false;
  bool clamp6 = false;
  sign_rule sign = sign_rule::sign_bit;
  float nan_magnitude = 0.0f;  ///< the magnitude a NaN t takes
  bool zero_unsigned = false;  ///< ModelOpt QTensor: code 8 dequantizes to +0
  bool zero_block = false;     ///< ModelOpt Triton: a zero scale: the block is +0
  float block_amax = 0.0f;     ///< ModelOpt Triton: its gradient passes where |x| <= amax

  /// The signed element value (before `post`).
  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V element(const V& x) const {
    if (sign == sign_rule::from_input) {
      const V a = math::abs(x) / V(pre);
      const V q = math::select(a == a, e2m1_magnitude(a), V(6.0f));
      return math::select(x >= V(0.0f), q, math::flip_sign_bit(q));
    }
    V t = divide ? x / V(pre) : x * V(pre);
    if (clamp6) t = math::min(math::max(t, V(-6.0f)), V(6.0f));  // torch.clamp keeps NaN
    const V a = math::abs(t);
    const auto nan = math::logical_not(a == a);
    const V q = math::select(nan, V(nan_magnitude), e2m1_magnitude(a));
    if (sign == sign_rule::sign_bit) return math::copy_sign_bit(q, t);
    return math::select(t < V(0.0f), math::flip_sign_bit(q), q);
  }

  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V forward(const V& x) const {
    if (zero_block) return V(0.0f);
    const V v = element(x);
    V y = v * V(post);
    if (zero_unsigned) y = math::select(v == V(0.0f), V(0.0f), y);
    return y;
  }

  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE auto passes(const V& x) const {
    return math::abs(x) <= V(block_amax);
  }
  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V backward(const V& dy, const V& m) const {
    return math::select(m != V(0.0f), dy, V(0.0f));  // torch.where(|x| <= amax, dy, 0)
  }
};

/// The tensor-level constants of a variant, derived from the tensor amax.
struct nvfp4_format {
  static constexpr kernels::block_statistic statistic = kernels::block_statistic::abs_max;
  static constexpr std::size_t state_size = 1;
  static constexpr bool identity_gradient = true;
  using kernel_type = nvfp4_kernel;

  nvfp4_variant variant = nvfp4_variant::torchao;
  element_cast e4m3{};
  float g = 1.0f, inv_g = 1.0f;        // torchao: amax / 2688 and its reciprocal; ModelOpt: amax / 2688
  float six_g = 6.0f;                  // ModelOpt QTensor: 6 · g
  float encode = 1.0f, decode = 1.0f;  // TE: S and 1 / S
  float multiplier = 1.0f;             // TE: S · (1/6)
  float fp8_scale = 1.0f, fp8_inv = 1.0f;  // ModelOpt Triton: 448 / sfa and 1 / that

  XQ_DECL static nvfp4_format make(nvfp4_variant v, float tensor_amax);

  float rounded_scale(float s) const { return e4m3.forward(s); }

  void block_state(const kernels::block_stats& st, float* state) const {
    const float amax = st.a;
    const float tiny = 0.015625f;  // 2^-6: E4M3's smallest normal, torchao's E4M3_EPS
    switch (variant) {
      case nvfp4_variant::torchao:
        state[0] = rounded_scale(clamp((amax / 6.0f) / g, tiny, 448.0f));
        return;
      case nvfp4_variant::torchao_one_level:
        state[0] = rounded_scale(clamp(amax / 6.0f, tiny, 448.0f));
        return;
      case nvfp4_variant::transformer_engine: {
        const float d = math::min(amax * multiplier, std::numeric_limits<float>::max());
        state[0] = rounded_scale(clamp(d, -448.0f, 448.0f));
        return;
      }
      case nvfp4_variant::modelopt_qtensor: {
        float s = amax / six_g;
        if (s == 0.0f) s = 1.0f;
        state[0] = rounded_scale(clamp(s, 0.001953125f, 448.0f));  // [2^-9, 448]
        return;
      }
      case nvfp4_variant::modelopt_triton: state[0] = amax; return;
    }
  }

  nvfp4_kernel kernel(const float* state) const {
    nvfp4_kernel k;
    const float bs = state[0];
    switch (variant) {
      case nvfp4_variant::torchao:
        k.pre = inv_g / bs;
        k.post = g * bs;
        k.clamp6 = true;
        k.nan_magnitude = 1.5f;
        return k;
      case nvfp4_variant::torchao_one_level:
        k.pre = 1.0f / bs;
        k.post = bs;
        k.clamp6 = true;
        k.nan_magnitude = 1.5f;
        return k;
      case nvfp4_variant::transformer_engine:
        k.pre = math::min(1.0f / (bs * decode), std::numeric_limits<float>::max());
        k.post = bs * decode;
        k.clamp6 = true;
        k.sign = nvfp4_kernel::sign_rule::negative_only;
        return k;
      case nvfp4_variant::modelopt_qtensor:
        k.pre = bs * g;
        k.post = k.pre;
        k.divide = true;
        k.sign = nvfp4_kernel::sign_rule::negative_only;
        k.nan_magnitude = 6.0f;
        k.zero_unsigned = true;
        return k;
      case nvfp4_variant::modelopt_triton: {
        const float s = triton_scale(bs);
        k.zero_block = s == 0.0f;
        const float safe = (s != s || math::abs(s) == std::numeric_limits<float>::infinity()) ? 1.0f : s;
        k.pre = safe;
        k.post = safe;
        k.sign = nvfp4_kernel::sign_rule::from_input;
        k.block_amax = bs;
        return k;
      }
    }
    return k;
  }

  /// ModelOpt Triton: the block scale from the block amax (compute_fp4_scales).
  float triton_e4m3(float block_amax) const {
    const float t = clamp((block_amax / 6.0f) * fp8_scale, -448.0f, 448.0f);
    return rounded_scale(t);
  }
  float triton_scale(float block_amax) const { return triton_e4m3(block_amax) * fp8_inv; }

  static float clamp(float v, float lo, float hi) { return math::min(math::max(v, lo), hi); }
};

/// ModelOpt Triton's kernel differs in its gradient: a format type of its own for the walker.
struct nvfp4_masked_format : nvfp4_format {
  static constexpr bool identity_gradient = false;
  nvfp4_masked_format(const nvfp4_format& f) : nvfp4_format(f) {}
};

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
  const detail::nvfp4_format f = detail::nvfp4_format::make(s.variant, amax);
  if (s.variant == nvfp4_variant::modelopt_triton)
    kernels::block_scaled_forward<Policy>(detail::nvfp4_masked_format(f), bl, x.data(), y.data(), st.block.data(), mask);
  else
    kernels::block_scaled_forward<Policy>(f, bl, x.data(), y.data(), st.block.data(), mask);
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
  const detail::nvfp4_format f = detail::nvfp4_format::make(s.variant, state.tensor_amax);
  if (s.variant == nvfp4_variant::modelopt_triton)
    kernels::block_scaled_apply<Policy>(detail::nvfp4_masked_format(f), bl, x.data(), y.data(), state.block.data(), mask);
  else
    kernels::block_scaled_apply<Policy>(f, bl, x.data(), y.data(), state.block.data(), mask);
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
