#pragma once
/// \file torch_histogram_observer.hpp
/// PyTorch's `HistogramObserver` (torch/ao/quantization/observer.py, torch 2.15; the torchao
/// copy in torchao/quantization/pt2e/observer.py is the same), per tensor, bit for bit on the
/// CPU (AVX2 build, one thread; torch_cpu_kernels.hpp has the kernels):
///
///  - **collection** (`forward`): the first batch sets min/max and `histc(x, bins, min, max)`
///    (a constant batch: histc widens its own range to [c - 1, c + 1] while min == max stay
///    c). A batch inside the range adds its histc. A batch that widens the range is histc'd
///    over the new range, and the old histogram is re-binned into it
///    (`_combine_histograms`): with an old range of one value, all its counts go to that
///    value's new bin; otherwise (`_upscale_histogram`) each old bin is cut into 16
///    (`upsample_rate`) parts holding count / 16, each part goes to the new bin of its
///    midpoint (`bucketize(right=True) - 1`, clamped) by `bincount` in float32. The 2.0-era
///    file merged differently (`_adjust_min_max`, integral histograms, a reset below a 1e-6
///    range); golden files are pinned to 2.15.
///  - **`_non_linear_param_search`** (caffe2's NormMinimization): alpha/beta quantiles in
///    steps of 1e-5 (compared with the float32 cumulative sum after rounding to float32, as a
///    tensor-vs-Python-float comparison does), moving the side that advanced more bins, and
///    stopping at the first L2 error (`_compute_quantization_error`: each source bin's density
///    integrated as `density * (end^3 - begin^3) / 3` over the 2^bits destination bins, in
///    float32 tensor ops from Python-double widths) larger than the last; then
///    `new_min = min + width * start`, `new_max = min + width * (end + 1)`.
///  - **qparams**: `_calculate_qparams(new_min, new_max)` as torch_observers.hpp has it
///    (affine or symmetric, quint8/qint8, reduce_range).
///
/// Deliberate differences: a batch with NaN or ±Inf is refused (argument_error, nothing
/// recorded) where the peer fails in histc on NaN and drops ±Inf with a warning;
/// calculate_qparams before any data throws where the peer warns and returns scale 1, zero
/// point 0. An empty batch is ignored, as in the peer.
///
/// \code
///   xq::torch::histogram_observer obs;             // quint8, per-tensor affine, 2048 bins
///   obs.collect(batch.data(), batch.size());
///   xq::torch::qparams q = obs.calculate_qparams(); // q.scale(0), q.zero_point(0)
/// \endcode

#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/sharded_batch.hpp"
#include "../core/tensor.hpp"
#include "torch_observers.hpp"

namespace xq::torch {

/// `HistogramObserver(bins, dtype, qscheme, reduce_range, quant_min, quant_max, eps)`.
struct histogram_observer_options {
  std::int64_t bins = 2048;
  dtype type = dtype::quint8;
  qscheme scheme = qscheme::per_tensor_affine;  ///< per_tensor_affine or per_tensor_symmetric
  bool reduce_range = false;
  std::optional<std::int64_t> quant_min;
  std::optional<std::int64_t> quant_max;
  float eps = FLT_EPSILON;
};

/// `HistogramObserver` per tensor.
class histogram_observer {
 public:
  /// argument_error for bins < 1, a per-channel qscheme, or a range torch refuses.
  explicit histogram_observer(histogram_observer_options options = {});

  /// Records a batch of n values (`forward`; argument_error for NaN/±Inf, nothing recorded then).
  ///
  /// `whole_batch`: the ranks holding the other shards of this batch (data-parallel
  /// calibration, core/sharded_batch.hpp): the range and the counts are the whole batch's,
  /// so every rank's histogram is the one a single process collecting the whole batch would
  /// hold. Every rank must call it, even on an empty shard.
  void collect(const float* data, std::size_t n, sharded_batch* whole_batch = nullptr);
  void collect(const tensor& x, sharded_batch* whole_batch = nullptr) { collect(x.data(), x.size(), whole_batch); }

  /// `_non_linear_param_search`: the (new_min, new_max) that the qparams come from
  /// (argument_error before any data).
  std::pair<float, float> non_linear_param_search() const;

  /// `calculate_qparams`: one scale and zero point (argument_error before any data).
  qparams calculate_qparams() const;

  /// The state: float32 counts (`bins` of them) and the range, +Inf / -Inf before any data.
  const std::vector<float>& histogram() const noexcept { return histogram_; }
  float min_val() const noexcept { return min_val_; }
  float max_val() const noexcept { return max_val_; }
  bool empty() const noexcept;
  /// Restores a state saved from histogram(), min_val() and max_val() (argument_error unless
  /// there are `bins` finite counts >= 0 and min <= max are finite, or the +Inf / -Inf pair).
  void restore(std::vector<float> histogram, float min_val, float max_val);
  void reset() noexcept;
  const histogram_observer_options& options() const noexcept { return options_; }

 private:
  double quantization_error(std::int64_t start_bin, std::int64_t end_bin) const;

  histogram_observer_options options_;
  double dst_nbins_;
  std::vector<float> histogram_;
  float min_val_, max_val_;
};

}  // namespace xq::torch

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/torch_histogram_observer.ipp"
#endif
