#pragma once
/// \file nvidia_calibrators.hpp
/// NVIDIA's post-training calibrators, per tensor: `MaxCalibrator` and `HistogramCalibrator`
/// of pytorch-quantization (NVIDIA/TensorRT tools/pytorch-quantization/pytorch_quantization/
/// calib/{max,histogram}.py), which live on unchanged in ModelOpt
/// (modelopt/torch/quantization/calib/, nvidia-modelopt 0.47, the golden source). Bit for
/// bit against ModelOpt run on the CPU with `torch_hist=True` (the default):
///
///  - **collection** (`HistogramCalibrator.collect`): a histogram of |x| (|x| only when the
///    batch has a negative value; `skip_zeros` drops ±0). The first batch fixes
///    `torch.histc(x, bins, 0, max)` and edges `torch.linspace(0, max, bins + 1)`. A later
///    batch whose max passes the last edge keeps the bin width: `bins = ceil(max / width)`,
///    edges `torch.arange(0, max + width, width)`, then histc over `[0, last edge]` with the
///    old counts added to the first bins. `arange` may give one edge more than `bins + 1`;
///    the peer keeps both as they are, and so does this (mse then refuses the mismatch, as
///    the peer's broadcast fails). The arithmetic is torch's CPU kernels
///    (torch_cpu_kernels.hpp).
///  - **entropy** (`_compute_amax_entropy`): counts as int32 (`.int()`), `bins[0] = bins[1]`,
///    then for each `i` from `start_bin` to `len(bins)` (inclusive) by `stride` the KL
///    divergence (`scipy.stats.entropy`, float64, NumPy's pairwise sums) between the first
///    `i` bins (the rest added into bin i - 1) and their merge into `2^(bits - 1 + unsigned)`
///    levels spread over each level's non-empty bins; the *last* minimum wins and
///    `amax = edges[i]`.
///    The `bins[0] = bins[1]` quirk: the peer writes through `bins = calib_hist[:]`, a view.
///    With `torch_hist=True` `calib_hist` is a fresh int32 copy of the torch histogram, so
///    the stored histogram is unchanged and a later percentile or mse sees the first bin as
///    collected; only the `torch_hist=False` (NumPy) path of the peer corrupts its stored
///    first bin. xquant collects the torch way: the first bin is replaced by the second in
///    the entropy search only.
///  - **mse** (`_compute_amax_mse`): float32 centers `(e[k+1] + e[k]) / 2`; for each center
///    `i` from `start_bin` by `stride`, `mean((fake_tensor_quant(c, c[i]) - c)^2 * counts)`
///    with torch's float32 sum; the *first* minimum wins, `amax = c[i]`. `fake_tensor_quant`
///    is pytorch-quantization's: `clamp(round_half_even(x * s), -b, b) / s` with
///    `b = 2^(bits - 1 + unsigned) - 1`, `s = b / amax` (narrow range; 0 for unsigned low
///    bound), and `s = 0` then 1 for amax <= 2^-24. ModelOpt 0.47 differs: its
///    `_compute_amax_mse` passes `num_bits` and `unsigned` positionally to a
///    `fake_tensor_quant` whose third and fourth parameters are now `bias` and `num_bits`,
///    so its search runs at 0 bits on shifted centers (tools/gen_golden_calibrators.py).
///    pytorch-quantization moves the search to `.cuda()`; on a GPU torch's sum adds in
///    another order, so ties between two candidates may break differently there.
///  - **percentile** (`_compute_amax_percentile`, default 99.99): `cdf = cumsum(hist / total)`
///    in float64, `amax = edges[searchsorted(cdf, p / 100)]`, the left edge of the bin
///    where the cdf reaches p.
///
/// Deliberate differences: a batch with NaN or ±Inf is refused (argument_error, nothing
/// recorded) where the peer fails in torch.histc, drops NaN silently (a later batch) or keeps
/// an infinite max (MaxCalibrator); an empty batch (or one left empty by skip_zeros) is refused
/// where the peer fails in `min()`/`max()`; a NaN percentile is refused where the peer takes
/// the last edge.
///
/// \code
///   xq::nvidia::histogram_calibrator calib;             // 8 bits, signed, 2048 bins
///   calib.collect(batch.data(), batch.size());
///   float amax = calib.compute_amax(xq::nvidia::amax_method::entropy);
/// \endcode

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/sharded_batch.hpp"
#include "../core/tensor.hpp"

namespace xq::nvidia {

/// `MaxCalibrator` per tensor: the running max of |x|.
class max_calibrator {
 public:
  /// `is_unsigned`: the quantizer's signedness (kept for the caller; the max is of |x|).
  explicit max_calibrator(bool is_unsigned = false) : is_unsigned_(is_unsigned) {}

  /// Folds max |x| of n values in (argument_error for n == 0 or a NaN/±Inf; nothing recorded then).
  void collect(const float* data, std::size_t n);
  void collect(const tensor& x) { collect(x.data(), x.size()); }

