#pragma once
/// \file ort_percentile_calibrator.ipp
/// ONNX Runtime's PercentileCalibrater collector (numerics/ort_percentile_calibrator.hpp).

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "../numpy_histogram.hpp"
#include "../ort_percentile_calibrator.hpp"

namespace xq::ort {

namespace detail {

/// np.floor_divide on float32 (npy_divmodf's quotient).
inline float floor_divide(float a, float b) {
  if (b == 0.0f) return a / b;
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div -= 1.0f;
  if (div != 0.0f) {
    float floordiv = std::floor(div);
    if (div - floordiv > 0.5f) floordiv += 1.0f;
    return floordiv;
  }
  return std::copysign(0.0f, a / b);
}

/// numpy.searchsorted(a, v, side='left') on float64, NaN sorting last.
inline std::size_t searchsorted_left(const std::vector<double>& a, double v) {
  auto less = [](double x, double y) { return x < y || (std::isnan(y) && !std::isnan(x)); };
  return std::size_t(std::lower_bound(a.begin(), a.end(), v, less) - a.begin());
}

}  // namespace detail

XQ_DECL percentile_calibrator::percentile_calibrator(percentile_options options) : options_(options) {
  constexpr const char* where = "ort.percentile_calibrator";
  if (options.num_bins < 1)
    throw argument_error(where, "num_bins >= 1", xq::detail::concat("num_bins = ", options.num_bins));
  if (!(options.percentile >= 0.0 && options.percentile <= 100.0))
    throw argument_error(where, "a percentile in [0, 100]", xq::detail::concat(options.percentile));
}

XQ_DECL void percentile_calibrator::reset() noexcept {
  hist_.clear();
  edges_.clear();
  min_ = max_ = threshold_ = 0.0f;
}

XQ_DECL void percentile_calibrator::collect(const float* data, std::size_t n, sharded_batch* whole_batch) {
  constexpr const char* where = "ort.percentile_calibrator.collect";
  if (n == 0 && !whole_batch) throw argument_error(where, "a non-empty batch", "0 values");
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(data[i]))
      throw argument_error(where, "finite values in the batch (nothing was recorded)",
                           xq::detail::concat(data[i], " at flat index ", i));
    lo = std::min(lo, data[i]);
    hi = std::max(hi, data[i]);
  }
  // Over every shard: the whole batch's minimum, maximum and maximum |x|.
  float abs_max = std::max(std::fabs(lo), std::fabs(hi));
  if (n == 0) abs_max = -std::numeric_limits<float>::infinity();
  if (whole_batch) {
    float packed[3] = {lo, -hi, -abs_max};
    whole_batch->min(packed, 3);
    lo = packed[0];
    hi = -packed[1];
    abs_max = -packed[2];
    if (lo > hi) throw argument_error(where, "a non-empty batch", "0 values on every rank");
  }
  // This batch's counts: over every shard, the whole batch's.
  auto summed = [&](auto counts) {
    if (whole_batch) sum_over_shards(*whole_batch, counts);
    return counts;
  };
  const bool first = hist_.empty();
  // Python's min/max of numpy scalars keep the first of equal values
  const float new_min = first ? lo : (lo < min_ ? lo : min_);
  const float new_max = first ? hi : (hi > max_ ? hi : max_);

  if (options_.symmetric) {  // collect_absolute_value
    std::vector<float> a(n);
    for (std::size_t i = 0; i < n; ++i) a[i] = std::fabs(data[i]);
    if (first) {
      // np.histogram(|x|, bins): the range is |x|'s own minimum and maximum.
      float a_min = std::numeric_limits<float>::infinity();
      for (float v : a) a_min = std::min(a_min, v);
      if (whole_batch) whole_batch->min(&a_min, 1);
      numpy::histogram_result r = numpy::histogram_uniform(a.data(), n, options_.num_bins, a_min, abs_max);
      hist_ = summed(std::move(r.counts));
      edges_ = std::move(r.edges);
    } else {
      const float temp_amax = abs_max;
      std::vector<std::int64_t> hist;
      if (temp_amax > edges_.back()) {
        // np.hstack((float32 edges, float64 np.arange)) is float64: the batch is binned
        // against the new edges as doubles, and the stored edges are their float32 copies.
        const float width = edges_[1] - edges_[0];
        const std::vector<double> more = numpy::arange(edges_.back() + width, temp_amax + width, width);
        std::vector<double> edges(edges_.begin(), edges_.end());
        edges.insert(edges.end(), more.begin(), more.end());
        hist = summed(numpy::histogram_edges(a.data(), n, edges));
        edges_.assign(edges.size(), 0.0f);
        for (std::size_t k = 0; k < edges.size(); ++k) edges_[k] = float(edges[k]);
      } else {
        hist = summed(numpy::histogram_edges(a.data(), n, edges_));
      }
      for (std::size_t k = 0; k < hist_.size(); ++k) hist[k] += hist_[k];
      hist_ = std::move(hist);
    }
    min_ = new_min;
    max_ = new_max;
    return;
  }

  // collect_value: threshold = max(|min|, |max|) in float32
  const float t = std::fabs(hi) > std::fabs(lo) ? std::fabs(hi) : std::fabs(lo);
  if (first) {
    numpy::histogram_result r = numpy::histogram_uniform(data, n, options_.num_bins, -t, t);
    hist_ = summed(std::move(r.counts));
    edges_ = std::move(r.edges);
    threshold_ = t;
  } else if (t <= threshold_) {  // merge_histogram, within the old range
    numpy::histogram_result r =
        numpy::histogram_uniform(data, n, std::int64_t(hist_.size()), -threshold_, threshold_);
    r.counts = summed(std::move(r.counts));
    for (std::size_t k = 0; k < hist_.size(); ++k) hist_[k] = r.counts[k] + hist_[k];
  } else if (threshold_ == 0.0f) {  // the old range was [-0.5, 0.5]: counts added bin for bin
    numpy::histogram_result r = numpy::histogram_uniform(data, n, std::int64_t(hist_.size()), -t, t);
    r.counts = summed(std::move(r.counts));
    for (std::size_t k = 0; k < hist_.size(); ++k) r.counts[k] += hist_[k];
    hist_ = std::move(r.counts);
    edges_ = std::move(r.edges);
    threshold_ = t;
  } else {  // grow by whole old bins on each side
    const std::int64_t old_bins = std::int64_t(hist_.size());
    const float old_stride = (2.0f * threshold_) / float(old_bins);
    const std::int64_t half = std::int64_t(detail::floor_divide(t - threshold_, old_stride) + 1.0f);
    const std::int64_t bins = old_bins + 2 * half;
    const float new_t = float(half) * old_stride + threshold_;
    numpy::histogram_result r = numpy::histogram_uniform(data, n, bins, -new_t, new_t);
    r.counts = summed(std::move(r.counts));
    for (std::int64_t k = 0; k < old_bins; ++k) r.counts[std::size_t(half + k)] += hist_[std::size_t(k)];
    hist_ = std::move(r.counts);
    edges_ = std::move(r.edges);
    threshold_ = new_t;
  }
  min_ = new_min;
  max_ = new_max;
}

