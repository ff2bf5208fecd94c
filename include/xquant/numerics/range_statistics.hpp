#pragma once
/// \file range_statistics.hpp
/// The min and max of a batch, per channel or per tensor, in one pass: the
/// statistic every range tracker starts from (tfmot's batch range, PyTorch's
/// observers, the fake_quantizer of each quantized layer). It runs on every
/// quantized layer input of every training step, so it is a kernel:
///
///  - xsimd batches with four independent accumulators per pass (per tensor),
///    or a row of channels per batch, loaded once per tile of rows (channels
///    on the last axis); a run of one channel at a time otherwise, into a
///    batch accumulator per channel;
///  - large tensors are split across threads (parallel.hpp), each part
///    reducing into its own min/max, combined at the end;
///  - the check that every value is finite rides in the same pass: it sums
///    x - x, which stays 0 for finite values and turns NaN at the first NaN or
///    ±Inf (no branch, no second pass). Only on failure is the tensor scanned
///    again, for the index of the culprit in the error message.
///
/// Min and max are exact whatever the order, so every policy and thread count
/// gives the same values. The one order-dependent bit is the sign of a zero:
/// a min or max that is zero takes the sign of the channel's first zero (in
/// memory order; a denormal counts as zero where they are read as zero, inside
/// a TensorFlow op), as the peers' sequential scans keep the first of equal
/// values. Finding it is a short scan from the channel's start (after a ReLU,
/// zeros are everywhere). That sign reaches an output only through TF QDQ of an
/// all-zero range, which multiplies by max / qmax; the stored ranges are
/// bit-identical to the sequential scans' anyway.
///
/// \code
///   auto s = xq::measure_range(x, xq::kernels::channel_layout::of(x.shape(), -1, "where"));
///   if (!s.finite) ...;            // s.min(c), s.max(c) per channel
/// \endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "../kernels/channel_layout.hpp"
#include "../kernels/parallel.hpp"
#include "../kernels/policy.hpp"
#include "../core/tensor.hpp"

namespace xq {

/// The min and max of each channel of one batch, and whether every value was
/// finite (when not, min and max mean nothing).
struct range_statistics {
  vector min;
  vector max;
  bool finite = true;
};

namespace kernels {

namespace detail {

/// One part's running statistics: min and max per channel, and the sum of
/// x - x over the part (0, or NaN after a NaN or ±Inf).
struct min_max_part {
  std::vector<float> min, max;
  float not_finite = 0.0f;

