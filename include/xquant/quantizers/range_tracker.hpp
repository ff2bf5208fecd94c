#pragma once
/// \file range_tracker.hpp
/// `xq::range_tracker`: how a fake quantizer's range follows the training batches — the
/// observer of PyTorch's `FakeQuantize`, tfmot's LastValue / MovingAverage / AllValues
/// rules. One of the two parts a `fake_quantizer` is composed of (the other is its
/// numerics, quantizer_numerics.hpp).
///
/// A tracker is a stateless policy: the range it keeps is the quantizer's state, two
/// non-trainable parameters named as the peer names them ("min_var"/"max_var" in tfmot,
/// "min_val"/"max_val" in PyTorch), one value per channel. So a clone, a checkpoint and
/// the summary carry it like any parameter. The implementations:
///  - tfmot_range_tracker.hpp: tfmot's batch statistic and update rules (NVIDIA's
///    toolkit uses the same statistic);
///  - torch_range_tracker.hpp: PyTorch's MinMax and MovingAverageMinMax observers.
/// Post-training calibrators (histograms, percentiles) will be trackers too.

#include <cstddef>
#include <string>

#include "../core/tensor.hpp"
#include "../kernels/channel_layout.hpp"
#include "quantizer_config.hpp"

namespace xq {

class range_tracker {
 public:
  virtual ~range_tracker() = default;

  /// The names of the two state parameters, as the peer calls its variables.
  virtual const char* min_name() const noexcept = 0;
  virtual const char* max_name() const noexcept = 0;

  /// The stored range before any batch, per tensor (per channel: nothing is stored until
  /// the first batch tells how many channels there are).
  virtual float initial_min(const quantizer_config& c) const noexcept = 0;
  virtual float initial_max(const quantizer_config& c) const noexcept = 0;

  /// The range the numerics runs with, given the stored one: the stored range, or before
  /// the first per-channel batch (nothing stored) what the peer uses then for `channels`
  /// channels (tfmot: the initial range for each; PyTorch: nothing, its numerics then use
  /// scale 1 and zero point 0).
  virtual void current(const quantizer_config& c, std::size_t channels, vector& min, vector& max) const = 0;

  /// Updates the stored range from training batch `x` (laid out as `l`, checked against
  /// the stored channels). A batch with NaN or ±Inf throws argument_error naming `where`
  /// and changes nothing.
  virtual void update(const quantizer_config& c, const tensor& x, const kernels::channel_layout& l, vector& min,
                      vector& max, const std::string& where) const = 0;
};

}  // namespace xq
