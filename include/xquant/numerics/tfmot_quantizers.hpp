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

#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "range_statistics.hpp"
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
inline void adjust_batch_range(range_state& r, const quantizer_options& o) {
  for (std::size_t c = 0; c < r.min.size(); ++c) {
    const float bmin = r.min(c), bmax = r.max(c);
    if (o.symmetric) {
      // Python computes the ratio in double; it is exact in float32.
      const float ratio = o.narrow_range ? -1.0f
                                         : float(-double((1LL << o.num_bits) - 2) / double(1LL << o.num_bits));
      r.min(c) = std::min(bmin, bmax / ratio);
      r.max(c) = std::max(bmax, bmin * ratio);
    } else {
      r.min(c) = std::min(bmin, 0.0f);
      r.max(c) = std::max(bmax, 0.0f);
    }
  }
}

/// The batch statistic before it is stored (after the symmetric adjustment).
inline range_state batch_range(const tensor& x, const quantizer_options& o) {
  constexpr const char* where = "tfmot.batch_range";
  if (x.size() == 0) throw argument_error(where, "a non-empty input", "an empty tensor");
  const std::size_t channels = o.per_channel ? x.shape().back() : 1;
  if (o.per_channel && x.dimension() == 0)
    throw argument_error(where, "an input of rank >= 1 for per-channel ranges", "a scalar");
  // Channels on the last axis; one pass (range_statistics.hpp).
  range_statistics s = measure_range(x, kernels::channel_layout{x.size() / channels, channels, 1});
  if (!s.finite) {
    const std::size_t at = first_non_finite(x);
    throw argument_error(where, "finite values in the batch (the range is left as it was)",
                         xq::detail::concat(x.data()[at], " at flat index ", at));
  }
  range_state r{std::move(s.min), std::move(s.max)};
  adjust_batch_range(r, o);
  return r;
}

/// One update of the stored range by a batch statistic, by the rule `u`.
inline void update_range(range_update u, range_state& state, const range_state& batch,
                         double ema_decay) {
  // Python computes 1 - decay in double, then TF casts it to float32.
  const float rate = float(1.0 - ema_decay);
  for (std::size_t c = 0; c < batch.min.size(); ++c) {
    switch (u) {
      case range_update::last_value:
        state.min(c) = batch.min(c);
        state.max(c) = batch.max(c);
        break;
      case range_update::moving_average:
        state.min(c) = state.min(c) - (state.min(c) - batch.min(c)) * rate;
        state.max(c) = state.max(c) - (state.max(c) - batch.max(c)) * rate;
        break;
      case range_update::all_values:
        state.min(c) = std::min(state.min(c), batch.min(c));
        state.max(c) = std::max(state.max(c), batch.max(c));
        break;
    }
  }
}

/// One tfmot quantizer: its range variables and the update rule.
class range_quantizer {
 public:
  /// `init_min`/`init_max`: -6/+6 in tfmot's quantizer classes, 0/0 for
  /// AllValuesQuantizer.
  range_quantizer(range_update update, quantizer_options options, std::size_t channels = 1,
                  float init_min = -6.0f, float init_max = 6.0f)
      : update_(update), options_(options) {
    tf::fake_quant_grid(options.num_bits, options.narrow_range, "tfmot.range_quantizer");
    if (!options.per_channel) channels = 1;
    state_.min = vector::from_shape({channels});
    state_.max = vector::from_shape({channels});
    std::fill(state_.min.begin(), state_.min.end(), init_min);
    std::fill(state_.max.begin(), state_.max.end(), init_max);
  }

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
  void observe(const tensor& x) {
    const flush_denormals_scope as_in_tensorflow;
    const range_state b = batch_range(x, options_);
    if (b.min.size() != state_.min.size())
      throw argument_error("tfmot.range_quantizer",
                           xq::detail::concat(state_.min.size(), " channels (last dimension)"),
                           xq::detail::concat(b.min.size(), " channels"));
    update_range(update_, state_, b, options_.ema_decay);
  }

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
inline range_quantizer last_value_quantizer(int num_bits, bool per_axis, bool symmetric,
                                            bool narrow_range, std::size_t channels = 1) {
  return range_quantizer(range_update::last_value, {num_bits, per_axis, symmetric, narrow_range},
                         channels);
}

/// tfmot's `MovingAverageQuantizer(...)` (per tensor: tfmot ignores per_axis).
inline range_quantizer moving_average_quantizer(int num_bits, bool symmetric, bool narrow_range) {
  return range_quantizer(range_update::moving_average, {num_bits, false, symmetric, narrow_range});
}

/// tfmot's `AllValuesQuantizer(...)`: starts from 0/0, per tensor.
inline range_quantizer all_values_quantizer(int num_bits, bool symmetric, bool narrow_range) {
  return range_quantizer(range_update::all_values, {num_bits, false, symmetric, narrow_range}, 1,
                         0.0f, 0.0f);
}

}  // namespace xq::tfmot
