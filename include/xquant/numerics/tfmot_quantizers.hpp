#pragma once
/// \file tfmot_quantizers.hpp
/// tfmot's range-tracking quantizers, with their exact update rules
/// (tensorflow_model_optimization .../keras/quant_ops.py and quantizers.py;
/// docs/semantics.md §3): LastValueQuantize, MovingAvgQuantize and
/// AllValuesQuantize, each followed by TF FakeQuant (tf_fake_quant.hpp).
///
///  - The batch statistic reduces every axis but the last when per channel.
///  - Asymmetric: [min(bmin, 0), max(bmax, 0)].
///  - Symmetric: with r = -1 (narrow) or -(2^b - 2)/2^b (wide),
///    [min(bmin, bmax / r), max(bmax, bmin * r)], so the wide 8-bit grid is
///    exactly int8 [-128, 127].
///  - Moving average: var -= (var - value) * (1 - 0.999), no zero-debias; the
///    first batch does not overwrite the initial ±6.
///  - All values: var = min(var, statistic) / max(var, statistic).
/// tfmot accepts per-channel inputs of rank 2 and 4 only; here any rank >= 1.
/// Like every TF op, the updates run with denormals flushed to zero.
///
/// One deliberate difference: a batch with NaN or ±Inf is rejected with an
/// error and the range is left unchanged. tfmot stores it, after which every
/// output is NaN and a moving average never recovers.

#include <cstddef>

#include "tf_fake_quant.hpp"

namespace xq::tfmot {

/// How the stored range follows the batches.
enum class range_update {
  last_value,      ///< LastValueQuantize: the batch's range
  moving_average,  ///< MovingAvgQuantize: EMA with ema_decay
  all_values       ///< AllValuesQuantize: the running min and max
};

struct quantizer_options {
  int num_bits = 8;
  bool per_channel = false;  ///< one range per index of the last axis
  bool symmetric = false;
  bool narrow_range = false;
  double ema_decay = 0.999;  // double: Python computes 1 - decay in double
};

/// [min, max] of each channel (one value when not per channel).
struct range_state {
  vector min;
  vector max;
};

/// tfmot's adjustment of a batch's raw min and max, per channel, in place:
/// [min(bmin, 0), max(bmax, 0)], or the symmetric rule.
XQ_DECL void adjust_batch_range(range_state& r, const quantizer_options& o);

/// The batch statistic before it is stored (after the symmetric adjustment).
XQ_DECL range_state batch_range(const tensor& x, const quantizer_options& o);

/// One update of the stored range by a batch statistic, by the rule `u`.
XQ_DECL void update_range(range_update u, range_state& state, const range_state& batch, double ema_decay);

/// One tfmot quantizer: its range variables and the update rule.
class range_quantizer {
 public:
  /// `init_min`/`init_max`: -6/+6 in tfmot's quantizer classes, 0/0 for
  /// AllValuesQuantizer.
  range_quantizer(range_update update, quantizer_options options, std::size_t channels = 1, float init_min = -6.0f,
                  float init_max = 6.0f);

  /// Updates the range from `x` when training, then fake-quantizes `x` with
  /// the stored range (TF FakeQuant, per channel when configured).
  template <class Policy = default_policy>
  tensor operator()(const tensor& x, bool training = true) {
    const flush_denormals_scope as_in_tensorflow;
    if (training) observe(x);
    if (options_.per_channel)
      return tf::fake_quant_with_min_max_vars_per_channel<Policy>(x, state_.min, state_.max,
                                                                  options_.num_bits,
                                                                  options_.narrow_range);
    return tf::fake_quant_with_min_max_vars<Policy>(x, state_.min(0), state_.max(0),
                                                    options_.num_bits, options_.narrow_range);
  }

  /// The update alone.
  void observe(const tensor& x);

  const range_state& state() const noexcept { return state_; }
  range_state& state() noexcept { return state_; }
  const quantizer_options& options() const noexcept { return options_; }
  range_update update() const noexcept { return update_; }

 private:
  range_update update_;
  quantizer_options options_;
  range_state state_;
};

/// tfmot's `LastValueQuantizer(num_bits, per_axis, symmetric, narrow_range)`.
XQ_DECL range_quantizer last_value_quantizer(int num_bits, bool per_axis, bool symmetric, bool narrow_range,
                                             std::size_t channels = 1);

/// tfmot's `MovingAverageQuantizer(...)` (per tensor: tfmot ignores per_axis).
XQ_DECL range_quantizer moving_average_quantizer(int num_bits, bool symmetric, bool narrow_range);

/// tfmot's `AllValuesQuantizer(...)`: starts from 0/0, per tensor.
XQ_DECL range_quantizer all_values_quantizer(int num_bits, bool symmetric, bool narrow_range);

}  // namespace xq::tfmot

#if defined(XQ_SEPARATE_COMPILATION)
namespace xq::tfmot {
// The quantizer's call for the default policy and the scalar reference is compiled in the
// library (numerics/impl/tfmot_quantizers.ipp).
extern template tensor range_quantizer::operator()<simd_policy<>>(const tensor&, bool);
extern template tensor range_quantizer::operator()<scalar_policy>(const tensor&, bool);
}  // namespace xq::tfmot
#endif

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tfmot_quantizers.ipp"
#endif
