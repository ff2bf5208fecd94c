#pragma once
/// \file block_scaled.hpp
/// The walker of the block-scaled formats (MX, NVFP4, FP8 per tensor or row, torchao's
/// integer groups and tokens): a tensor seen as (outer, axis, inner) is cut along `axis` into
/// blocks of `block` values (the last one may be shorter), and each block is quantized with a
/// state computed from its statistics (its amax, or its min and max), e.g. a shared exponent,
/// a UE4M3 scale, a scale and a zero point. A format (numerics/) says
///
///     static constexpr block_statistic statistic;   // what a block is reduced to
///     static constexpr std::size_t state_size;      // floats of state per block
///     static constexpr std::size_t param_count;     // floats its kernel is made of
///     using kernel_type = ...;                      // the element functor of one block
///     template <class V> void block_state(const V& a, const V& b, V* state) const;
///     template <class V> void kernel_params(const V* state, V* params) const;
///     kernel_type kernel(const float* params) const;
///
/// where `a`, `b` are the statistics (amax and 0, or min and max) and V is float or an xsimd
/// batch: the state and the kernel's parameters of W blocks are computed at once, lane by lane
/// with the same IEEE operations as for one block (a format whose state needs scalar code,
/// such as a table lookup, sets `vector_state = false` and gets V = float only). The kernel's
/// `template <class V> V forward(const V& x) const` works on floats and batches alike, so the
/// scalar and SIMD walkers give the same bits; when the gradient is not the identity
/// (`Format::identity_gradient` false), `passes(x)` (the mask: a bool or batch_bool) and
/// `backward(dy, m)` (m: 1.0f where the mask holds, else 0.0f). Tensor-level state (NVFP4's
/// and FP8's per-tensor scale) lives in the format object, computed before the walk from
/// `tensor_stats`.
///
/// How a row is walked, a chunk of up to 64 blocks at a time while it sits in L1: the blocks'
/// statistics (SIMD within a block), their states and kernel parameters (SIMD across blocks),
/// then each block's kernel (SIMD within the block). The state is also what a quantizer keeps:
/// `block_scaled_apply` starts from a given state (observation off) and gives the same bits as
/// `block_scaled_forward` did for the tensor the state came from.
///
/// Blocks along the last axis (inner == 1) are contiguous. Along another axis, each (outer,
/// block) slab is transposed into a per-thread buffer, walked as `inner` contiguous blocks and
/// transposed back. `tile_rows` > 1 groups that many consecutive block rows (TransformerEngine's
/// 16x16 weight tiles): their blocks at the same position share one statistic and one state,
/// which is stored once per block row. Block rows are the (outer, inner) pairs in row-major
/// order; the state of block `b` of row (o, i) is at ((o * blocks + b) * inner + i) * state_size.
///
/// Large tensors are split across threads by block rows (tiles kept whole); every block is
/// computed the same way on any thread count.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "../config.hpp"
#include "channel_layout.hpp"
#include "float_bits.hpp"
#include "math.hpp"
#include "parallel.hpp"
#include "policy.hpp"
#include "simd.hpp"
#include "simd_mask.hpp"

namespace xq::kernels {

/// What a block is reduced to before its state is computed.
enum class block_statistic : std::uint8_t {
  abs_max,  ///< max |x| (NaN when the block holds a NaN, as torch.amax)
  min_max,  ///< min x and max x (both NaN when the block holds a NaN, as torch.amin / amax)
};

/// A block's statistics: `a` = amax (abs_max) or min (min_max), `b` = max (min_max).
struct block_stats {
  float a = 0.0f;
  float b = 0.0f;
};

/// Where a format's blocks lie in a tensor.
struct block_layout {
  channel_layout shape;       ///< (outer, axis length, inner)
  std::size_t block = 1;      ///< values per block along the axis (the last block may be shorter)
  std::size_t tile_rows = 1;  ///< block rows sharing a statistic (16: TE's 16x16 weight tiles)

