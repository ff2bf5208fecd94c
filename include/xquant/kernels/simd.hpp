#pragma once
/// \file simd.hpp
/// The xsimd walkers for simd_policy<Arch>: the same kernels as scalar.hpp,
/// instantiated with V = xsimd::batch<float, Arch>. Tails (and runs shorter
/// than a batch) use the kernel's float overloads, which compute the same
/// IEEE operations, so results are bit-identical to the scalar walkers.
/// Large tensors are split across threads (parallel.hpp).
///
/// Three things matter for speed (bench/README.md has the numbers):
///  - every walker copies the kernel (and the pointers it walks) into locals
///    before its loop. xsimd's stores are may-alias intrinsics, so the
///    compiler must assume each store to the output may change anything
///    reached through a reference, and would reload and re-broadcast every
///    kernel parameter in every iteration;
///  - per channel with channels last, rows are walked in small tiles, one
///    group of W channels at a time, so a group's parameters are loaded once
///    per tile rather than once per row (5 parameter loads per batch made
///    that loop load-bound);
///  - outputs larger than XQ_STREAMING_STORE_THRESHOLD floats are written with
///    non-temporal (streaming) stores, as memcpy does for large copies: they
///    would not stay in cache anyway, and a plain store first reads the
///    destination line (read-for-ownership), a third memory stream.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "channel_layout.hpp"
#include "lane_sums.hpp"
#include "math.hpp"
#include "parallel.hpp"
#include "policy.hpp"
#include "simd_mask.hpp"

/// Outputs of at least this many floats (per call, not per thread) are written
/// with streaming stores. 4Mi floats = 16 MiB of output, 32 MiB with the
/// input: more than the last-level cache of most machines.
#ifndef XQ_STREAMING_STORE_THRESHOLD
#define XQ_STREAMING_STORE_THRESHOLD (std::size_t(1) << 22)
#endif

