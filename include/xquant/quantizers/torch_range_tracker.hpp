#pragma once
/// \file torch_range_tracker.hpp
/// `xq::torch_range_tracker`: PyTorch's observers as a fake quantizer's tracker, for the
/// torch_fake_quant numerics (docs/semantics.md §5): the raw min and max of each batch
/// (no adjustment: PyTorch's qparams do the symmetric arithmetic), then
///  - moving_average: MovingAverageMinMaxObserver (the first batch copied, then
///    m += c * (cur - m) in float32, c = averaging_constant);
///  - all_values: MinMaxObserver (the running min and max);
///  - last_value: the batch alone (xquant's; PyTorch has no such observer).
/// The update is `torch::update_observed_range`, the function `torch::observer` runs.
/// Before any batch the state is PyTorch's: +Inf / -Inf per tensor, nothing per
/// channel; the numerics then use scale 1 and zero point 0. The state is PyTorch's
/// "min_val" / "max_val".

#include <limits>
#include <string>

#include "range_tracker.hpp"

namespace xq {

class torch_range_tracker final : public range_tracker {
 public:
  /// The one instance (a tracker keeps no state of its own).
  static const torch_range_tracker& instance();

  const char* min_name() const noexcept override { return "min_val"; }
  const char* max_name() const noexcept override { return "max_val"; }
  float initial_min(const quantizer_config&) const noexcept override { return std::numeric_limits<float>::infinity(); }
  float initial_max(const quantizer_config&) const noexcept override { return -std::numeric_limits<float>::infinity(); }
  void current(const quantizer_config&, std::size_t, vector&, vector&) const override {}

  XQ_DECL void update(const quantizer_config& c, const tensor& x, const kernels::channel_layout& l, vector& min, vector& max,
              const std::string& where) const override;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/torch_range_tracker.ipp"
#endif