  std::size_t blocks_per_row() const noexcept { return (shape.channels + block - 1) / block; }
  std::size_t rows() const noexcept { return shape.outer * shape.inner; }
  std::size_t block_count() const noexcept { return rows() * blocks_per_row(); }
};

namespace detail {

/// The largest (smallest) lane of a batch without NaN lanes (xsimd 8.1 has no reduce_max).
template <class A>
XQ_ALWAYS_INLINE float lanes_max(const xsimd::batch<float, A>& v) {
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, A>) return _mm512_reduce_max_ps(v);
#endif
#if XSIMD_WITH_AVX
  if constexpr (std::is_base_of_v<xsimd::avx, A>) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
#endif
  alignas(64) float lanes[xsimd::batch<float, A>::size];
  v.store_aligned(lanes);
  float m = lanes[0];
  for (std::size_t j = 1; j < xsimd::batch<float, A>::size; ++j) m = lanes[j] > m ? lanes[j] : m;
  return m;
}
template <class A>
XQ_ALWAYS_INLINE float lanes_min(const xsimd::batch<float, A>& v) {
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, A>) return _mm512_reduce_min_ps(v);
#endif
#if XSIMD_WITH_AVX
  if constexpr (std::is_base_of_v<xsimd::avx, A>) {
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
#endif
  alignas(64) float lanes[xsimd::batch<float, A>::size];
  v.store_aligned(lanes);
  float m = lanes[0];
  for (std::size_t j = 1; j < xsimd::batch<float, A>::size; ++j) m = lanes[j] < m ? lanes[j] : m;
  return m;
}

/// Statistics of n contiguous floats, merged into `s` (`any_nan` set when a NaN is seen).
template <class Policy>
XQ_ALWAYS_INLINE void accumulate_stats(block_statistic kind, const float* x, std::size_t n, float& lo, float& hi,
                                       bool& any_nan) {
  std::size_t i = 0;
  if constexpr (is_simd_policy_v<Policy>) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    constexpr std::size_t W = B::size;
    if (n >= W) {
      B vlo(lo), vhi(hi);
      auto nan = B(0.0f) != B(0.0f);
      if (kind == block_statistic::abs_max) {
        for (; i + W <= n; i += W) {
          const B a = math::abs(B::load_unaligned(x + i));
          nan = nan | xsimd::isnan(a);
          vhi = xsimd::max(vhi, a);  // a NaN lane is remembered by `nan`, not by the max
        }
        hi = lanes_max(vhi);
      } else {
        for (; i + W <= n; i += W) {
          const B v = B::load_unaligned(x + i);
          nan = nan | xsimd::isnan(v);
          vlo = xsimd::min(vlo, v);
          vhi = xsimd::max(vhi, v);
        }
        lo = lanes_min(vlo);
        hi = lanes_max(vhi);
      }
      any_nan = any_nan || xsimd::any(nan);
    }
  }
  if (kind == block_statistic::abs_max) {
    for (; i < n; ++i) {
      const float a = math::abs(x[i]);
      if (a != a) any_nan = true;
      else if (a > hi) hi = a;
    }
  } else {
    for (; i < n; ++i) {
      const float v = x[i];
      if (v != v) {
        any_nan = true;
        continue;
      }
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
}

inline void start_stats(block_statistic kind, float& lo, float& hi) {
  lo = std::numeric_limits<float>::infinity();
  hi = kind == block_statistic::abs_max ? 0.0f : -std::numeric_limits<float>::infinity();
}

inline block_stats finish_stats(block_statistic kind, float lo, float hi, bool any_nan) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  if (any_nan) return {kind == block_statistic::abs_max ? qnan : qnan, qnan};
  if (kind == block_statistic::abs_max) return {hi, 0.0f};
  return {lo, hi};
}

template <class Format, class = void>
struct has_identity_gradient : std::true_type {};
template <class Format>
struct has_identity_gradient<Format, std::void_t<decltype(Format::identity_gradient)>>
    : std::bool_constant<bool(Format::identity_gradient)> {};

/// y = kernel(x) over n contiguous values (and the mask when `mask` is not null). With
/// `streaming` (a large output, simd.hpp's threshold), batches that start a 64-byte line are
/// written with non-temporal stores, as the elementwise walkers and memcpy write large outputs:
/// no read-for-ownership of lines that would not stay in cache (the caller fences).
template <class Policy, class Format, bool Streaming = false, class Kernel>
XQ_ALWAYS_INLINE void apply_run(const Kernel& kernel, const float* x, float* y, bool* mask, std::size_t n) {
  const Kernel k = kernel;  // a local copy: stores may alias a reference's members
  std::size_t i = 0;
  constexpr bool identity = has_identity_gradient<Format>::value;
  if constexpr (is_simd_policy_v<Policy>) {
    using A = typename Policy::arch_type;
    using B = xsimd::batch<float, A>;
    constexpr std::size_t W = B::size;
    for (; i + W <= n; i += W) {
      const B v = B::load_unaligned(x + i);
      const B out = k.forward(v);
      if (Streaming && W * sizeof(float) == 64 && reinterpret_cast<std::uintptr_t>(y + i) % 64 == 0)
        store_streaming<A>(out, y + i);
      else
        out.store_unaligned(y + i);
      if constexpr (!identity) {
        if (mask) store_mask(k.passes(v), mask + i);
      }
    }
  }
  for (; i < n; ++i) {
    y[i] = k.forward(x[i]);
    if constexpr (!identity) {
      if (mask) mask[i] = k.passes(x[i]);
    }
  }
  if constexpr (identity) {
    if (mask) std::memset(mask, 1, n);
  }
}

template <class Policy, class Kernel>
XQ_ALWAYS_INLINE void backward_run(const Kernel& kernel, const bool* mask, const float* dy, float* dx, std::size_t n) {
  const Kernel k = kernel;
  std::size_t i = 0;
  if constexpr (is_simd_policy_v<Policy>) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    constexpr std::size_t W = B::size;
    for (; i + W <= n; i += W) {
      const B m = load_mask_as_float<typename Policy::arch_type>(mask + i);
      k.backward(B::load_unaligned(dy + i), m).store_unaligned(dx + i);
    }
  }
  for (; i < n; ++i) dx[i] = k.backward(dy[i], mask[i] ? 1.0f : 0.0f);
}