namespace xq::kernels {

namespace detail {
template <class A>
using fbatch = xsimd::batch<float, A>;

inline bool use_streaming_stores(std::size_t n) { return n >= XQ_STREAMING_STORE_THRESHOLD; }

/// Stores a batch to a cache-line (64-byte) aligned address without
/// allocating the line in cache, where the architecture has such a store.
template <class A>
XQ_ALWAYS_INLINE void store_streaming(const fbatch<A>& v, float* p) {
#if XSIMD_WITH_AVX512F
  if constexpr (std::is_base_of_v<xsimd::avx512f, A>) {
    _mm512_stream_ps(p, v);
    return;
  }
#endif
#if XSIMD_WITH_AVX
  if constexpr (std::is_base_of_v<xsimd::avx, A>) {
    _mm256_stream_ps(p, v);
    return;
  }
#endif
#if XSIMD_WITH_SSE2
  if constexpr (std::is_base_of_v<xsimd::sse2, A>) {
    _mm_stream_ps(p, v);
    return;
  }
#endif
  v.store_aligned(p);
}

/// Orders streaming stores before whatever the caller does next (they are
/// weakly ordered on x86); called once at the end of each streamed run.
XQ_ALWAYS_INLINE void streaming_fence() {
#if XSIMD_WITH_SSE2
  _mm_sfence();
#endif
}

/// Elements to handle one at a time before `p + head` is 64-byte aligned
/// (p itself must be aligned for float).
inline std::size_t elements_to_alignment(const float* p) {
  return (64 - std::size_t(reinterpret_cast<std::uintptr_t>(p) % 64)) % 64 / sizeof(float);
}

/// The loop shared by every flat walker: out[i] = batch_at(i) for each full
/// batch, one_at(i) (which writes out[i] itself) for the rest.
/// `batch_at(i)` may also write other outputs of batch i (the mask). With
/// Streaming, elements are first taken one at a time until `out` is aligned,
/// then the batches are written with streaming stores.
template <class A, bool Streaming, class BatchAt, class OneAt>
XQ_ALWAYS_INLINE void walk(float* out, std::size_t n, BatchAt&& batch_at, OneAt&& one_at) {
  constexpr std::size_t W = fbatch<A>::size;
  std::size_t i = 0;
  if constexpr (Streaming) {
    if (reinterpret_cast<std::uintptr_t>(out) % sizeof(float) != 0)  // cannot be aligned
      return walk<A, false>(out, n, batch_at, one_at);
    const std::size_t head = std::min(n, elements_to_alignment(out));
    for (; i < head; ++i) one_at(i);
  }
  const auto store = [out](const fbatch<A>& v, std::size_t at) {
    if constexpr (Streaming) store_streaming<A>(v, out + at);
    else v.store_unaligned(out + at);
  };
  for (; i + 4 * W <= n; i += 4 * W) {  // four independent batches per iteration
    const fbatch<A> a = batch_at(i);
    const fbatch<A> b = batch_at(i + W);
    const fbatch<A> c = batch_at(i + 2 * W);
    const fbatch<A> d = batch_at(i + 3 * W);
    store(a, i);
    store(b, i + W);
    store(c, i + 2 * W);
    store(d, i + 3 * W);
  }
  for (; i + W <= n; i += W) store(batch_at(i), i);
  for (; i < n; ++i) one_at(i);
  if constexpr (Streaming) streaming_fence();
}

// One contiguous run of elements that share the kernel.
template <class A, bool Streaming, class K>
XQ_ALWAYS_INLINE void forward_run(const K& kernel, const float* x, float* y, std::size_t n) {
  using B = fbatch<A>;
  const K k = kernel;  // a local: stores to y cannot alias it (see the file comment)
  walk<A, Streaming>(
      y, n, [&](std::size_t i) { return k.forward(B::load_unaligned(x + i)); },
      [&](std::size_t i) { y[i] = k.forward(x[i]); });
}

template <class A, bool Streaming, class K>
XQ_ALWAYS_INLINE void forward_mask_run(const K& kernel, const float* x, float* y, bool* mask,
                                       std::size_t n) {
  using B = fbatch<A>;
  const K k = kernel;
  walk<A, Streaming>(
      y, n,
      [&](std::size_t i) {
        const B v = B::load_unaligned(x + i);
        store_mask<A>(k.passes(v), mask + i);
        return k.forward(v);
      },
      [&](std::size_t i) {
        y[i] = k.forward(x[i]);
        mask[i] = k.passes(x[i]);
      });
}

template <class A, bool Streaming, class K>
XQ_ALWAYS_INLINE void backward_run(const K& kernel, const float* x, const float* dy, float* dx,
                                   std::size_t n) {
  using B = fbatch<A>;
  const K k = kernel;
  walk<A, Streaming>(
      dx, n,
      [&](std::size_t i) {
        return k.input_grad(B::load_unaligned(x + i), B::load_unaligned(dy + i));
      },
      [&](std::size_t i) { dx[i] = k.input_grad(x[i], dy[i]); });
}

template <class A, bool Streaming>
XQ_ALWAYS_INLINE void apply_mask_run(const bool* mask, const float* dy, float* dx,
                                     std::size_t n) {
  using B = fbatch<A>;
  walk<A, Streaming>(
      dx, n,
      [&](std::size_t i) { return B::load_unaligned(dy + i) * load_mask_as_float<A>(mask + i); },
      [&](std::size_t i) { dx[i] = dy[i] * math::as_float(mask[i]); });
}

/// Splits [0, n) across threads and calls run(stream, begin, end) on each
/// part, where `stream` (std::true_type or std::false_type) says whether to
/// use streaming stores, chosen once from the size of the whole call.
template <class Run>
void walk_parallel(std::size_t n, Run&& run) {
  if (use_streaming_stores(n))
    parallel_for(n, 64, [&](std::size_t b, std::size_t e) { run(std::true_type{}, b, e); });
  else
    parallel_for(n, 64, [&](std::size_t b, std::size_t e) { run(std::false_type{}, b, e); });
}

// backward over one run, adding parameter-gradient terms to acc[0..terms)
// with position = index in the run (lane_sums.hpp).
template <class A, class K>
void backward_sums_run(const K& kernel, const float* x, const float* dy, float* dx,
                       std::size_t n, lane_sums* acc) {
  using B = fbatch<A>;
  constexpr std::size_t W = B::size;
  constexpr std::size_t terms = K::param_grad_count;
  static_assert(sum_lanes % W == 0, "xquant: the SIMD width must divide the 16 summation lanes");
  const K k = kernel;
  // The lanes live in locals during the loop (acc[j] is reached through a pointer
  // that the dx stores may alias, so its lanes would be reloaded and stored back for
  // every term); the additions per lane are the same, in the same order.
  alignas(64) double lane[terms][sum_lanes];
  for (std::size_t j = 0; j < terms; ++j)
    for (std::size_t l = 0; l < sum_lanes; ++l) lane[j][l] = acc[j].lane[l];
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const B xv = B::load_unaligned(x + i), dyv = B::load_unaligned(dy + i);
    k.input_grad(xv, dyv).store_unaligned(dx + i);
    B t[terms];
    k.param_grad_terms(xv, dyv, t);
    const std::size_t base = i % sum_lanes;  // i is a multiple of W, which divides 16
    for (std::size_t j = 0; j < terms; ++j) {
      alignas(64) float values[W];
      t[j].store_aligned(values);
      for (std::size_t l = 0; l < W; ++l) lane[j][base + l] += double(values[l]);
    }
  }
  for (std::size_t j = 0; j < terms; ++j)
    for (std::size_t l = 0; l < sum_lanes; ++l) acc[j].lane[l] = lane[j][l];
  for (; i < n; ++i) {
    dx[i] = k.input_grad(x[i], dy[i]);
    float t[terms];
    k.param_grad_terms(x[i], dy[i], t);
    for (std::size_t j = 0; j < terms; ++j) acc[j].add(i, t[j]);
  }
}
}  // namespace detail

