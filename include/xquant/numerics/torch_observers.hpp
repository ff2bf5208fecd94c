#pragma once
/// \file torch_observers.hpp
/// PyTorch's observers and their qparams (torch/ao/quantization/observer.py,
/// utils.py; docs/semantics.md §5): MinMaxObserver, MovingAverageMinMaxObserver,
/// PerChannelMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
/// `calculate_qmin_qmax` and `_calculate_qparams`.
///
///  - Moving averages start from the first batch (no initial value), then
///    m += c * (cur - m) with c = 0.01 in float32.
///  - Symmetric scale: max(-min_neg, max_pos) / ((qmax - qmin) / 2), so qint8
///    gets amax / 127.5 (not TF's /127 or /128); zero point 0, or 128 for quint8.
///  - Affine: scale = (max_pos - min_neg) / (qmax - qmin) floored at eps,
///    zp = clamp(qmin - round_half_even(min_neg / scale)).
///  - min == max gives scale = eps (not 1.0, whatever the docstring says).
///  - One deliberate difference: a batch with NaN or ±Inf is rejected with an
///    error and the statistics stay as they were; PyTorch stores it and a
///    moving average never recovers.

#include <cfloat>
#include <cstdint>
#include <optional>
#include <string>

#include "../kernels/channel_layout.hpp"
#include "../core/tensor.hpp"
#include "torch_fake_quant.hpp"

namespace xq::torch {

enum class dtype { qint8, quint8, qint32, int16, uint16 };

enum class qscheme {
  per_tensor_affine,
  per_tensor_symmetric,
  per_channel_affine,
  per_channel_symmetric,
  per_channel_affine_float_qparams
};

inline bool is_per_channel(qscheme s) {
  return s == qscheme::per_channel_affine || s == qscheme::per_channel_symmetric ||
         s == qscheme::per_channel_affine_float_qparams;
}
inline bool is_symmetric(qscheme s) {
  return s == qscheme::per_tensor_symmetric || s == qscheme::per_channel_symmetric;
}

struct quant_range {
  std::int64_t quant_min;
  std::int64_t quant_max;
};

/// `calculate_qmin_qmax`: the integer range of a dtype, or the custom one
/// (which must contain 0), halved by reduce_range (floor division).
XQ_DECL quant_range calculate_qmin_qmax(std::optional<std::int64_t> quant_min, std::optional<std::int64_t> quant_max,
                                        dtype t, bool reduce_range);

/// Scale and zero point of each channel (one entry per tensor).
struct qparams {
  vector scale;
  index_vector zero_point;     ///< integer zero points
  vector float_zero_point;     ///< per_channel_affine_float_qparams only
};

struct observer_options {
  dtype type = dtype::quint8;
  qscheme scheme = qscheme::per_tensor_affine;
  bool reduce_range = false;
  std::optional<std::int64_t> quant_min;
  std::optional<std::int64_t> quant_max;
  float eps = FLT_EPSILON;  ///< torch.finfo(torch.float32).eps = 2^-23
  float averaging_constant = 0.01f;
  long ch_axis = 0;
  /// The torch CPU build whose `torch.aminmax` the per-tensor observers reproduce: it decides
  /// which zero a batch holding both -0.0 and +0.0 stores as its min (or max) (torch_cpu_kernels.hpp).
  cpu_capability capability = default_cpu_capability();
};

/// The float lanes of the vectors of torch's aminmax kernel in the build `c`: 8 in every
/// build (torch registers no AVX-512 aminmax_allreduce_kernel, so its avx512 capability runs
/// the AVX2 one: measured, tools/gen_golden_int8_findings.py). `cpu::aminmax` also takes 16.
constexpr std::size_t aminmax_lanes(cpu_capability) { return 8; }

/// `_calculate_qparams(min_val, max_val)` for one or more channels.
XQ_DECL qparams calculate_qparams(const vector& min_val, const vector& max_val, const observer_options& o);

/// Which statistic an observer keeps.
enum class observer_kind {
  min_max,                            ///< MinMaxObserver
  moving_average_min_max,             ///< MovingAverageMinMaxObserver
  per_channel_min_max,                ///< PerChannelMinMaxObserver
  moving_average_per_channel_min_max  ///< MovingAveragePerChannelMinMaxObserver
};

/// How an observer's statistics follow the batches.
enum class observer_update {
  min_max,         ///< the running min and max (MinMaxObserver)
  moving_average,  ///< the first batch copied, then m += c * (cur - m) (MovingAverage*Observer)
  last_value       ///< the batch alone (not a PyTorch observer; xquant's last-value tracking)
};

/// One observer step (PyTorch's `forward` of its observers): the stored `min_val` /
/// `max_val` (per tensor: +Inf / -Inf before the first batch; per channel: no values)
/// updated by a batch's min and max `cur_min` / `cur_max` (finite, one per channel).
/// Throws when the channel count changed; changes nothing then.
XQ_DECL void update_observed_range(observer_update u, float averaging_constant, bool per_channel, vector& min_val,
                                   vector& max_val, vector cur_min, vector cur_max, const std::string& where,
                                   long ch_axis);

/// A PyTorch observer: feed it batches, read its qparams.
class observer {
 public:
  /// Checks that `kind` and `options.scheme` agree and that the options give a grid
  /// (argument_error otherwise).
  observer(observer_kind kind, observer_options options);

  /// Records the statistics of `x` (forward pass of the observer); a batch with NaN or
  /// ±Inf throws and leaves the statistics as they were.
  void operator()(const tensor& x);

  /// The qparams of the statistics observed so far (argument_error before any batch).
  qparams calculate_qparams() const;

  const vector& min_val() const noexcept { return min_val_; }
  const vector& max_val() const noexcept { return max_val_; }
  const observer_options& options() const noexcept { return options_; }
  observer_kind kind() const noexcept { return kind_; }

 private:
  observer_kind kind_;
  observer_options options_;
  vector min_val_ = vector::from_shape({0});
  vector max_val_ = vector::from_shape({0});
};

}  // namespace xq::torch

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/torch_observers.ipp"
#endif