/// Transposes rows [0, count) x columns [0, inner) of a (count, inner) slab with row stride
/// `inner` into `out` as (inner, count), and back.
inline void gather_slab(const float* src, std::size_t count, std::size_t inner, float* out) {
  for (std::size_t r = 0; r < count; ++r)
    for (std::size_t i = 0; i < inner; ++i) out[i * count + r] = src[r * inner + i];
}
inline void scatter_slab(const float* in, std::size_t count, std::size_t inner, float* dst) {
  for (std::size_t r = 0; r < count; ++r)
    for (std::size_t i = 0; i < inner; ++i) dst[r * inner + i] = in[i * count + r];
}
inline void scatter_mask(const bool* in, std::size_t count, std::size_t inner, bool* dst) {
  for (std::size_t r = 0; r < count; ++r)
    for (std::size_t i = 0; i < inner; ++i) dst[r * inner + i] = in[i * count + r];
}

template <class Format, class = void>
struct has_vector_state : std::true_type {};
template <class Format>
struct has_vector_state<Format, std::void_t<decltype(Format::vector_state)>>
    : std::bool_constant<bool(Format::vector_state)> {};

/// Blocks per chunk: their statistics, states and parameters sit in arrays on the stack.
inline constexpr std::size_t chunk_blocks = 64;

/// States of `count` blocks from their statistics (planar arrays), W blocks at a time.
template <class Policy, class Format>
XQ_ALWAYS_INLINE void chunk_states(const Format& f, const float* sa, const float* sb,
                                   float (*st)[chunk_blocks], std::size_t count) {
  constexpr std::size_t S = Format::state_size;
  std::size_t i = 0;
  if constexpr (is_simd_policy_v<Policy> && has_vector_state<Format>::value) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    for (; i + B::size <= count; i += B::size) {
      B out[S];
      f.block_state(B::load_aligned(sa + i), B::load_aligned(sb + i), out);
      for (std::size_t k = 0; k < S; ++k) out[k].store_aligned(st[k] + i);
    }
  }
  for (; i < count; ++i) {
    float out[S];
    f.block_state(sa[i], sb[i], out);
    for (std::size_t k = 0; k < S; ++k) st[k][i] = out[k];
  }
}