template <class A, class K>
void forward(simd_policy<A>, const K& k, const float* x, float* y, std::size_t n) {
  detail::walk_parallel(n, [&](auto stream, std::size_t b, std::size_t e) {
    detail::forward_run<A, decltype(stream)::value>(k, x + b, y + b, e - b);
  });
}

template <class A, class K>
void forward_with_mask(simd_policy<A>, const K& k, const float* x, float* y, bool* mask,
                       std::size_t n) {
  detail::walk_parallel(n, [&](auto stream, std::size_t b, std::size_t e) {
    detail::forward_mask_run<A, decltype(stream)::value>(k, x + b, y + b, mask + b, e - b);
  });
}

template <class A, class K>
void backward(simd_policy<A>, const K& k, const float* x, const float* dy, float* dx,
              std::size_t n) {
  detail::walk_parallel(n, [&](auto stream, std::size_t b, std::size_t e) {
    detail::backward_run<A, decltype(stream)::value>(k, x + b, dy + b, dx + b, e - b);
  });
}

template <class A>
void apply_mask(simd_policy<A>, const bool* mask, const float* dy, float* dx, std::size_t n) {
  detail::walk_parallel(n, [&](auto stream, std::size_t b, std::size_t e) {
    detail::apply_mask_run<A, decltype(stream)::value>(mask + b, dy + b, dx + b, e - b);
  });
}

template <class A, class K>
void backward_with_sums(simd_policy<A>, const K& k, const float* x, const float* dy, float* dx,
                        float* sums, std::size_t n) {
  constexpr std::size_t terms = K::param_grad_count;
  const std::size_t blocks = (n + sum_block - 1) / sum_block;
  std::vector<double> block_totals(blocks * terms, 0.0);
  // Blocks are the unit of work, so the order of the sums does not depend on
  // the thread count.
  parallel_for_items(blocks, n >= XQ_PARALLEL_THRESHOLD, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t blk = b0; blk < b1; ++blk) {
      const std::size_t begin = blk * sum_block;
      const std::size_t end = begin + sum_block < n ? begin + sum_block : n;
      lane_sums acc[terms];
      detail::backward_sums_run<A>(k, x + begin, dy + begin, dx + begin, end - begin, acc);
      for (std::size_t j = 0; j < terms; ++j) block_totals[blk * terms + j] = acc[j].total();
    }
  });
  for (std::size_t j = 0; j < terms; ++j) {
    double t = 0.0;
    for (std::size_t blk = 0; blk < blocks; ++blk) t += block_totals[blk * terms + j];
    sums[j] = float(t);
  }
}

