#pragma once
/// \file torch_cpu_kernels.ipp
/// PyTorch's CPU linspace, arange, histc, sums and cumsum (numerics/torch_cpu_kernels.hpp).

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "../torch_cpu_kernels.hpp"

namespace xq::torch::cpu {

XQ_DECL std::vector<float> linspace(float start, float end, std::int64_t steps) {
  if (steps <= 0) return {};
  if (steps == 1) return {start};  // linspace_out fills with start
  const float step = (end - start) / float(steps - 1);
  const std::int64_t halfway = steps / 2;
  std::vector<float> out(static_cast<std::size_t>(steps));
  for (std::int64_t i = 0; i < steps; ++i)
    out[std::size_t(i)] = i < halfway ? std::fma(step, float(i), start)
                                      : std::fma(-step, float(steps - i - 1), end);
  return out;
}

XQ_DECL std::vector<float> arange(double start, double end, double step) {
  constexpr const char* where = "torch.arange";
  if (!(step > 0 || step < 0)) throw argument_error(where, "a nonzero step", "step = 0");
  if (!std::isfinite(start) || !std::isfinite(end))
    throw argument_error(where, "finite bounds", xq::detail::concat("[", start, ", ", end, ")"));
  if (!((step > 0 && end >= start) || (step < 0 && end <= start)))
    throw argument_error(where, "bounds in the direction of the step",
                         xq::detail::concat("[", start, ", ", end, ") with step ", step));
  const double size_d = std::ceil((end - start) / step);
  if (!(size_d >= 0 && size_d <= double(std::int64_t(1) << 40)))
    throw argument_error(where, "a representable size", xq::detail::concat(size_d, " elements"));
  const std::int64_t n = std::int64_t(size_d);
  std::vector<float> out(static_cast<std::size_t>(n));
  constexpr std::int64_t W = 8;  // Vectorized<float>::size() on AVX2
  std::int64_t i = 0;
  // cpu_serial_kernel_vec: two vectors per iteration; each vector's lanes are
  // float(double(base) + k * step) from base = float(start + step * idx).
  for (; i + 2 * W <= n; i += 2 * W)
    for (std::int64_t v = 0; v < 2; ++v) {
      const std::int64_t idx = i + v * W;
      const float base = float(std::fma(step, double(idx), start));
      out[std::size_t(idx)] = base;
      out[std::size_t(idx + 1)] = float(double(base) + step);
      for (std::int64_t k = 2; k < W; ++k) out[std::size_t(idx + k)] = float(std::fma(double(k), step, double(base)));
    }
  for (; i < n; ++i) out[std::size_t(i)] = float(std::fma(step, double(i), start));
  return out;
}

XQ_DECL std::vector<float> histc(const float* x, std::size_t n, std::int64_t bins, double min, double max) {
  constexpr const char* where = "torch.histc";
  if (bins <= 0) throw argument_error(where, "bins > 0", xq::detail::concat("bins = ", bins));
  double lo = min, hi = max;
  // histc_select_outer_bin_edges
  if (lo == hi && n > 0) {
    float a = x[0], b = x[0];
    for (std::size_t i = 1; i < n; ++i) {
      a = x[i] < a ? x[i] : a;
      b = x[i] > b ? x[i] : b;
    }
    lo = a;
    hi = b;
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  if (!std::isfinite(lo) || !std::isfinite(hi))
    throw argument_error(where, "a finite range", xq::detail::concat("[", lo, ", ", hi, "]"));
  if (!(lo < hi)) throw argument_error(where, "max larger than min", xq::detail::concat("[", lo, ", ", hi, "]"));
  // The kernel reads the first and last of linspace(lo, hi, bins + 1) in float.
  const float start = float(lo), end = float(hi);
  const float step = (end - start) / float(bins);
  // A range wider than FLT_MAX makes the step infinite, and torch's edges inf * 0 = NaN:
  // torch then drops every value. The range's own ends instead (a deliberate difference).
  const bool wide = !std::isfinite(step);
  const float left = wide ? start : std::fma(step, 0.0f, start);
  const float right = wide ? end : std::fma(-step, 0.0f, end);
  const float scale = float(bins);
  const float width = right - left;
  std::vector<float> hist(std::size_t(bins), 0.0f);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (!(v >= left && v <= right)) continue;  // outside the range, or NaN
    // torch's kernel: static_cast<int64_t>((elt - leftmost) * bins / (rightmost - leftmost)),
    // in float. Above about FLT_MAX / bins (1.7e35 with 2048 bins) the product overflows
    // and torch converts inf (or inf / inf) to int64, which is undefined behaviour (on
    // x86 INT64_MIN, an index far outside the histogram). Where torch's float position is
    // finite it is kept, so every result torch defines stays bit for bit; elsewhere the
    // position is computed in double, where it cannot overflow; and it is clamped to the
    // bins before the cast.
    const float pos_f = (v - left) * scale / width;
    const double pos_d = std::isfinite(pos_f) && std::isfinite(width)
                             ? double(pos_f)
                             : (double(v) - double(left)) * double(bins) / (double(right) - double(left));
    const std::int64_t pos = pos_d >= double(bins - 1) ? bins - 1 : pos_d > 0.0 ? std::int64_t(pos_d) : 0;
    hist[std::size_t(pos)] += 1.0f;
  }
  return hist;
}

namespace detail {

template <std::size_t L>
using lanes = std::array<float, L>;

template <std::size_t L>
inline lanes<L> load_lanes(const float* p) {
  lanes<L> v;
  for (std::size_t k = 0; k < L; ++k) v[k] = p[k];
  return v;
}

template <std::size_t L>
inline void add_lanes(lanes<L>& a, const lanes<L>& b) {
  for (std::size_t k = 0; k < L; ++k) a[k] += b[k];
}

inline std::int64_t ceil_log2(std::int64_t x) {
  if (x <= 2) return 1;
  std::int64_t r = 0;
  std::uint64_t v = std::uint64_t(x) - 1;
  while (v) {
    ++r;
    v >>= 1;
  }
  return r;
}

/// SumKernel.cpp multi_row_sum: four rows of L-lane values at once, `size` of them, each
/// row `row_stride` floats after the last, a row's four values `col_stride` apart.
template <std::size_t L>
std::array<lanes<L>, 4> multi_row_sum(const float* in, std::int64_t row_stride, std::int64_t col_stride,
                                      std::int64_t size) {
  constexpr std::int64_t num_levels = 4, nrows = 4;
  const std::int64_t level_power = std::max<std::int64_t>(4, ceil_log2(size) / num_levels);
  const std::int64_t level_step = std::int64_t(1) << level_power;
  const std::int64_t level_mask = level_step - 1;
  lanes<L> zero{};
  std::array<std::array<lanes<L>, nrows>, num_levels> acc;
  for (auto& level : acc) level.fill(zero);
  std::int64_t i = 0;
  for (; i + level_step <= size;) {
    for (std::int64_t j = 0; j < level_step; ++j, ++i)
      for (std::int64_t k = 0; k < nrows; ++k) add_lanes(acc[0][k], load_lanes<L>(in + i * row_stride + k * col_stride));
    for (std::int64_t j = 1; j < num_levels; ++j) {
      for (std::int64_t k = 0; k < nrows; ++k) {
        add_lanes(acc[j][k], acc[j - 1][k]);
        acc[j - 1][k] = zero;
      }
      if ((i & (level_mask << (j * level_power))) != 0) break;
    }
  }
  for (; i < size; ++i)
    for (std::int64_t k = 0; k < nrows; ++k) add_lanes(acc[0][k], load_lanes<L>(in + i * row_stride + k * col_stride));
  for (std::int64_t j = 1; j < num_levels; ++j)
    for (std::int64_t k = 0; k < nrows; ++k) add_lanes(acc[0][k], acc[j][k]);
  return acc[0];
}

/// SumKernel.cpp row_sum: `size` L-lane values `stride` floats apart.
template <std::size_t L>
lanes<L> row_sum(const float* in, std::int64_t stride, std::int64_t size) {
  constexpr std::int64_t ilp = 4;
  const std::int64_t size_ilp = size / ilp;
  auto partial = multi_row_sum<L>(in, stride * ilp, stride, size_ilp);
  for (std::int64_t i = size_ilp * ilp; i < size; ++i) add_lanes(partial[0], load_lanes<L>(in + i * stride));
  for (std::int64_t k = 1; k < ilp; ++k) add_lanes(partial[0], partial[k]);
  return partial[0];
}

/// One row of vectorized_inner_sum (n >= 8) or of scalar_inner_sum (n < 8): the row's sum
/// before it is stored into (added to) the output.
inline float inner_sum(const float* x, std::int64_t size) {
  constexpr std::int64_t W = 8;  // Vectorized<float>::size() on AVX2
  if (size < W) return row_sum<1>(x, 1, size)[0];
  const std::int64_t vec_size = size / W;
  if (vec_size / 4 < 16) {
    // Below 16 rows of four vectors, multi_row_sum's level loop does not run: four
    // accumulators take the rows in turn, then row_sum's leftover vectors and the other three
    // accumulators go into the first (the same additions in the same order, in plain loops
    // the compiler vectorizes: small sums are the low-bit backwards' group and row sums).
    float acc[4][W] = {};
    const std::int64_t size_ilp = vec_size / 4;
    for (std::int64_t i = 0; i < size_ilp; ++i)
      for (std::int64_t k = 0; k < 4; ++k)
        for (std::int64_t l = 0; l < W; ++l) acc[k][l] += x[(i * 4 + k) * W + l];
    for (std::int64_t i = size_ilp * 4; i < vec_size; ++i)
      for (std::int64_t l = 0; l < W; ++l) acc[0][l] += x[i * W + l];
    for (std::int64_t k = 1; k < 4; ++k)
      for (std::int64_t l = 0; l < W; ++l) acc[0][l] += acc[k][l];
    float out = 0.0f;
    for (std::int64_t k = vec_size * W; k < size; ++k) out += x[k];
    for (std::int64_t l = 0; l < W; ++l) out += acc[0][l];
    return out;
  }
  const lanes<W> v = row_sum<W>(x, W, vec_size);
  float acc = 0.0f;
  for (std::int64_t k = vec_size * W; k < size; ++k) acc += x[k];
  for (std::size_t k = 0; k < std::size_t(W); ++k) acc += v[k];
  return acc;
}

/// The columns of a contiguous (rows, cols) matrix into out[0, cols): SumKernel.cpp
/// vectorized_outer_sum (cols >= 8) or scalar_outer_sum, each sum stored into a zero output.
inline void outer_sum(const float* x, std::int64_t rows, std::int64_t cols, float* out) {
  constexpr std::int64_t W = 8;
  std::int64_t j = 0;
  if (cols >= W) {
    for (; j + 4 * W <= cols; j += 4 * W) {
      const auto s = multi_row_sum<W>(x + j, cols, W, rows);
      for (std::int64_t k = 0; k < 4; ++k)
        for (std::int64_t l = 0; l < W; ++l) out[j + k * W + l] = 0.0f + s[std::size_t(k)][std::size_t(l)];
    }
    for (; j + W <= cols; j += W) {
      const auto s = row_sum<W>(x + j, cols, rows);
      for (std::int64_t l = 0; l < W; ++l) out[j + l] = 0.0f + s[std::size_t(l)];
    }
  } else {
    for (; j + 4 <= cols; j += 4) {
      const auto s = multi_row_sum<1>(x + j, cols, 1, rows);
      for (std::int64_t k = 0; k < 4; ++k) out[j + k] = 0.0f + s[std::size_t(k)][0];
    }
  }
  for (; j < cols; ++j) out[j] = 0.0f + row_sum<1>(x + j, cols, rows)[0];
}

inline void check_threads(int threads, const char* where) {
  if (threads < 1) throw argument_error(where, "threads >= 1", xq::detail::concat("threads = ", threads));
}

inline std::atomic<int>& reduction_threads_setting() {
  static std::atomic<int> threads{1};
  return threads;
}

}  // namespace detail

XQ_DECL float sum(const float* x, std::size_t n) {
  return 0.0f + detail::inner_sum(x, std::int64_t(n));  // the output starts at 0 and accumulates
}

XQ_DECL float sum(const float* x, std::size_t n, int threads) {
  detail::check_threads(threads, "xq::torch::cpu::sum");
  constexpr std::size_t grain = 32768;  // at::internal::GRAIN_SIZE
  if (threads == 1 || n < grain) return sum(x, n);  // parallel_reduce's serial path
  // two_pass_reduction: one partial sum per OpenMP thread of invoke_parallel, in a buffer
  // of get_num_threads() entries that starts at zero, then that buffer summed.
  const std::size_t team = std::size_t(threads);
  const std::size_t used = std::min(team, (n + grain - 1) / grain);
  const std::size_t chunk = (n + used - 1) / used;
  std::vector<float> buffer(team, 0.0f);
  for (std::size_t t = 0; t < used && t * chunk < n; ++t)
    buffer[t] = sum(x + t * chunk, std::min(chunk, n - t * chunk));
  return sum(buffer.data(), team);
}

XQ_DECL void sum_except_axis(const float* x, const kernels::channel_layout& layout, float* out, int threads) {
  detail::check_threads(threads, "xq::torch::cpu::sum_except_axis");
  const std::size_t outer = layout.outer, channels = layout.channels, inner = layout.inner;
  if (channels == 1) {  // TensorIterator drops the kept dim of size 1: a full reduction
    out[0] = sum(x, layout.size(), threads);
  } else if (inner > 1) {  // the reduced dims coalesce to (inner, outer), inner contiguous
    for (std::size_t c = 0; c < channels; ++c) {
      float acc = 0.0f;
      for (std::size_t o = 0; o < outer; ++o) acc += detail::inner_sum(x + (o * channels + c) * inner, std::int64_t(inner));
      out[c] = acc;
    }
  } else {  // channel last: columns of an (outer, channels) matrix
    detail::outer_sum(x, std::int64_t(outer), std::int64_t(channels), out);
  }
}

XQ_DECL int reduction_threads() noexcept { return detail::reduction_threads_setting().load(std::memory_order_relaxed); }

XQ_DECL void set_reduction_threads(int threads) {
  detail::check_threads(threads, "xq::torch::cpu::set_reduction_threads");
  detail::reduction_threads_setting().store(threads, std::memory_order_relaxed);
}

XQ_DECL std::vector<float> cumsum(const float* x, std::size_t n) {
  std::vector<float> out(n);
  double acc = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    acc += double(x[i]);
    out[i] = float(acc);
  }
  return out;
}

