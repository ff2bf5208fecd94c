#pragma once
/// \file numpy_histogram.ipp
/// NumPy's linspace, histogram, arange and pairwise sum (numerics/numpy_histogram.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../numpy_histogram.hpp"

namespace xq::numpy {

XQ_DECL std::vector<float> linspace(float start, float stop, std::int64_t num) {
  if (num <= 0) return {};
  std::vector<float> y(static_cast<std::size_t>(num));
  const std::int64_t div = num - 1;
  const float delta = stop - start;
  if (div == 0) {
    y[0] = 0.0f * delta + start;  // y = arange(1) * delta + start
    return y;
  }
  const float step = delta / float(div);
  for (std::int64_t i = 0; i < num; ++i) {
    // step == 0 (an underflow): y / div * delta instead
    const float v = step == 0.0f ? (float(i) / float(div)) * delta : float(i) * step;
    y[std::size_t(i)] = v + start;
  }
  y[std::size_t(num - 1)] = stop;
  return y;
}

XQ_DECL histogram_result histogram_uniform(const float* a, std::size_t n, std::int64_t bins, float first,
                                           float last) {
  constexpr const char* where = "np.histogram";
  if (bins <= 0) throw argument_error(where, "bins > 0", xq::detail::concat("bins = ", bins));
  if (first > last) throw argument_error(where, "range with min <= max", xq::detail::concat("[", first, ", ", last, "]"));
  if (!std::isfinite(first) || !std::isfinite(last))
    throw argument_error(where, "a finite range", xq::detail::concat("[", first, ", ", last, "]"));
  if (first == last) {  // _get_outer_edges: expand an empty range
    first = first - 0.5f;
    last = last + 0.5f;
  }
  histogram_result r{std::vector<std::int64_t>(std::size_t(bins), 0), linspace(first, last, bins + 1)};
  const float denom = last - first;
  const float numerator = float(bins);
  const std::vector<float>& e = r.edges;
  for (std::size_t i = 0; i < n; ++i) {
    const float v = a[i];
    if (!(v >= first && v <= last)) continue;
    std::int64_t k;
    if (std::isfinite(denom)) {
      // numpy's float32 index: 0 <= v - first <= denom, so it lies in [0, bins].
      k = std::min(std::int64_t(((v - first) / denom) * numerator), bins - 1);
      if (v < e[std::size_t(k)]) k -= 1;
      if (v >= e[std::size_t(k + 1)] && k != bins - 1) k += 1;
    } else {
      // A range wider than FLT_MAX: numpy's denominator and edges overflow, and it indexes
      // with the int cast of NaN (undefined behaviour). The index in double instead,
      // clamped to the bins before the cast; the float32 edges cannot correct it.
      const double k_d = (double(v) - double(first)) / (double(last) - double(first)) * double(bins);
      k = k_d >= double(bins - 1) ? bins - 1 : k_d > 0.0 ? std::int64_t(k_d) : 0;
    }
    r.counts[std::size_t(k)] += 1;
  }
  return r;
}

XQ_DECL histogram_result histogram_uniform(const float* a, std::size_t n, std::int64_t bins) {
  if (n == 0) return histogram_uniform(a, n, bins, 0.0f, 1.0f);
  float lo = a[0], hi = a[0];
  for (std::size_t i = 1; i < n; ++i) {
    lo = std::min(lo, a[i]);
    hi = std::max(hi, a[i]);
  }
  return histogram_uniform(a, n, bins, lo, hi);
}

namespace detail {
template <class Edge>
std::vector<std::int64_t> histogram_edges_of(const float* a, std::size_t n, const std::vector<Edge>& edges) {
  if (edges.size() < 2)
    throw argument_error("np.histogram", "at least two bin edges", xq::detail::concat(edges.size(), " edges"));
  const std::size_t bins = edges.size() - 1;
  std::vector<std::int64_t> counts(bins, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Edge v = Edge(a[i]);  // float32 data against float64 edges: compared as doubles (exact)
    if (!(v >= edges.front() && v <= edges.back())) continue;
    // _search_sorted_inclusive: the last k with e_k <= v; the last bin is closed
    std::size_t k = std::size_t(std::upper_bound(edges.begin(), edges.end(), v) - edges.begin()) - 1;
    if (k >= bins) k = bins - 1;
    counts[k] += 1;
  }
  return counts;
}
}  // namespace detail

XQ_DECL std::vector<std::int64_t> histogram_edges(const float* a, std::size_t n, const std::vector<float>& edges) {
  return detail::histogram_edges_of(a, n, edges);
}

XQ_DECL std::vector<std::int64_t> histogram_edges(const float* a, std::size_t n, const std::vector<double>& edges) {
  return detail::histogram_edges_of(a, n, edges);
}

XQ_DECL std::vector<double> arange(float start, float stop, float step) {
  const float range = stop - start;  // the length in float32, from the float32 scalars
  const float val = range / step;
  const double len_d = std::ceil(double(val));
  if (!(len_d > 0)) return {};
  const std::size_t len = std::size_t(len_d);
  std::vector<double> out(len);
  out[0] = double(start);
  if (len == 1) return out;
  const float next = start + step;  // numpy float32 scalars add in float32
  out[1] = double(next);
  const double delta = out[1] - out[0];  // DOUBLE_fill: start + i * delta, in double
  for (std::size_t i = 2; i < len; ++i) out[i] = out[0] + double(std::int64_t(i)) * delta;
  return out;
}

namespace detail {

inline double pairwise(const double* a, std::size_t n) {
  if (n < 8) {
    double res = 0.0;
    for (std::size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (std::size_t k = 0; k < 8; ++k) r[k] = a[k];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (std::size_t k = 0; k < 8; ++k) r[k] += a[i + k];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

}  // namespace detail

XQ_DECL double pairwise_sum(const double* a, std::size_t n) { return 0.0 + detail::pairwise(a, n); }

}  // namespace xq::numpy
