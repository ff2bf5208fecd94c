#pragma once
/// \file torch_range_tracker.ipp
/// torch_range_tracker's code (quantizers/torch_range_tracker.hpp).

#include <string>
#include <utility>

#include "../../numerics/range_statistics.hpp"
#include "../training_batch_range.hpp"
#include "../../numerics/torch_cpu_kernels.hpp"
#include "../../numerics/torch_observers.hpp"
#include "../torch_range_tracker.hpp"

namespace xq {

XQ_DECL const torch_range_tracker& torch_range_tracker::instance() {
  static const torch_range_tracker t;
  return t;
}

XQ_DECL void torch_range_tracker::update(const quantizer_config& c, const tensor& x, const kernels::channel_layout& l,
                                         vector& min, vector& max, const std::string& where) const {
  range_statistics s = measure_training_batch_range(x, l, where);  // the whole batch's, under data parallelism
  if (!c.per_channel && (s.min(0) == 0.0f || s.max(0) == 0.0f) && x.size() != 0 &&
      !sharded_batch::active(batch_dependence::quantizer_range)) {
    // Which zero torch.aminmax keeps (numerics/torch_cpu_kernels.hpp); one process's batch only.
    const torch::cpu_capability cap = torch::default_cpu_capability();
    const auto [lo, hi] = torch::cpu::aminmax(x.data(), x.size(), torch::aminmax_lanes(cap),
                                              cap != torch::cpu_capability::scalar);
    s.min(0) = lo;
    s.max(0) = hi;
  }
  const torch::observer_update u = c.tracking == range_tracking::moving_average ? torch::observer_update::moving_average
                                   : c.tracking == range_tracking::all_values   ? torch::observer_update::min_max
                                                                                : torch::observer_update::last_value;
  torch::update_observed_range(u, float(c.averaging_constant), c.per_channel, min, max, std::move(s.min),
                               std::move(s.max), where, c.channel_axis);
}

}  // namespace xq