/// Kernel parameters of `count` blocks from their states (planar arrays), W blocks at a time.
template <class Policy, class Format>
XQ_ALWAYS_INLINE void chunk_params(const Format& f, float (*st)[chunk_blocks], float (*pr)[chunk_blocks],
                                   std::size_t count) {
  constexpr std::size_t S = Format::state_size, P = Format::param_count;
  std::size_t i = 0;
  if constexpr (is_simd_policy_v<Policy>) {
    using B = xsimd::batch<float, typename Policy::arch_type>;
    for (; i + B::size <= count; i += B::size) {
      B in[S], out[P];
      for (std::size_t k = 0; k < S; ++k) in[k] = B::load_aligned(st[k] + i);
      f.kernel_params(in, out);
      for (std::size_t k = 0; k < P; ++k) out[k].store_aligned(pr[k] + i);
    }
  }
  for (; i < count; ++i) {
    float in[S], out[P];
    for (std::size_t k = 0; k < S; ++k) in[k] = st[k][i];
    f.kernel_params(in, out);
    for (std::size_t k = 0; k < P; ++k) pr[k][i] = out[k];
  }
}

template <class Format>
XQ_ALWAYS_INLINE typename Format::kernel_type kernel_at(const Format& f, float (*pr)[chunk_blocks], std::size_t b) {
  constexpr std::size_t P = Format::param_count;
  float p[P];
  for (std::size_t k = 0; k < P; ++k) p[k] = pr[k][b];
  return f.kernel(p);
}

/// Walks the block rows [row_begin, row_end), each `row_length` values `row_stride` apart
/// (inner == 1, or the transposed slab of one (outer, block): then rows are `inner` and the
/// length is the block's). `row_state[r - row_begin]` is row r's first block state, block b's
/// `b * state_stride` floats on. Observe: compute the states; else read them.
template <class Policy, class Format, bool Observe>
void walk_rows(const Format& f, std::size_t tile_rows, const float* x, float* y, bool* mask, std::size_t row_begin,
               std::size_t row_end, std::size_t row_length, std::size_t row_stride, std::size_t block,
               float* const* row_state, std::size_t state_stride, bool streaming = false) {
  constexpr std::size_t S = Format::state_size, P = Format::param_count, C = chunk_blocks;
  const block_statistic kind = Format::statistic;
  alignas(64) float sa[C], sb[C], st[S][C], pr[P][C];
  const std::size_t nb = (row_length + block - 1) / block;
  for (std::size_t r0 = row_begin; r0 < row_end; r0 += tile_rows) {
    const std::size_t r1 = std::min(row_end, r0 + tile_rows);
    for (std::size_t b0 = 0; b0 < nb; b0 += C) {
      const std::size_t cb = std::min(C, nb - b0);
      if constexpr (Observe) {
        for (std::size_t b = 0; b < cb; ++b) {
          const std::size_t c0 = (b0 + b) * block, count = std::min(block, row_length - c0);
          float lo, hi;
          start_stats(kind, lo, hi);
          bool any_nan = false;
          for (std::size_t r = r0; r < r1; ++r)
            accumulate_stats<Policy>(kind, x + r * row_stride + c0, count, lo, hi, any_nan);
          const block_stats bs = finish_stats(kind, lo, hi, any_nan);
          sa[b] = bs.a;
          sb[b] = bs.b;
        }
        chunk_states<Policy>(f, sa, sb, st, cb);
        for (std::size_t r = r0; r < r1; ++r) {
          float* out = row_state[r - row_begin] + b0 * state_stride;
          for (std::size_t b = 0; b < cb; ++b)
            for (std::size_t k = 0; k < S; ++k) out[b * state_stride + k] = st[k][b];
        }
      } else {
        const float* in = row_state[r0 - row_begin] + b0 * state_stride;
        for (std::size_t b = 0; b < cb; ++b)
          for (std::size_t k = 0; k < S; ++k) st[k][b] = in[b * state_stride + k];
      }
      chunk_params<Policy>(f, st, pr, cb);
      const auto apply_chunk = [&](auto streamed) {
        for (std::size_t b = 0; b < cb; ++b) {
          const std::size_t c0 = (b0 + b) * block, count = std::min(block, row_length - c0);
          const auto kernel = kernel_at(f, pr, b);
          for (std::size_t r = r0; r < r1; ++r)
            apply_run<Policy, Format, decltype(streamed)::value>(kernel, x + r * row_stride + c0, y + r * row_stride + c0,
                                                                 mask ? mask + r * row_stride + c0 : nullptr, count);
        }
      };
      if (streaming) apply_chunk(std::true_type{});
      else apply_chunk(std::false_type{});
    }
  }
  if (streaming) streaming_fence();
}