// ---- per channel ------------------------------------------------------------
// inner == 1 (channels last): a batch spans W consecutive channels of a row.
// inner  > 1: a batch spans one run of a single channel (broadcast params).

namespace detail {

/// Names a value type (float or a batch) for the strided loops below.
template <class V>
struct value_tag {
  using type = V;
};

XQ_ALWAYS_INLINE float load_value(value_tag<float>, const float* p) { return *p; }
template <class A>
XQ_ALWAYS_INLINE fbatch<A> load_value(value_tag<fbatch<A>>, const float* p) {
  return fbatch<A>::load_unaligned(p);
}
/// Stores v at p; Streaming (batches only) requires p 64-byte aligned.
template <bool Streaming>
XQ_ALWAYS_INLINE void store_value(float v, float* p) {
  *p = v;
}
template <bool Streaming, class A>
XQ_ALWAYS_INLINE void store_value(const fbatch<A>& v, float* p) {
  if constexpr (Streaming) store_streaming<A>(v, p);
  else v.store_unaligned(p);
}
XQ_ALWAYS_INLINE void store_mask_value(bool m, bool* p) { *p = m; }
template <class A>
XQ_ALWAYS_INLINE void store_mask_value(const xsimd::batch_bool<float, A>& m, bool* p) {
  store_mask<A>(m, p);
}

// `count` values of type V, `stride` floats apart, sharing one kernel (a
// column of W channels, or of one channel, in a tile of rows). The pointers
// and the kernel are parameters and locals, so they stay in registers: the
// intrinsic stores may alias anything, and a value read through a lambda's
// captures would be reloaded after every store.
template <class V, bool Streaming, class K>
XQ_ALWAYS_INLINE void forward_strided(const K& kernel, const float* x, float* y,
                                      std::size_t count, std::size_t stride) {
  const K k = kernel;
  for (std::size_t i = 0, end = count * stride; i < end; i += stride)
    store_value<Streaming>(k.forward(load_value(value_tag<V>{}, x + i)), y + i);
}

template <class V, bool Streaming, class K>
XQ_ALWAYS_INLINE void forward_mask_strided(const K& kernel, const float* x, float* y, bool* mask,
                                           std::size_t count, std::size_t stride) {
  const K k = kernel;
  for (std::size_t i = 0, end = count * stride; i < end; i += stride) {
    const V v = load_value(value_tag<V>{}, x + i);
    store_value<Streaming>(k.forward(v), y + i);
    store_mask_value(k.passes(v), mask + i);
  }
}

template <class V, bool Streaming, class K>
XQ_ALWAYS_INLINE void backward_strided(const K& kernel, const float* x, const float* dy,
                                       float* dx, std::size_t count, std::size_t stride) {
  const K k = kernel;
  for (std::size_t i = 0, end = count * stride; i < end; i += stride)
    store_value<Streaming>(
        k.input_grad(load_value(value_tag<V>{}, x + i), load_value(value_tag<V>{}, dy + i)),
        dx + i);
}

/// Calls body(begin, end) over [0, count) items (tiles, runs) as one
/// contiguous range per thread when `worth_it`. (parallel_for_items calls its
/// body once per item, with the fp-environment save/restore of parallel.hpp
/// around each call: too much for items of a few hundred elements.)
template <class Body>
void for_item_ranges(std::size_t count, bool worth_it, Body&& body) {
  const std::size_t parts = worth_it ? std::min(count, std::size_t(max_threads())) : 1;
  parallel_for_items(parts, worth_it, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p) body(count * p / parts, count * (p + 1) / parts);
  });
}