  /// The max |x| so far (argument_error before any data).
  float compute_amax() const;

  /// The state: the amax so far, none before any data.
  std::optional<float> amax() const noexcept { return amax_; }
  /// Restores a state saved from amax() (argument_error for a negative or non-finite amax).
  void restore(std::optional<float> amax);
  void reset() noexcept { amax_.reset(); }
  bool is_unsigned() const noexcept { return is_unsigned_; }

 private:
  bool is_unsigned_;
  std::optional<float> amax_;
};

/// The amax searches of `HistogramCalibrator.compute_amax`.
enum class amax_method { entropy, mse, percentile };

/// `HistogramCalibrator(num_bits, axis=None, unsigned, num_bins, skip_zeros, torch_hist=True)`.
struct histogram_options {
  int num_bits = 8;            ///< 1..16
  bool is_unsigned = false;
  std::int64_t num_bins = 2048;
  bool skip_zeros = false;
};

/// `compute_amax(method, stride=1, start_bin=128, percentile=99.99)`.
struct amax_options {
  std::int64_t stride = 1;       ///< entropy and mse: every stride-th candidate
  std::int64_t start_bin = 128;  ///< entropy and mse: the first candidate bin
  double percentile = 99.99;     ///< percentile: in [0, 100]
};

/// `HistogramCalibrator` per tensor.
class histogram_calibrator {
 public:
  /// argument_error for num_bins < 1 or num_bits outside 1..16.
  explicit histogram_calibrator(histogram_options options = {});

  /// Adds |x| of n values to the histogram (argument_error for an empty batch, one that
  /// skip_zeros leaves empty, or NaN/±Inf; nothing recorded then).
  ///
  /// `whole_batch`: the ranks holding the other shards of this batch (data-parallel
  /// calibration, core/sharded_batch.hpp): the sign test, the maximum and the counts are the
  /// whole batch's, so every rank's histogram is the one a single process collecting the
  /// whole batch would hold. Every rank must call it, even on an empty shard.
  void collect(const float* data, std::size_t n, sharded_batch* whole_batch = nullptr);
  void collect(const tensor& x, sharded_batch* whole_batch = nullptr) { collect(x.data(), x.size(), whole_batch); }

  /// The amax of the histogram so far (argument_error before any data, or for options the
  /// peer fails on: stride < 1, start_bin < 1 (entropy) or < 0 (mse), no candidate bin, a
  /// percentile outside [0, 100]).
  float compute_amax(amax_method method, const amax_options& options = {}) const;

  /// The state: float32 counts (torch.histc's dtype) and float32 edges; both empty before
  /// any data. After range growth there may be one edge more than counts + 1 (see above).
  const std::vector<float>& histogram() const noexcept { return hist_; }
  const std::vector<float>& bin_edges() const noexcept { return edges_; }
  bool empty() const noexcept { return hist_.empty(); }
  /// Restores a state saved from histogram() and bin_edges() (argument_error unless both are
  /// empty or there are at least hist.size() + 1 edges, non-decreasing and finite, and finite
  /// non-negative counts).
  void restore(std::vector<float> hist, std::vector<float> edges);
  void reset() noexcept {
    hist_.clear();
    edges_.clear();
  }
  const histogram_options& options() const noexcept { return options_; }

 private:
  histogram_options options_;
  std::vector<float> hist_, edges_;
};

/// `_compute_amax_entropy(hist, edges, num_bits, unsigned, stride, start_bin)`; the KL
/// divergence of each candidate into `divergences` when given.
XQ_DECL float compute_amax_entropy(const std::vector<float>& hist, const std::vector<float>& edges, int num_bits,
                                   bool is_unsigned, std::int64_t stride = 1, std::int64_t start_bin = 128,
                                   std::vector<double>* divergences = nullptr);

/// `_compute_amax_mse(hist, edges, num_bits, unsigned, stride, start_bin)` with
/// pytorch-quantization's fake_tensor_quant; each candidate's mean squared error into `mses`.
XQ_DECL float compute_amax_mse(const std::vector<float>& hist, const std::vector<float>& edges, int num_bits,
                               bool is_unsigned, std::int64_t stride = 1, std::int64_t start_bin = 128,
                               std::vector<float>* mses = nullptr);

/// `_compute_amax_percentile(hist, edges, percentile)`.
XQ_DECL float compute_amax_percentile(const std::vector<float>& hist, const std::vector<float>& edges,
                                      double percentile);

/// pytorch-quantization's `fake_tensor_quant(x, amax, num_bits, unsigned)` (narrow range) of
/// one float32 value, as `_tensor_quant` computes it on the CPU.
XQ_DECL float fake_tensor_quant(float x, float amax, int num_bits, bool is_unsigned);

}  // namespace xq::nvidia

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/nvidia_calibrators.ipp"
#endif