template <class Policy, class Format, bool Observe>
void block_scaled_walk(const Format& f, const block_layout& bl, const float* x, float* y, float* state, bool* mask) {
  constexpr std::size_t S = Format::state_size;
  const std::size_t outer = bl.shape.outer, L = bl.shape.channels, inner = bl.shape.inner;
  const std::size_t nb = bl.blocks_per_row(), B = bl.block, T = bl.tile_rows;
  const std::size_t n = bl.shape.size();
  if (n == 0) return;
  const bool worth_threads = n >= XQ_PARALLEL_THRESHOLD;
  if (inner == 1) {
    // rows = outer; row o's states start at state + o * nb * S
    parallel_chunks(worth_threads ? max_threads() : 1, outer, T, [&](std::size_t begin, std::size_t end) {
      std::vector<float*> row_state(end - begin);
      for (std::size_t o = begin; o < end; ++o) row_state[o - begin] = state + o * nb * S;
      walk_rows<Policy, Format, Observe>(f, T, x, y, mask, begin, end, L, L, B, row_state.data(), S,
                                         is_simd_policy_v<Policy> && use_streaming_stores(n));
    });
    return;
  }
  // Blocks along a middle axis: one (outer, block) slab at a time, transposed; its rows are
  // the `inner` columns, each one block long, their states `inner * S` floats apart.
  const std::size_t slabs = outer * nb;
  parallel_chunks(worth_threads ? max_threads() : 1, slabs, 1, [&](std::size_t begin, std::size_t end) {
    std::vector<float> in(B * inner), out(B * inner);
    std::vector<unsigned char> mbuf(mask ? B * inner : 0);
    std::vector<float*> row_state(inner);
    for (std::size_t s = begin; s < end; ++s) {
      const std::size_t o = s / nb, b = s % nb;
      const std::size_t c0 = b * B, count = std::min(B, L - c0);
      gather_slab(x + (o * L + c0) * inner, count, inner, in.data());
      for (std::size_t i = 0; i < inner; ++i) row_state[i] = state + ((o * nb + b) * inner + i) * S;
      bool* m = mask ? reinterpret_cast<bool*>(mbuf.data()) : nullptr;
      walk_rows<Policy, Format, Observe>(f, T, in.data(), out.data(), m, 0, inner, count, count, count,
                                         row_state.data(), S);
      scatter_slab(out.data(), count, inner, y + (o * L + c0) * inner);
      if (mask) scatter_mask(m, count, inner, mask + (o * L + c0) * inner);
    }
  });
}

}  // namespace detail

/// The statistics of n contiguous floats (abs_max: max |x|; min_max: min and max; NaN when a
/// value is NaN), split across threads when large (max and min do not depend on the order).
template <class Policy>
block_stats tensor_stats(block_statistic kind, const float* x, std::size_t n) {
  const int threads = n >= XQ_PARALLEL_THRESHOLD ? max_threads() : 1;
  std::vector<float> lo(std::size_t(std::max(threads, 1))), hi(lo.size());
  std::vector<unsigned char> nan(lo.size(), 0);
  const std::size_t chunk = threads > 1 ? (n + std::size_t(threads) - 1) / std::size_t(threads) : n;
  parallel_items(threads, lo.size(), [&](std::size_t t0, std::size_t t1) {
    for (std::size_t t = t0; t < t1; ++t) {
      detail::start_stats(kind, lo[t], hi[t]);
      bool any = false;
      const std::size_t begin = std::min(n, t * chunk), end = std::min(n, begin + chunk);
      if (begin < end) detail::accumulate_stats<Policy>(kind, x + begin, end - begin, lo[t], hi[t], any);
      nan[t] = any;
    }
  });
  float l, h;
  detail::start_stats(kind, l, h);
  bool any = false;
  for (std::size_t t = 0; t < lo.size(); ++t) {
    any = any || nan[t];
    l = std::min(l, lo[t]);
    h = std::max(h, hi[t]);
  }
  return detail::finish_stats(kind, l, h, any);
}