/// Elements per tile of rows in the channels-last walk: a group's parameters
/// are loaded once per tile, so larger tiles load less (1024 elements: 0.63
/// of memcpy at L2 against 0.56 with 256, 64 channels, Zen 4). A tensor
/// streamed from DRAM takes small tiles instead: a tile's column walk jumps a
/// row ahead per batch, and over 16 rows that defeats the hardware
/// prefetchers (1.0 of memcpy with 256-element tiles, 0.6-0.8 with 1024).
inline std::size_t channel_tile_elements(std::size_t tensor_elements) {
  return use_streaming_stores(tensor_elements) ? 256 : 1024;
}

/// Channels last (inner == 1): rows of C values. Rows are walked in tiles;
/// within a tile, for each group of W channels starting at column c,
/// `column(value_tag<batch>, k, first, rows, stream)` is called with the
/// group's batch kernel k, first = index of (first row of the tile, c); the
/// channels that do not fill a batch get the same call with value_tag<float>
/// and a float kernel. Consecutive rows of a column are C floats apart.
/// `stream` (std::true_type or std::false_type) is true for a large tensor
/// when every batch store to `out` fills one whole, aligned cache line
/// (64-byte batches, C a multiple of W, `out` 64-byte aligned): partial lines
/// written by streaming stores would be slow.
template <class A, class T, class Column>
void walk_channels_last(const T& table, const channel_layout& l, const float* out,
                        Column&& column) {
  using B = fbatch<A>;
  constexpr std::size_t W = B::size;
  const std::size_t C = l.channels;
  if (C == 0 || l.outer == 0) return;
  const std::size_t rows = std::max<std::size_t>(1, channel_tile_elements(l.size()) / C);
  const std::size_t tiles = (l.outer + rows - 1) / rows;
  const auto each = [&](auto stream) {
    for_item_ranges(tiles, l.size() >= XQ_PARALLEL_THRESHOLD, [&](std::size_t t0, std::size_t t1) {
      for (std::size_t t = t0; t < t1; ++t) {
        const std::size_t o0 = t * rows, count = std::min(rows, l.outer - o0);
        std::size_t c = 0;
        for (; c + W <= C; c += W)
          column(value_tag<B>{}, table.template at<B>(c), o0 * C + c, count, stream);
        for (; c < C; ++c)
          column(value_tag<float>{}, table.template at<float>(c), o0 * C + c, count, stream);
      }
      if constexpr (decltype(stream)::value) streaming_fence();
    });
  };
  const bool whole_lines = sizeof(B) == 64 && C % W == 0 &&
                           reinterpret_cast<std::uintptr_t>(out) % 64 == 0;
  if (whole_lines && use_streaming_stores(l.size())) each(std::true_type{});
  else each(std::false_type{});
}

/// inner > 1: calls run(k, r, stream) for each run r (channel r % C) with
/// the channel's float kernel; `stream` as in walk_parallel, for long runs of
/// a large tensor only (a run's unaligned head is taken one at a time).
template <class T, class Run>
void walk_channel_runs(const T& table, const channel_layout& l, Run&& run) {
  const std::size_t C = l.channels, runs = l.outer * l.channels;
  const bool worth_it = l.size() >= XQ_PARALLEL_THRESHOLD;
  const auto each = [&](auto stream) {
    for_item_ranges(runs, worth_it, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r) run(table.template at<float>(r % C), r, stream);
    });
  };
  if (use_streaming_stores(l.size()) && l.inner >= 1024) each(std::true_type{});
  else each(std::false_type{});
}

}  // namespace detail

template <class A, class T>
void forward_channels(simd_policy<A>, const T& table, const channel_layout& l, const float* x,
                      float* y) {
  if (l.inner == 1) {
    detail::walk_channels_last<A>(table, l, y, [&](auto v, const auto& k, std::size_t first,
                                                   std::size_t rows, auto stream) {
      detail::forward_strided<typename decltype(v)::type, decltype(stream)::value>(
          k, x + first, y + first, rows, l.channels);
    });
    return;
  }
  detail::walk_channel_runs(table, l, [&](const auto& k, std::size_t r, auto stream) {
    const std::size_t base = r * l.inner;
    detail::forward_run<A, decltype(stream)::value>(k, x + base, y + base, l.inner);
  });
}