  explicit min_max_part(std::size_t channels)
      : min(channels, std::numeric_limits<float>::infinity()),
        max(channels, -std::numeric_limits<float>::infinity()) {}
};

XQ_ALWAYS_INLINE void min_max_one(float v, float& lo, float& hi, float& bad) {
  lo = v < lo ? v : lo;
  hi = v > hi ? v : hi;
  bad += v - v;
}

/// Folds n contiguous values into one channel's lo, hi and bad.
template <class A>
void min_max_run(const float* x, std::size_t n, float& lo, float& hi, float& bad) {
  using B = xsimd::batch<float, A>;
  constexpr std::size_t W = B::size;
  std::size_t i = 0;
  if (n >= W) {
    // Four chains per statistic: the loop is bound by load throughput, not
    // by the latency of one min/max/add chain.
    B lo0(lo), lo1(lo), lo2(lo), lo3(lo), hi0(hi), hi1(hi), hi2(hi), hi3(hi);
    B z0(0.0f), z1(0.0f), z2(0.0f), z3(0.0f);
    const float* __restrict p = x;
    for (; i + 4 * W <= n; i += 4 * W) {
      const B a = B::load_unaligned(p + i), b = B::load_unaligned(p + i + W);
      const B c = B::load_unaligned(p + i + 2 * W), d = B::load_unaligned(p + i + 3 * W);
      lo0 = xsimd::min(lo0, a);
      lo1 = xsimd::min(lo1, b);
      lo2 = xsimd::min(lo2, c);
      lo3 = xsimd::min(lo3, d);
      hi0 = xsimd::max(hi0, a);
      hi1 = xsimd::max(hi1, b);
      hi2 = xsimd::max(hi2, c);
      hi3 = xsimd::max(hi3, d);
      z0 += a - a;
      z1 += b - b;
      z2 += c - c;
      z3 += d - d;
    }
    for (; i + W <= n; i += W) {
      const B a = B::load_unaligned(p + i);
      lo0 = xsimd::min(lo0, a);
      hi0 = xsimd::max(hi0, a);
      z0 += a - a;
    }
    alignas(64) float l[W], h[W], z[W];
    xsimd::min(xsimd::min(lo0, lo1), xsimd::min(lo2, lo3)).store_aligned(l);
    xsimd::max(xsimd::max(hi0, hi1), xsimd::max(hi2, hi3)).store_aligned(h);
    ((z0 + z1) + (z2 + z3)).store_aligned(z);
    for (std::size_t j = 0; j < W; ++j) {
      lo = l[j] < lo ? l[j] : lo;
      hi = h[j] > hi ? h[j] : hi;
      bad += z[j];
    }
  }
  for (; i < n; ++i) min_max_one(x[i], lo, hi, bad);
}

/// Rows of C channels (channels last), rows [r0, r1): Kb batches of W
/// consecutive channels from column c0, kept in registers over the rows.
template <class A, std::size_t Kb>
XQ_ALWAYS_INLINE void min_max_columns(const float* x, std::size_t C, std::size_t r0,
                                      std::size_t r1, std::size_t c0, float* lo, float* hi,
                                      float& bad) {
  using B = xsimd::batch<float, A>;
  constexpr std::size_t W = B::size;
  B l[Kb], h[Kb], z[Kb];
  for (std::size_t k = 0; k < Kb; ++k) {
    l[k] = B::load_unaligned(lo + c0 + k * W);
    h[k] = B::load_unaligned(hi + c0 + k * W);
    z[k] = B(0.0f);
  }
  const float* __restrict p = x + c0;
  for (std::size_t r = r0; r < r1; ++r) {
    const float* row = p + r * C;
    for (std::size_t k = 0; k < Kb; ++k) {
      const B a = B::load_unaligned(row + k * W);
      l[k] = xsimd::min(l[k], a);
      h[k] = xsimd::max(h[k], a);
      z[k] += a - a;
    }
  }
  B zs(0.0f);
  for (std::size_t k = 0; k < Kb; ++k) {
    l[k].store_unaligned(lo + c0 + k * W);
    h[k].store_unaligned(hi + c0 + k * W);
    zs += z[k];
  }
  alignas(64) float zz[W];
  zs.store_aligned(zz);
  for (std::size_t j = 0; j < W; ++j) bad += zz[j];
}

/// Elements per tile of rows: small enough that a tile stays in L1 while
/// each group of channels walks it.
inline constexpr std::size_t min_max_tile_elements = 4096;

/// Channels last: rows [r0, r1) of C values into part.
template <class A>
void min_max_rows(const float* x, std::size_t C, std::size_t r0, std::size_t r1,
                  min_max_part& part) {
  using B = xsimd::batch<float, A>;
  constexpr std::size_t W = B::size;
  // At least 8 rows, so that loading and storing a group's accumulators
  // stays small next to the rows it reduces when C is large.
  const std::size_t tile = std::max<std::size_t>(8, min_max_tile_elements / C);
  float* lo = part.min.data();
  float* hi = part.max.data();
  for (std::size_t t0 = r0; t0 < r1; t0 += tile) {
    const std::size_t t1 = std::min(r1, t0 + tile);
    std::size_t c = 0;
    for (; c + 4 * W <= C; c += 4 * W) min_max_columns<A, 4>(x, C, t0, t1, c, lo, hi, part.not_finite);
    switch ((C - c) / W) {
      case 3: min_max_columns<A, 3>(x, C, t0, t1, c, lo, hi, part.not_finite); c += 3 * W; break;
      case 2: min_max_columns<A, 2>(x, C, t0, t1, c, lo, hi, part.not_finite); c += 2 * W; break;
      case 1: min_max_columns<A, 1>(x, C, t0, t1, c, lo, hi, part.not_finite); c += W; break;
      default: break;
    }
    for (; c < C; ++c)
      for (std::size_t r = t0; r < t1; ++r) min_max_one(x[r * C + c], lo[c], hi[c], part.not_finite);
  }
}

/// Runs of one channel (inner > 1), runs [r0, r1) into part. Long runs use
/// the four-chain loop; short ones fold into one batch accumulator per
/// channel, reduced across lanes once at the end (not once per run).
template <class A>
void min_max_runs(const float* x, const channel_layout& l, std::size_t r0, std::size_t r1,
                  min_max_part& part) {
  using B = xsimd::batch<float, A>;
  constexpr std::size_t W = B::size;
  const std::size_t C = l.channels, inner = l.inner;
  if (inner >= 16 * W || inner < W) {
    for (std::size_t r = r0; r < r1; ++r) {
      const std::size_t c = r % C;
      min_max_run<A>(x + r * inner, inner, part.min[c], part.max[c], part.not_finite);
    }
    return;
  }
  std::vector<float> lanes_lo(C * W, std::numeric_limits<float>::infinity());
  std::vector<float> lanes_hi(C * W, -std::numeric_limits<float>::infinity());
  B z(0.0f);
  for (std::size_t r = r0; r < r1; ++r) {
    const std::size_t c = r % C;
    const float* __restrict p = x + r * inner;
    B lo = B::load_unaligned(lanes_lo.data() + c * W), hi = B::load_unaligned(lanes_hi.data() + c * W);
    std::size_t i = 0;
    for (; i + W <= inner; i += W) {
      const B a = B::load_unaligned(p + i);
      lo = xsimd::min(lo, a);
      hi = xsimd::max(hi, a);
      z += a - a;
    }
    lo.store_unaligned(lanes_lo.data() + c * W);
    hi.store_unaligned(lanes_hi.data() + c * W);
    for (; i < inner; ++i) min_max_one(p[i], part.min[c], part.max[c], part.not_finite);
  }
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t j = 0; j < W; ++j) {
      const float lo = lanes_lo[c * W + j], hi = lanes_hi[c * W + j];
      part.min[c] = lo < part.min[c] ? lo : part.min[c];
      part.max[c] = hi > part.max[c] ? hi : part.max[c];
    }
  alignas(64) float zz[W];
  z.store_aligned(zz);
  for (std::size_t j = 0; j < W; ++j) part.not_finite += zz[j];
}

/// Splits `count` items into one contiguous range per thread when the tensor
/// is large, reduces each into its own part, and combines the parts.
template <class Reduce>
min_max_part reduce_parts(std::size_t count, std::size_t channels, std::size_t elements,
                          Reduce&& reduce) {
  const bool worth_it = elements >= XQ_PARALLEL_THRESHOLD && count > 1;
  const std::size_t parts = worth_it ? std::min(count, std::size_t(max_threads())) : 1;
  if (parts <= 1) {
    min_max_part all(channels);
    reduce(std::size_t(0), count, all);
    return all;
  }
  std::vector<min_max_part> partial(parts, min_max_part(channels));
  parallel_for_items(parts, true, [&](std::size_t p0, std::size_t p1) {
    for (std::size_t p = p0; p < p1; ++p) reduce(count * p / parts, count * (p + 1) / parts, partial[p]);
  });
  min_max_part all = std::move(partial[0]);
  for (std::size_t p = 1; p < parts; ++p) {
    for (std::size_t c = 0; c < channels; ++c) {
      all.min[c] = partial[p].min[c] < all.min[c] ? partial[p].min[c] : all.min[c];
      all.max[c] = partial[p].max[c] > all.max[c] ? partial[p].max[c] : all.max[c];
    }
    all.not_finite += partial[p].not_finite;
  }
  return all;
}

}  // namespace detail

/// Min and max of each channel of `x` (laid out as `l`) into min[c], max[c]
/// (+Inf / -Inf for an empty channel); returns whether every value is finite.
XQ_DECL bool min_max(scalar_policy, const float* x, const channel_layout& l, float* min, float* max);

template <class A>
bool min_max(simd_policy<A>, const float* x, const channel_layout& l, float* min, float* max) {
  const std::size_t C = l.channels, n = l.size();
  detail::min_max_part all(C);
  if (n == 0) {
    // nothing to reduce: +Inf / -Inf
  } else if (C == 1) {  // one range: split the elements
    all = detail::reduce_parts(n, 1, n, [x](std::size_t b, std::size_t e, detail::min_max_part& p) {
      detail::min_max_run<A>(x + b, e - b, p.min[0], p.max[0], p.not_finite);
    });
  } else if (l.inner == 1) {  // channels last: split the rows
    all = detail::reduce_parts(l.outer, C, n, [x, C](std::size_t r0, std::size_t r1,
                                                     detail::min_max_part& p) {
      detail::min_max_rows<A>(x, C, r0, r1, p);
    });
  } else {  // runs of one channel: split the runs
    all = detail::reduce_parts(l.outer * C, C, n, [x, &l](std::size_t r0, std::size_t r1,
                                                          detail::min_max_part& p) {
      detail::min_max_runs<A>(x, l, r0, r1, p);
    });
  }
  std::copy(all.min.begin(), all.min.end(), min);
  std::copy(all.max.begin(), all.max.end(), max);
  return all.not_finite == 0.0f;
}

}  // namespace kernels

