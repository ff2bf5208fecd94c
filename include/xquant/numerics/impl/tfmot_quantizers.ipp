#pragma once
/// \file tfmot_quantizers.ipp
/// tfmot's range rules and range_quantizer's code (numerics/tfmot_quantizers.hpp); in
/// separate mode also the quantizer's call for the default policy and the scalar reference.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "../range_statistics.hpp"
#include "../tfmot_quantizers.hpp"

namespace xq::tfmot {

XQ_DECL void adjust_batch_range(range_state& r, const quantizer_options& o) {
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

XQ_DECL range_state batch_range(const tensor& x, const quantizer_options& o) {
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

XQ_DECL void update_range(range_update u, range_state& state, const range_state& batch, double ema_decay) {
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

XQ_DECL range_quantizer::range_quantizer(range_update update, quantizer_options options, std::size_t channels,
                                         float init_min, float init_max)
    : update_(update), options_(options) {
  tf::fake_quant_grid(options.num_bits, options.narrow_range, "tfmot.range_quantizer");
  if (!options.per_channel) channels = 1;
  state_.min = vector::from_shape({channels});
  state_.max = vector::from_shape({channels});
  std::fill(state_.min.begin(), state_.min.end(), init_min);
  std::fill(state_.max.begin(), state_.max.end(), init_max);
}

XQ_DECL void range_quantizer::observe(const tensor& x) {
  const flush_denormals_scope as_in_tensorflow;
  const range_state b = batch_range(x, options_);
  if (b.min.size() != state_.min.size())
    throw argument_error("tfmot.range_quantizer",
                         xq::detail::concat(state_.min.size(), " channels (last dimension)"),
                         xq::detail::concat(b.min.size(), " channels"));
  update_range(update_, state_, b, options_.ema_decay);
}

XQ_DECL range_quantizer last_value_quantizer(int num_bits, bool per_axis, bool symmetric, bool narrow_range,
                                             std::size_t channels) {
  return range_quantizer(range_update::last_value, {num_bits, per_axis, symmetric, narrow_range},
                         channels);
}

XQ_DECL range_quantizer moving_average_quantizer(int num_bits, bool symmetric, bool narrow_range) {
  return range_quantizer(range_update::moving_average, {num_bits, false, symmetric, narrow_range});
}

XQ_DECL range_quantizer all_values_quantizer(int num_bits, bool symmetric, bool narrow_range) {
  return range_quantizer(range_update::all_values, {num_bits, false, symmetric, narrow_range}, 1,
                         0.0f, 0.0f);
}

#if defined(XQ_SEPARATE_COMPILATION)
template tensor range_quantizer::operator()<simd_policy<>>(const tensor&, bool);
template tensor range_quantizer::operator()<scalar_policy>(const tensor&, bool);
#endif

}  // namespace xq::tfmot
