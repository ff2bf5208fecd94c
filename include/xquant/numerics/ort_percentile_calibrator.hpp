#pragma once
/// \file ort_percentile_calibrator.hpp
/// ONNX Runtime's `PercentileCalibrater` (onnxruntime/quantization/calibrate.py, 1.32.0):
/// its `HistogramCollector` with method "percentile", 2048 bins, percentile 99.999, per
/// tensor, bit for bit (the arithmetic is NumPy's: numpy_histogram.hpp). A plain percentile
/// of the observed values, in the peer's two flavours:
///
///  - **two-sided** (`symmetric=False`, the default; `collect_value`, `merge_histogram`):
///    a histogram of x over `[-t, t]`, t = max(|min|, |max|) of the first batch. A later batch
///    within t adds its counts; one beyond t grows the range by whole bins of the old width
///    on each side (`h = int((t' - t) // stride + 1)` bins per side, float32) and adds the old
///    counts in the middle; from an all-zero first batch (t = 0, bins over [-0.5, 0.5]) the
///    old counts are added bin for bin into the new range, as the peer does. The range cuts
///    `(100 - p) / 200` from each side: `(edges[searchsorted(cdf, cut)],
///    edges[searchsorted(cdf, 1 - cut)])`, clamped to the observed min and max.
///  - **symmetric** (`collect_absolute_value`): a histogram of |x| over the first batch's own
///    |x| range (NumPy's auto range, not from 0: later values below its first edge are
///    dropped, as in the peer); a batch beyond the last edge appends `np.arange` edges of the
///    same width. The range is `(-edges[i], edges[i])` with `i = searchsorted(cdf, p / 100)`,
///    then clamped to the observed (signed) min and max, so data without negative values gets
///    min = its minimum, as in the peer.
///
/// Deliberate differences: an empty batch, or one with NaN or ±Inf, is refused
/// (argument_error, nothing recorded) where the peer records an empty batch as the range
/// [0, 0], drops NaN (two-sided) or fails in np.histogram; compute_range before any data
/// throws, as the peer does. When both percentiles fall in one bin (one bin in all, or data
/// on one value), the peer's range has min above max; here the upper end is that bin's right
/// edge instead of its left one (clamped to the data as the peer clamps), so min <= max.
///
/// \code
///   xq::ort::percentile_calibrator calib;          // two-sided, 2048 bins, 99.999
///   calib.collect(batch.data(), batch.size());
///   auto [lo, hi] = calib.compute_range();
/// \endcode

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/sharded_batch.hpp"
#include "../core/tensor.hpp"

namespace xq::ort {

/// `PercentileCalibrater(symmetric, num_bins, percentile)`.
struct percentile_options {
  std::int64_t num_bins = 2048;
  double percentile = 99.999;  ///< in [0, 100]
  bool symmetric = false;
};

/// `PercentileCalibrater`'s collector and percentile, per tensor.
class percentile_calibrator {
 public:
  /// argument_error for num_bins < 1 or a percentile outside [0, 100].
  explicit percentile_calibrator(percentile_options options = {});

  /// Adds a batch of n values (argument_error for an empty batch or NaN/±Inf; nothing
  /// recorded then).
  ///
  /// `whole_batch`: the ranks holding the other shards of this batch (data-parallel
  /// calibration, core/sharded_batch.hpp): the range and the counts are the whole batch's,
  /// so every rank's histogram is the one a single process collecting the whole batch would
  /// hold. Every rank must call it, even on an empty shard.
  void collect(const float* data, std::size_t n, sharded_batch* whole_batch = nullptr);
  void collect(const tensor& x, sharded_batch* whole_batch = nullptr) { collect(x.data(), x.size(), whole_batch); }

  /// `compute_percentile`: (min, max) of the calibrated range (argument_error before any data).
  std::pair<float, float> compute_range() const;

  /// The state: int64 counts, float32 edges (one more than counts), the observed min and
  /// max, and the two-sided half range t (0 when symmetric); all empty/zero before any data.
  const std::vector<std::int64_t>& histogram() const noexcept { return hist_; }
  const std::vector<float>& bin_edges() const noexcept { return edges_; }
  float min() const noexcept { return min_; }
  float max() const noexcept { return max_; }
  float threshold() const noexcept { return threshold_; }
  bool empty() const noexcept { return hist_.empty(); }
  /// Restores a state saved from the accessors above (argument_error unless there are
  /// counts + 1 finite non-decreasing edges, counts >= 0, finite min <= max and t >= 0; or
  /// an empty histogram and edges).
  void restore(std::vector<std::int64_t> hist, std::vector<float> edges, float min, float max, float threshold);
  void reset() noexcept;
  const percentile_options& options() const noexcept { return options_; }

 private:
  percentile_options options_;
  std::vector<std::int64_t> hist_;
  std::vector<float> edges_;
  float min_ = 0.0f, max_ = 0.0f, threshold_ = 0.0f;
};

}  // namespace xq::ort

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/ort_percentile_calibrator.ipp"
#endif
