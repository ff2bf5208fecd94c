#pragma once
/// \file mx_block_kernels.hpp
/// The element functor of one MX block and the template walk of mx_quantize_dequantize
/// (numerics/mx_block.hpp): the per-block scale is computed once (compiled, mx_block.ipp),
/// the elements by a functor written once for float and xsimd batches.

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "../../core/error.hpp"
#include "../../core/tensor.hpp"
#include "../../kernels/channel_layout.hpp"
#include "../../kernels/float_bits.hpp"
#include "../../kernels/math.hpp"
#include "../../kernels/policy.hpp"
#include "../low_bit_float.hpp"

namespace xq::low_bit {

struct mx_spec;

/// One block's elements: y = cast(clamp(x ⊘ pre)) * post, ⊘ a division or a product.
struct mx_block_kernel {
  element_cast cast;
  float pre = 1.0f;        ///< the divisor (divide) or the multiplier
  float post = 1.0f;       ///< the dequantization scale (NaN: the whole block is NaN)
  float clamp_max = INFINITY;  ///< torchao clamps the scaled fp8 values first (NaN kept)
  bool divide = true;
  bool zero_gets_sign_bit = false;  ///< ModelOpt's cast_fp4: a zero becomes -0
  bool microxcaling_even = false;   ///< floor(v + 0.5) minus one on an even tie, in float32
  bool zero_is_positive = false;    ///< microxcaling: sign(±0) * ... gives +0 for a zero input

  template <class V>
  XQ_HOST_DEVICE XQ_ALWAYS_INLINE V forward(const V& x) const {
    V t = divide ? x / V(pre) : x * V(pre);
    // torch.clamp keeps NaN: min/max keep the first argument when the compare fails.
    t = math::min(math::max(t, V(-clamp_max)), V(clamp_max));
    V q;
    if (microxcaling_even) {
      // microxcaling's "even": sign * (floor(|v| + 0.5) - [(|v| - 0.5) % 2 == 0]) on the
      // element grid; as the grid step scales |v| by a power of two, done here on v/step.
      const V a = math::abs(t);
      const V step = math::max(math::pow2_floor(math::min(a, V(4.0f * cast.max))), V(cast.min_normal)) *
                     V(cast.inv_mantissa);
      const V v = math::min(a, V(4.0f * cast.max)) / step;
      const V h = v - V(0.5f);
      const auto even_tie = math::logical_and(h >= V(0.0f), h - V(2.0f) * math::floor(h * V(0.5f)) == V(0.0f));
      const V r = math::round_half_up(v) - math::as_float(even_tie);
      V m = math::min(r * step, V(cast.max));
      q = math::copy_sign_bit(m, t);
      q = math::select(math::logical_not(a == a), t, q);
    } else {
      q = cast.forward(t);
    }
    if (zero_gets_sign_bit) q = math::select(t == V(0.0f), V(-0.0f), q);
    if (zero_is_positive) q = math::select(t == V(0.0f), V(0.0f), q);
    return q * V(post);
  }
};

namespace detail {
/// The kernel of one block of `count` values `stride` floats apart (compiled: mx_block.ipp).
XQ_DECL mx_block_kernel mx_kernel_for_block(const mx_spec& s, const float* x, std::size_t count, std::size_t stride,
                                            float& scale);
/// The layout of x's blocks (checks the spec and the axis length; compiled).
XQ_DECL kernels::channel_layout mx_layout(const tensor& x, const mx_spec& s, const std::string& where);

template <class Policy>
void mx_apply_run(const mx_block_kernel& kernel, const float* x, float* y, std::size_t n) {
  const mx_block_kernel k = kernel;
  std::size_t i = 0;
  if constexpr (is_simd_policy_v<Policy>) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    for (; i + B::size <= n; i += B::size) k.forward(B::load_unaligned(x + i)).store_unaligned(y + i);
  }
  for (; i < n; ++i) y[i] = k.forward(x[i]);
}
}  // namespace detail

template <class Policy>
tensor mx_quantize_dequantize(const tensor& x, const mx_spec& s, const std::string& where, std::vector<float>* scales) {
  const kernels::channel_layout l = detail::mx_layout(x, s, where);
  tensor y = tensor::from_shape(x.shape());
  const std::size_t B = std::size_t(s.block_size), L = l.channels;
  const std::size_t blocks = (L + B - 1) / B;
  if (scales) scales->assign(l.outer * blocks * l.inner, 0.0f);
  std::vector<float> in(B), out(B);
  for (std::size_t o = 0; o < l.outer; ++o)
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t r0 = b * B, count = std::min(B, L - r0);
      if (l.inner == 1) {
        const float* xp = x.data() + o * L + r0;
        float scale = 0.0f;
        const mx_block_kernel k = detail::mx_kernel_for_block(s, xp, count, 1, scale);
        if (scales) (*scales)[o * blocks + b] = scale;
        detail::mx_apply_run<Policy>(k, xp, y.data() + o * L + r0, count);
        continue;
      }
      for (std::size_t i = 0; i < l.inner; ++i) {  // a block along a middle axis: gather it
        const float* xp = x.data() + (o * L + r0) * l.inner + i;
        for (std::size_t r = 0; r < count; ++r) in[r] = xp[r * l.inner];
        float scale = 0.0f;
        const mx_block_kernel k = detail::mx_kernel_for_block(s, in.data(), count, 1, scale);
        if (scales) (*scales)[(o * blocks + b) * l.inner + i] = scale;
        detail::mx_apply_run<Policy>(k, in.data(), out.data(), count);
        float* yp = y.data() + (o * L + r0) * l.inner + i;
        for (std::size_t r = 0; r < count; ++r) yp[r * l.inner] = out[r];
      }
    }
  return y;
}

}  // namespace xq::low_bit