template <class A, class T>
void forward_channels_with_mask(simd_policy<A>, const T& table, const channel_layout& l,
                                const float* x, float* y, bool* mask) {
  if (l.inner == 1) {
    detail::walk_channels_last<A>(table, l, y, [&](auto v, const auto& k, std::size_t first,
                                                   std::size_t rows, auto stream) {
      detail::forward_mask_strided<typename decltype(v)::type, decltype(stream)::value>(
          k, x + first, y + first, mask + first, rows, l.channels);
    });
    return;
  }
  detail::walk_channel_runs(table, l, [&](const auto& k, std::size_t r, auto stream) {
    const std::size_t base = r * l.inner;
    detail::forward_mask_run<A, decltype(stream)::value>(k, x + base, y + base, mask + base,
                                                         l.inner);
  });
}

template <class A, class T>
void backward_channels(simd_policy<A>, const T& table, const channel_layout& l, const float* x,
                       const float* dy, float* dx) {
  if (l.inner == 1) {
    detail::walk_channels_last<A>(table, l, dx, [&](auto v, const auto& k, std::size_t first,
                                                    std::size_t rows, auto stream) {
      detail::backward_strided<typename decltype(v)::type, decltype(stream)::value>(
          k, x + first, dy + first, dx + first, rows, l.channels);
    });
    return;
  }
  detail::walk_channel_runs(table, l, [&](const auto& k, std::size_t r, auto stream) {
    const std::size_t base = r * l.inner;
    detail::backward_run<A, decltype(stream)::value>(k, x + base, dy + base, dx + base, l.inner);
  });
}

template <class A, class T>
void backward_channels_with_sums(simd_policy<A>, const T& table, const channel_layout& l,
                                 const float* x, const float* dy, float* dx, float* sums) {
  using B = detail::fbatch<A>;
  constexpr std::size_t W = B::size;
  using kernel = decltype(table.template at<float>(0));
  constexpr std::size_t terms = kernel::param_grad_count;
  const std::size_t C = l.channels;
  if (l.inner == 1) {
    // Position in run is always 0: each channel's sum is a plain ordered sum.
    std::vector<double> acc(terms * C, 0.0);
    for (std::size_t o = 0; o < l.outer; ++o) {
      const std::size_t base = o * C;
      std::size_t c = 0;
      for (; c + W <= C; c += W) {
        const auto k = table.template at<B>(c);
        const B xv = B::load_unaligned(x + base + c), dyv = B::load_unaligned(dy + base + c);
        k.input_grad(xv, dyv).store_unaligned(dx + base + c);
        B t[terms];
        k.param_grad_terms(xv, dyv, t);
        for (std::size_t j = 0; j < terms; ++j) {
          alignas(64) float values[W];
          t[j].store_aligned(values);
          for (std::size_t w = 0; w < W; ++w) acc[j * C + c + w] += double(values[w]);
        }
      }
      for (; c < C; ++c) {
        const auto k = table.template at<float>(c);
        dx[base + c] = k.input_grad(x[base + c], dy[base + c]);
        float t[terms];
        k.param_grad_terms(x[base + c], dy[base + c], t);
        for (std::size_t j = 0; j < terms; ++j) acc[j * C + c] += double(t[j]);
      }
    }
    for (std::size_t j = 0; j < terms * C; ++j) sums[j] = float(acc[j]);
    return;
  }
  // Channel-major: acc[c * terms + j], so each run adds into its channel's terms in place.
  std::vector<lane_sums> acc(terms * C);
  for (std::size_t r = 0; r < l.outer * C; ++r) {
    const std::size_t c = r % C, base = r * l.inner;
    detail::backward_sums_run<A>(table.template at<float>(c), x + base, dy + base, dx + base,
                                 l.inner, &acc[c * terms]);
  }
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t j = 0; j < terms; ++j) sums[j * C + c] = float(acc[c * terms + j].total());
}

}  // namespace xq::kernels