XQ_DECL std::pair<float, float> percentile_calibrator::compute_range() const {
  if (hist_.empty())
    throw argument_error("ort.percentile_calibrator.compute_range", "a collected histogram (run collect first)",
                         "none");
  std::int64_t total = 0;
  for (std::int64_t c : hist_) total += c;
  std::vector<double> cdf(hist_.size());
  double acc = 0.0;
  for (std::size_t k = 0; k < hist_.size(); ++k) {
    acc += double(hist_[k]) / double(total);
    cdf[k] = acc;
  }
  const double p = options_.percentile;
  float lo, hi;
  if (options_.symmetric) {
    const float e = edges_[detail::searchsorted_left(cdf, p / 100.0)];
    lo = -e;
    hi = e;
  } else {
    const double cut = (100.0 - p) / 200.0;
    const std::size_t right = detail::searchsorted_left(cdf, 1.0 - cut);
    hi = edges_[right];
    lo = edges_[detail::searchsorted_left(cdf, cut)];
    // onnxruntime takes the left edge of the bin where the upper percentile falls. When both
    // percentiles fall in one bin (one bin in all, or data on one value) that edge is below
    // the data, and after the clamps below the peer returns min above max (one bin over
    // [1, 3]: (1, -3)). The bin's right edge then, clamped the same way: a valid range.
    if (std::max(lo, min_) > std::min(hi, max_)) hi = edges_[std::min(right + 1, edges_.size() - 1)];
  }
  if (lo < min_) lo = min_;
  if (hi > max_) hi = max_;
  if (hi < lo) hi = lo;  // never min above max (cannot happen after the above; kept as the contract)
  return {lo, hi};
}

XQ_DECL void percentile_calibrator::restore(std::vector<std::int64_t> hist, std::vector<float> edges, float min,
                                            float max, float threshold) {
  constexpr const char* where = "ort.percentile_calibrator.restore";
  if (!(hist.empty() && edges.empty())) {
    if (hist.empty() || edges.size() != hist.size() + 1)
      throw argument_error(where, "one edge more than counts",
                           xq::detail::concat(hist.size(), " counts and ", edges.size(), " edges"));
    for (std::size_t k = 0; k < hist.size(); ++k)
      if (hist[k] < 0) throw argument_error(where, "counts >= 0", xq::detail::concat(hist[k], " at bin ", k));
    for (std::size_t k = 0; k < edges.size(); ++k)
      if (!std::isfinite(edges[k]) || (k > 0 && edges[k] < edges[k - 1]))
        throw argument_error(where, "finite, non-decreasing edges", xq::detail::concat(edges[k], " at edge ", k));
    if (!(std::isfinite(min) && std::isfinite(max) && min <= max && std::isfinite(threshold) && threshold >= 0.0f))
      throw argument_error(where, "finite min <= max and threshold >= 0",
                           xq::detail::concat("min = ", min, ", max = ", max, ", threshold = ", threshold));
  }
  hist_ = std::move(hist);
  edges_ = std::move(edges);
  min_ = min;
  max_ = max;
  threshold_ = threshold;
}

}  // namespace xq::ort