namespace detail {
/// The first element of channel c, in memory order, that compares equal to
/// 0 (a denormal too, when they are read as zero). The channel has one.
XQ_DECL float first_zero(const float* x, const kernels::channel_layout& l, std::size_t c);
}  // namespace detail

/// The statistics of `x` per channel of `layout` (`channel_layout{1, 1, n}`
/// for one range over the whole tensor), in one pass.
template <class Policy = default_policy>
range_statistics measure_range(const tensor& x, const kernels::channel_layout& layout) {
  if (layout.size() != x.size())
    throw argument_error("xq::measure_range",
                         detail::concat("a layout of ", x.size(), " elements"),
                         detail::concat(layout.size(), " elements"));
  const std::size_t C = layout.channels;
  range_statistics s{vector::from_shape({C}), vector::from_shape({C}), true};
  s.finite = kernels::min_max(Policy{}, x.data(), layout, s.min.data(), s.max.data());
  if (s.finite) {
    for (std::size_t c = 0; c < C; ++c)
      if (s.min(c) == 0.0f || s.max(c) == 0.0f) {
        const float z = std::copysign(0.0f, detail::first_zero(x.data(), layout, c));
        if (s.min(c) == 0.0f) s.min(c) = z;
        if (s.max(c) == 0.0f) s.max(c) = z;
      }
  }
  return s;
}

/// One range over the whole tensor.
template <class Policy = default_policy>
range_statistics measure_range(const tensor& x) {
  return measure_range<Policy>(x, kernels::channel_layout{1, 1, x.size()});
}

/// Flat index of the first NaN or ±Inf in `x`, or x.size() (for error messages).
XQ_DECL std::size_t first_non_finite(const tensor& x);

}  // namespace xq

#if defined(XQ_SEPARATE_COMPILATION)
namespace xq {
// The default policy's (and the scalar reference's) measure_range are compiled in the
// library (numerics/impl/range_statistics.ipp).
extern template range_statistics measure_range<simd_policy<>>(const tensor&, const kernels::channel_layout&);
extern template range_statistics measure_range<simd_policy<>>(const tensor&);
extern template range_statistics measure_range<scalar_policy>(const tensor&, const kernels::channel_layout&);
extern template range_statistics measure_range<scalar_policy>(const tensor&);
}  // namespace xq
#endif

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/range_statistics.ipp"
#endif