/// y = kernel(x) over n contiguous values (one state for all: a per-tensor format), and the
/// mask when not null; split across threads when large.
template <class Policy, class Format>
void elementwise_apply(const typename Format::kernel_type& kernel, const float* x, float* y, bool* mask,
                       std::size_t n) {
  const bool streaming = is_simd_policy_v<Policy> && detail::use_streaming_stores(n);
  parallel_for(n, 1024, [&](std::size_t begin, std::size_t end) {
    if (streaming) {
      detail::apply_run<Policy, Format, true>(kernel, x + begin, y + begin, mask ? mask + begin : nullptr, end - begin);
      detail::streaming_fence();
    } else {
      detail::apply_run<Policy, Format, false>(kernel, x + begin, y + begin, mask ? mask + begin : nullptr, end - begin);
    }
  });
}

/// Quantizes x into y block by block, computing each block's state (written to `state`,
/// block_count() * state_size floats) and, when `mask` is not null, the gradient mask.
template <class Policy, class Format>
void block_scaled_forward(const Format& f, const block_layout& bl, const float* x, float* y, float* state,
                          bool* mask = nullptr) {
  detail::block_scaled_walk<Policy, Format, true>(f, bl, x, y, state, mask);
}

/// Quantizes x into y with the given state (one per block, as block_scaled_forward wrote it).
template <class Policy, class Format>
void block_scaled_apply(const Format& f, const block_layout& bl, const float* x, float* y, const float* state,
                        bool* mask = nullptr) {
  detail::block_scaled_walk<Policy, Format, false>(f, bl, x, y, const_cast<float*>(state), mask);
}

/// dx from dy and the forward's mask: the kernel's `backward(dy, mask)` per block (for a format
/// whose gradient is the identity, dx = dy).
template <class Policy, class Format>
void block_scaled_backward(const Format& f, const block_layout& bl, const bool* mask, const float* dy, float* dx,
                           const float* state) {
  const std::size_t n = bl.shape.size();
  if constexpr (detail::has_identity_gradient<Format>::value) {
    (void)f;
    (void)mask;
    (void)state;
    if (dx != dy) std::memcpy(dx, dy, n * sizeof(float));
    return;
  } else {
    constexpr std::size_t S = Format::state_size, P = Format::param_count;
    const std::size_t outer = bl.shape.outer, L = bl.shape.channels, inner = bl.shape.inner;
    const std::size_t nb = bl.blocks_per_row(), B = bl.block;
    const bool worth_threads = n >= XQ_PARALLEL_THRESHOLD;
    parallel_chunks(worth_threads ? max_threads() : 1, outer, 1, [&](std::size_t begin, std::size_t end) {
      for (std::size_t o = begin; o < end; ++o)
        for (std::size_t b = 0; b < nb; ++b) {
          const std::size_t c0 = b * B, count = std::min(B, L - c0);
          if (inner == 1) {
            float p[P];
            f.kernel_params(state + (o * nb + b) * S, p);
            const std::size_t at = o * L + c0;
            detail::backward_run<Policy>(f.kernel(p), mask + at, dy + at, dx + at, count);
            continue;
          }
          for (std::size_t i = 0; i < inner; ++i) {  // a middle axis: each column of the slab
            float p[P];
            f.kernel_params(state + ((o * nb + b) * inner + i) * S, p);
            const auto k = f.kernel(p);
            for (std::size_t r = 0; r < count; ++r) {
              const std::size_t at = (o * L + c0 + r) * inner + i;
              dx[at] = k.backward(dy[at], mask[at] ? 1.0f : 0.0f);
            }
          }
        }
    });
  }
}

}  // namespace xq::kernels
