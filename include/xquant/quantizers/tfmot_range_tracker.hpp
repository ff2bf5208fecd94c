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

#include <string>

#include "../numerics/tfmot_quantizers.hpp"
#include "range_tracker.hpp"

namespace xq {

class tfmot_range_tracker final : public range_tracker {
 public:
  /// The one instance (a tracker keeps no state of its own).
  static const tfmot_range_tracker& instance();

  const char* min_name() const noexcept override { return "min_var"; }
  const char* max_name() const noexcept override { return "max_var"; }

  float initial_min(const quantizer_config& c) const noexcept override {
    return c.tracking == range_tracking::all_values ? 0.0f : c.init_min;
  }
  float initial_max(const quantizer_config& c) const noexcept override {
    return c.tracking == range_tracking::all_values ? 0.0f : c.init_max;
  }

  XQ_DECL void current(const quantizer_config& c, std::size_t channels, vector& min, vector& max) const override;

  XQ_DECL void update(const quantizer_config& c, const tensor& x, const kernels::channel_layout& l, vector& min, vector& max,
              const std::string& where) const override;

 private:
  static tfmot::range_update rule(range_tracking t) noexcept;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tfmot_range_tracker.ipp"
#endif
