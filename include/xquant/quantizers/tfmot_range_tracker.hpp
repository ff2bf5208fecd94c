#pragma once
/// \file tfmot_range_tracker.hpp
/// `xq::tfmot_range_tracker`: tfmot's range rules as a fake quantizer's tracker, for
/// the tf_qdq (NVIDIA) and tf_fake_quant (tfmot) numerics (docs/semantics.md §3, §4):
///  - the batch statistic: min and max per channel, then tfmot's adjustment
///    ([min(bmin, 0), max(bmax, 0)], or the symmetric rule), with denormals flushed as
///    inside the TF ops that compute it;
///  - last_value: the batch's range; moving_average: var -= (var - value) * (1 - decay)
///    from init_min / init_max, no zero-debias; all_values: the running min and max
///    from 0 / 0 (tfmot's AllValuesQuantizer).
/// Every rule works per tensor and per channel (tfmot itself keeps per-axis ranges for
/// LastValue only; this extends its rules channel by channel, starting each channel from
/// the initial range). The state is tfmot's "min_var" / "max_var".

#include <algorithm>
#include <string>
#include <utility>

#include "../core/fp_environment.hpp"
#include "../numerics/range_statistics.hpp"
#include "../numerics/tfmot_quantizers.hpp"
#include "range_tracker.hpp"

namespace xq {

class tfmot_range_tracker final : public range_tracker {
 public:
  /// The one instance (a tracker keeps no state of its own).
  static const tfmot_range_tracker& instance() {
    static const tfmot_range_tracker t;
    return t;
  }

  const char* min_name() const noexcept override { return "min_var"; }
  const char* max_name() const noexcept override { return "max_var"; }

  float initial_min(const quantizer_config& c) const noexcept override {
    return c.tracking == range_tracking::all_values ? 0.0f : c.init_min;
  }
  float initial_max(const quantizer_config& c) const noexcept override {
    return c.tracking == range_tracking::all_values ? 0.0f : c.init_max;
  }

  void current(const quantizer_config& c, std::size_t channels, vector& min, vector& max) const override {
    if (min.size() != 0) return;
    min = vector::from_shape({channels});
    max = vector::from_shape({channels});
    std::fill(min.begin(), min.end(), initial_min(c));
    std::fill(max.begin(), max.end(), initial_max(c));
  }

  void update(const quantizer_config& c, const tensor& x, const kernels::channel_layout& l, vector& min, vector& max,
              const std::string& where) const override {
    const flush_denormals_scope as_in_tensorflow;
    range_statistics s = measure_range(x, l);
    if (!s.finite) {
      const std::size_t at = first_non_finite(x);
      throw argument_error(where, "finite values in the training batch (the range is left as it was)",
                           detail::concat(x.data()[at], " at flat index ", at));
    }
    tfmot::range_state batch{std::move(s.min), std::move(s.max)};
    tfmot::adjust_batch_range(batch, {c.num_bits, c.per_channel, c.symmetric, c.narrow_range, c.ema_decay});
    tfmot::range_state state{min, max};
    current(c, l.channels, state.min, state.max);
    tfmot::update_range(rule(c.tracking), state, batch, c.ema_decay);
    min = std::move(state.min);
    max = std::move(state.max);
  }

 private:
  static tfmot::range_update rule(range_tracking t) noexcept {
    switch (t) {
      case range_tracking::last_value: return tfmot::range_update::last_value;
      case range_tracking::moving_average: return tfmot::range_update::moving_average;
      case range_tracking::all_values: return tfmot::range_update::all_values;
    }
    return tfmot::range_update::last_value;
  }
};

}  // namespace xq
