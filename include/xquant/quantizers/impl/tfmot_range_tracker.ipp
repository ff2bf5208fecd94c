#pragma once
/// \file tfmot_range_tracker.ipp
/// tfmot_range_tracker's code (quantizers/tfmot_range_tracker.hpp).

#include <algorithm>
#include <string>
#include <utility>

#include "../../core/fp_environment.hpp"
#include "../../numerics/range_statistics.hpp"
#include "../training_batch_range.hpp"
#include "../tfmot_range_tracker.hpp"

namespace xq {

XQ_DECL const tfmot_range_tracker& tfmot_range_tracker::instance() {
  static const tfmot_range_tracker t;
  return t;
}

XQ_DECL void tfmot_range_tracker::current(const quantizer_config& c, std::size_t channels, vector& min,
                                          vector& max) const {
  if (min.size() != 0) return;
  min = vector::from_shape({channels});
  max = vector::from_shape({channels});
  std::fill(min.begin(), min.end(), initial_min(c));
  std::fill(max.begin(), max.end(), initial_max(c));
}

XQ_DECL void tfmot_range_tracker::update(const quantizer_config& c, const tensor& x, const kernels::channel_layout& l,
                                         vector& min, vector& max, const std::string& where) const {
  const flush_denormals_scope as_in_tensorflow;
  range_statistics s = measure_training_batch_range(x, l, where);  // the whole batch's, under data parallelism
  tfmot::range_state batch{std::move(s.min), std::move(s.max)};
  tfmot::adjust_batch_range(batch, {c.num_bits, c.per_channel, c.symmetric, c.narrow_range, c.ema_decay});
  tfmot::range_state state{min, max};
  current(c, l.channels, state.min, state.max);
  tfmot::update_range(rule(c.tracking), state, batch, c.ema_decay);
  min = std::move(state.min);
  max = std::move(state.max);
}

XQ_DECL tfmot::range_update tfmot_range_tracker::rule(range_tracking t) noexcept {
  switch (t) {
    case range_tracking::last_value: return tfmot::range_update::last_value;
    case range_tracking::moving_average: return tfmot::range_update::moving_average;
    case range_tracking::all_values: return tfmot::range_update::all_values;
  }
  return tfmot::range_update::last_value;
}

}  // namespace xq
