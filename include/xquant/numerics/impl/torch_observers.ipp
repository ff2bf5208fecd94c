#pragma once
/// \file torch_observers.ipp
/// PyTorch's qparams arithmetic and its observers' code (numerics/torch_observers.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "../range_statistics.hpp"
#include "../torch_cpu_kernels.hpp"
#include "../torch_observers.hpp"

namespace xq::torch {

XQ_DECL quant_range calculate_qmin_qmax(std::optional<std::int64_t> quant_min, std::optional<std::int64_t> quant_max,
                                        dtype t, bool reduce_range) {
  constexpr const char* where = "torch.calculate_qmin_qmax";
  if (quant_min.has_value() != quant_max.has_value())
    throw argument_error(where, "both quant_min and quant_max, or neither", "only one of them");
  if (quant_min) {
    const std::int64_t lo = *quant_min, hi = *quant_max;
    if (!(lo <= 0 && 0 <= hi))
      throw argument_error(where, "a custom range that includes 0",
                           xq::detail::concat("[", lo, ", ", hi, "]"));
    if (!(lo < hi))
      throw argument_error(where, "quant_min < quant_max", xq::detail::concat("[", lo, ", ", hi, "]"));
    const std::int64_t len = hi - lo + 1;
    if (t == dtype::qint8 && len > 256)
      throw argument_error(where, "at most 256 levels for qint8", xq::detail::concat(len, " levels"));
    auto floor_div2 = [](std::int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };
    return reduce_range ? quant_range{floor_div2(lo), floor_div2(hi)} : quant_range{lo, hi};
  }
  switch (t) {
    case dtype::qint8: return reduce_range ? quant_range{-64, 63} : quant_range{-128, 127};
    case dtype::quint8: return reduce_range ? quant_range{0, 127} : quant_range{0, 255};
    case dtype::qint32: return {-(std::int64_t(1) << 31), (std::int64_t(1) << 31) - 1};
    case dtype::int16: return {-(1 << 15), (1 << 15) - 1};
    case dtype::uint16: return {0, (1 << 16) - 1};
  }
  return {0, 15};
}

XQ_DECL qparams calculate_qparams(const vector& min_val, const vector& max_val, const observer_options& o) {
  constexpr const char* where = "torch.calculate_qparams";
  const quant_range q = calculate_qmin_qmax(o.quant_min, o.quant_max, o.type, o.reduce_range);
  const std::size_t n = min_val.size();
  qparams p{vector::from_shape({n}), index_vector::from_shape({n}), vector::from_shape({0})};
  if (n == 0 || max_val.size() != n) throw argument_error(where, "observed statistics", "none");
  const bool uninitialized = !is_per_channel(o.scheme) &&
                             min_val(0) == std::numeric_limits<float>::infinity() &&
                             max_val(0) == -std::numeric_limits<float>::infinity();
  if (uninitialized) {  // PyTorch warns and returns the neutral qparams
    p.scale(0) = 1.0f;
    p.zero_point(0) = 0;
    return p;
  }
  for (std::size_t c = 0; c < n; ++c)
    if (!(min_val(c) <= max_val(c)))
      throw argument_error(where, "min_val <= max_val",
                           xq::detail::concat("min_val = ", min_val(c), ", max_val = ", max_val(c),
                                              " at channel ", c));
  if (o.scheme == qscheme::per_channel_affine_float_qparams) p.float_zero_point = vector::from_shape({n});
  const float levels = float(double(q.quant_max - q.quant_min));
  for (std::size_t c = 0; c < n; ++c) {
    const float min_neg = std::min(min_val(c), 0.0f);
    const float max_pos = std::max(max_val(c), 0.0f);
    if (is_symmetric(o.scheme)) {
      const float amax = std::max(-min_neg, max_pos);
      const float half = float(double(q.quant_max - q.quant_min) / 2.0);
      p.scale(c) = std::max(amax / half, o.eps);
      std::int64_t zp = 0;
      if (o.type == dtype::quint8)
        zp = o.quant_min ? (q.quant_min + q.quant_max) / 2 : 128;
      else if (o.type == dtype::uint16)
        zp = std::int64_t(1) << 15;
      p.zero_point(c) = zp;
    } else if (o.scheme == qscheme::per_channel_affine_float_qparams) {
      const float s = (max_val(c) - min_val(c)) / levels;
      p.scale(c) = s > o.eps ? s : 1.0f;
      p.float_zero_point(c) = (-1.0f * min_val(c)) / p.scale(c);
      p.zero_point(c) = 0;
    } else {
      const float s = std::max((max_pos - min_neg) / levels, o.eps);
      p.scale(c) = s;
      const std::int64_t zp = q.quant_min - std::int64_t(std::nearbyint(min_neg / s));
      p.zero_point(c) = std::min(std::max(zp, q.quant_min), q.quant_max);
    }
  }
  return p;
}

XQ_DECL void update_observed_range(observer_update u, float averaging_constant, bool per_channel, vector& min_val,
                                   vector& max_val, vector cur_min, vector cur_max, const std::string& where,
                                   long ch_axis) {
  const std::size_t channels = cur_min.size();
  const bool fresh = per_channel ? min_val.size() == 0
                                 : (min_val(0) == std::numeric_limits<float>::infinity() &&
                                    max_val(0) == -std::numeric_limits<float>::infinity());
  if (!fresh && min_val.size() != channels)
    throw argument_error(where,
                         xq::detail::concat(min_val.size(), " channels on axis ", ch_axis,
                                            " (as in the batches seen, or the range set)"),
                         xq::detail::concat(channels, " channels"));
  if (u == observer_update::last_value || (fresh && (per_channel || u == observer_update::moving_average))) {
    min_val = std::move(cur_min);
    max_val = std::move(cur_max);
    return;
  }
  for (std::size_t c = 0; c < channels; ++c) {
    if (u == observer_update::moving_average) {
      min_val(c) = min_val(c) + averaging_constant * (cur_min(c) - min_val(c));
      max_val(c) = max_val(c) + averaging_constant * (cur_max(c) - max_val(c));
    } else {
      min_val(c) = std::min(cur_min(c), min_val(c));
      max_val(c) = std::max(cur_max(c), max_val(c));
    }
  }
}

XQ_DECL observer::observer(observer_kind kind, observer_options options) : kind_(kind), options_(options) {
  constexpr const char* where = "torch.observer";
  const bool channel_kind = kind == observer_kind::per_channel_min_max ||
                            kind == observer_kind::moving_average_per_channel_min_max;
  if (channel_kind != is_per_channel(options.scheme))
    throw argument_error(where,
                         channel_kind ? "a per-channel qscheme" : "a per-tensor qscheme",
                         "the other kind");
  if (options.scheme == qscheme::per_tensor_symmetric && options.reduce_range &&
      options.type == dtype::quint8)
    throw argument_error(where, "no reduce_range for symmetric quint8 (PyTorch refuses it)",
                         "reduce_range = true");
  calculate_qmin_qmax(options.quant_min, options.quant_max, options.type, options.reduce_range);
  if (!channel_kind) {
    min_val_ = vector({std::numeric_limits<float>::infinity()});
    max_val_ = vector({-std::numeric_limits<float>::infinity()});
  }
}

XQ_DECL void observer::operator()(const tensor& x) {
  if (x.size() == 0) return;
  constexpr const char* where = "torch.observer";
  const bool channel_kind = is_per_channel(options_.scheme);
  const kernels::channel_layout l = channel_kind ? kernels::channel_layout::of(x.shape(), options_.ch_axis, where)
                                                 : kernels::channel_layout{1, 1, x.size()};
  range_statistics s = measure_range(x, l);
  if (!s.finite) {
    const std::size_t at = first_non_finite(x);
    throw argument_error(where, "finite values in the batch (the statistics are left as they were)",
                         xq::detail::concat(x.data()[at], " at flat index ", at));
  }
  if (!channel_kind && (s.min(0) == 0.0f || s.max(0) == 0.0f)) {
    // torch.aminmax keeps the zero its reduction order meets, not the first: which one
    // depends on the positions of -0.0 and +0.0 and on torch's vector width.
    const auto [lo, hi] = cpu::aminmax(x.data(), x.size(), aminmax_lanes(options_.capability),
                                       options_.capability != cpu_capability::scalar);
    s.min(0) = lo;
    s.max(0) = hi;
  }
  const bool moving = kind_ == observer_kind::moving_average_min_max ||
                      kind_ == observer_kind::moving_average_per_channel_min_max;
  update_observed_range(moving ? observer_update::moving_average : observer_update::min_max,
                        options_.averaging_constant, channel_kind, min_val_, max_val_, std::move(s.min),
                        std::move(s.max), where, options_.ch_axis);
}

XQ_DECL qparams observer::calculate_qparams() const {
  if (min_val_.size() == 0)
    throw argument_error("torch.observer", "at least one observed batch", "none");
  return xq::torch::calculate_qparams(min_val_, max_val_, options_);
}

}  // namespace xq::torch