namespace detail {
// ATen's vec::minimum / vec::maximum on x86: minps(a, b) / maxps(a, b) (b unless a is
// strictly smaller / larger), OR-ed with the unordered mask (all-ones bits: a NaN).
inline float aten_minimum(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return -std::numeric_limits<float>::quiet_NaN();
  return a < b ? a : b;
}
inline float aten_maximum(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return -std::numeric_limits<float>::quiet_NaN();
  return a > b ? a : b;
}
// vec_reduce_all over the first `count` lanes of acc (lane 0 keeps the result).
template <class Op>
float aten_reduce_lanes(std::vector<float> acc, std::size_t count, bool tree, Op op) {
  if (tree && count == acc.size()) {
    for (std::size_t stride = acc.size() / 2; stride >= 1; stride /= 2) {
      std::vector<float> next(acc.size());
      for (std::size_t l = 0; l < acc.size(); ++l) next[l] = op(acc[l], acc[l ^ stride]);
      acc = std::move(next);
    }
    return acc[0];
  }
  for (std::size_t i = 1; i < count; ++i) acc[0] = op(acc[0], acc[i]);
  return acc[0];
}
}  // namespace detail

XQ_DECL std::pair<float, float> aminmax(const float* x, std::size_t n, std::size_t lanes, bool tree) {
  if (n == 0 || lanes == 0 || (lanes & (lanes - 1)) != 0)
    throw argument_error("torch.aminmax", "a non-empty tensor and a power-of-two lane count",
                         xq::detail::concat(n, " values, ", lanes, " lanes"));
  std::vector<float> lo(lanes, 0.0f), hi(lanes, 0.0f);
  if (n < lanes) {  // Vec::loadu(data, size): the lanes past n hold zeros
    for (std::size_t l = 0; l < n; ++l) lo[l] = hi[l] = x[l];
    return {detail::aten_reduce_lanes(lo, n, false, detail::aten_minimum),
            detail::aten_reduce_lanes(hi, n, false, detail::aten_maximum)};
  }
  for (std::size_t l = 0; l < lanes; ++l) lo[l] = hi[l] = x[l];
  std::size_t d = lanes;
  for (; d < n - n % lanes; d += lanes)
    for (std::size_t l = 0; l < lanes; ++l) {
      lo[l] = detail::aten_minimum(lo[l], x[d + l]);
      hi[l] = detail::aten_maximum(hi[l], x[d + l]);
    }
  for (std::size_t l = 0; d + l < n; ++l) {  // Vec::set(acc, f(acc, tail), n - d)
    lo[l] = detail::aten_minimum(lo[l], x[d + l]);
    hi[l] = detail::aten_maximum(hi[l], x[d + l]);
  }
  return {detail::aten_reduce_lanes(lo, lanes, tree, detail::aten_minimum),
          detail::aten_reduce_lanes(hi, lanes, tree, detail::aten_maximum)};
}

}  // namespace xq::torch::cpu
