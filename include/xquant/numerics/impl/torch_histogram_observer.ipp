#pragma once
/// \file torch_histogram_observer.ipp
/// PyTorch's HistogramObserver (numerics/torch_histogram_observer.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "../torch_cpu_kernels.hpp"
#include "../torch_histogram_observer.hpp"

namespace xq::torch {

namespace detail {

/// c10::div_floor_floating: Python's floor division in float.
inline float div_floor(float a, float b) {
  if (b == 0.0f) return a / b;
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) div -= 1.0f;
  if (div != 0.0f) {
    float floordiv = std::floor(div);
    if (div - floordiv > 0.5f) floordiv += 1.0f;
    return floordiv;
  }
  return std::copysign(0.0f, a / b);
}

inline float clamp(float v, float lo, float hi) { return std::min(std::max(v, lo), hi); }

/// 2 ** torch.iinfo(dtype).bits
inline double dtype_levels(dtype t) {
  switch (t) {
    case dtype::qint8:
    case dtype::quint8: return 256.0;
    case dtype::int16:
    case dtype::uint16: return 65536.0;
    case dtype::qint32: return 4294967296.0;
  }
  return 256.0;
}

}  // namespace detail

XQ_DECL histogram_observer::histogram_observer(histogram_observer_options options)
    : options_(options),
      dst_nbins_(detail::dtype_levels(options.type)),
      histogram_(options.bins > 0 ? std::size_t(options.bins) : 0, 0.0f),
      min_val_(std::numeric_limits<float>::infinity()),
      max_val_(-std::numeric_limits<float>::infinity()) {
  constexpr const char* where = "torch.histogram_observer";
  if (options.bins < 1) throw argument_error(where, "bins >= 1", xq::detail::concat("bins = ", options.bins));
  if (options.scheme != qscheme::per_tensor_affine && options.scheme != qscheme::per_tensor_symmetric)
    throw argument_error(where, "per_tensor_affine or per_tensor_symmetric (HistogramObserver is per tensor)",
                         "a per-channel qscheme");
  if (options.scheme == qscheme::per_tensor_symmetric && options.reduce_range && options.type == dtype::quint8)
    throw argument_error(where, "no reduce_range for symmetric quint8 (PyTorch refuses it)", "reduce_range = true");
  calculate_qmin_qmax(options.quant_min, options.quant_max, options.type, options.reduce_range);
}

XQ_DECL bool histogram_observer::empty() const noexcept {
  return min_val_ == std::numeric_limits<float>::infinity() || max_val_ == -std::numeric_limits<float>::infinity();
}

XQ_DECL void histogram_observer::reset() noexcept {
  std::fill(histogram_.begin(), histogram_.end(), 0.0f);
  min_val_ = std::numeric_limits<float>::infinity();
  max_val_ = -std::numeric_limits<float>::infinity();
}

XQ_DECL void histogram_observer::collect(const float* data, std::size_t n, sharded_batch* whole_batch) {
  constexpr const char* where = "torch.histogram_observer.collect";
  float x_min = std::numeric_limits<float>::infinity(), x_max = -x_min;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(data[i]))
      throw argument_error(where, "finite values in the batch (nothing was recorded)",
                           xq::detail::concat(data[i], " at flat index ", i));
    x_min = data[i] < x_min ? data[i] : x_min;
    x_max = data[i] > x_max ? data[i] : x_max;
  }
  if (whole_batch) {  // the whole batch's minimum and maximum (one minimum over [min, -max])
    float packed[2] = {x_min, -x_max};
    whole_batch->min(packed, 2);
    x_min = packed[0];
    x_max = -packed[1];
  }
  if (x_min > x_max) return;  // forward returns an empty input unchanged
  // This batch's counts over [lo, hi]: over every shard, the whole batch's.
  auto batch_counts = [&](std::int64_t bins, float lo, float hi) {
    std::vector<float> counts = cpu::histc(data, n, bins, double(lo), double(hi));
    if (whole_batch) sum_over_shards(*whole_batch, counts);
    return counts;
  };
  const std::int64_t bins = options_.bins;
  if (empty()) {  // reset_histogram
    min_val_ = x_min;
    max_val_ = x_max;
    histogram_ = batch_counts(bins, x_min, x_max);
    return;
  }
  const float cur_min = min_val_, cur_max = max_val_;
  const float new_min = std::min(cur_min, x_min), new_max = std::max(cur_max, x_max);
  std::vector<float> update = batch_counts(bins, new_min, new_max);
  if (new_min == cur_min && new_max == cur_max) {
    for (std::size_t k = 0; k < update.size(); ++k) histogram_[k] = histogram_[k] + update[k];
    return;
  }
  std::vector<float> transformed;
  if (cur_min == cur_max) {
    // all the old counts sit at one value: its bin in the new range, times their sum
    const float bin_value = cpu::sum(histogram_.data(), histogram_.size());
    transformed = cpu::histc(&cur_min, 1, bins, double(new_min), double(new_max));
    for (float& v : transformed) v = v * bin_value;
  } else {
    // _upscale_histogram
    constexpr std::int64_t upsample_rate = 16;
    const std::int64_t fine = bins * upsample_rate;
    const float bin_size = (cur_max - cur_min) / float(fine);
    const float half_bin = 0.5f * bin_size;
    const std::vector<float> points = cpu::linspace(cur_min, cur_max, fine + 1);
    const std::vector<float> boundaries = cpu::linspace(new_min, new_max, bins + 1);
    transformed.assign(std::size_t(bins), 0.0f);
    for (std::int64_t j = 0; j < fine; ++j) {
      const float mid = points[std::size_t(j)] + half_bin;
      std::int64_t b = std::int64_t(std::upper_bound(boundaries.begin(), boundaries.end(), mid) - boundaries.begin()) - 1;
      b = std::min(std::max<std::int64_t>(b, 0), bins - 1);
      transformed[std::size_t(b)] += histogram_[std::size_t(j / upsample_rate)] / float(upsample_rate);
    }
  }
  for (std::size_t k = 0; k < update.size(); ++k) histogram_[k] = update[k] + transformed[k];
  min_val_ = new_min;
  max_val_ = new_max;
}

XQ_DECL double histogram_observer::quantization_error(std::int64_t start_bin, std::int64_t end_bin) const {
  const std::int64_t bins = options_.bins;
  // Python floats (double) for the widths; each enters the tensor ops as a float32.
  const double bin_width = (double(max_val_) - double(min_val_)) / double(bins);
  const double dst_bin_width = bin_width * double(end_bin - start_bin + 1) / dst_nbins_;
  if (dst_bin_width == 0.0) return 0.0;
  const float bw = float(bin_width), dbw = float(dst_bin_width);
  const float half = float(dst_bin_width / 2), minus_half = float(-dst_bin_width / 2);
  const float top = float(dst_nbins_ - 1);
  // _get_norm(tensor(-dbw / 2), tensor(dbw / 2), density) without the density
  const float middle_norm = (half * half * half - minus_half * minus_half * minus_half) / 3.0f;
  const float minus_half_cubed = minus_half * minus_half * minus_half;
  std::vector<float> norm(static_cast<std::size_t>(bins));
  for (std::int64_t k = 0; k < bins; ++k) {
    const float begin = float(k - start_bin) * bw;
    const float end = begin + bw;
    const float dst_begin = detail::clamp(detail::div_floor(begin, dbw), 0.0f, top);
    const float dst_begin_center = (dst_begin + 0.5f) * dbw;
    const float dst_end = detail::clamp(detail::div_floor(end, dbw), 0.0f, top);
    const float density = histogram_[std::size_t(k)] / bw;
    float v = 0.0f;
    const float delta_begin = begin - dst_begin_center;
    v += density * ((half * half * half - delta_begin * delta_begin * delta_begin) / 3.0f);
    v += ((dst_end - dst_begin) - 1.0f) * (density * middle_norm);
    const float dst_end_center = dst_end * dbw + half;
    const float delta_end = end - dst_end_center;
    v += density * ((delta_end * delta_end * delta_end - minus_half_cubed) / 3.0f);
    norm[std::size_t(k)] = v;
  }
  return double(cpu::sum(norm.data(), norm.size()));
}

XQ_DECL std::pair<float, float> histogram_observer::non_linear_param_search() const {
  if (empty())
    throw argument_error("torch.histogram_observer", "at least one observed batch", "none");
  const std::int64_t bins = options_.bins;
  const float bin_width = (max_val_ - min_val_) / float(bins);
  const double total = double(cpu::sum(histogram_.data(), histogram_.size()));
  const std::vector<float> csum = cpu::cumsum(histogram_.data(), histogram_.size());
  const double stepsize = 1e-5;
  double alpha = 0.0, beta = 1.0;
  std::int64_t start_bin = 0, end_bin = bins - 1;
  double norm_min = std::numeric_limits<double>::infinity();
  while (alpha < beta) {
    const double next_alpha = alpha + stepsize;
    const double next_beta = beta - stepsize;
    // cSum[l] < next_alpha * total: a float32 tensor against a Python float, which torch
    // rounds to float32 first
    const float lo_bound = float(next_alpha * total), hi_bound = float(next_beta * total);
    std::int64_t l = start_bin, r = end_bin;
    while (l < end_bin && csum[std::size_t(l)] < lo_bound) ++l;
    while (r > start_bin && csum[std::size_t(r)] > hi_bound) --r;
    std::int64_t next_start = start_bin, next_end = end_bin;
    if ((l - start_bin) > (end_bin - r)) {
      next_start = l;
      alpha = next_alpha;
    } else {
      next_end = r;
      beta = next_beta;
    }
    if (next_start == start_bin && next_end == end_bin) continue;
    const double norm = quantization_error(next_start, next_end);
    if (norm > norm_min) break;
    norm_min = norm;
    start_bin = next_start;
    end_bin = next_end;
  }
  const float new_min = min_val_ + bin_width * float(start_bin);
  const float new_max = min_val_ + bin_width * float(end_bin + 1);
  return {new_min, new_max};
}

XQ_DECL qparams histogram_observer::calculate_qparams() const {
  const auto range = non_linear_param_search();
  observer_options o;
  o.type = options_.type;
  o.scheme = options_.scheme;
  o.reduce_range = options_.reduce_range;
  o.quant_min = options_.quant_min;
  o.quant_max = options_.quant_max;
  o.eps = options_.eps;
  return xq::torch::calculate_qparams(vector({range.first}), vector({range.second}), o);
}

XQ_DECL void histogram_observer::restore(std::vector<float> histogram, float min_val, float max_val) {
  constexpr const char* where = "torch.histogram_observer.restore";
  if (std::int64_t(histogram.size()) != options_.bins)
    throw argument_error(where, xq::detail::concat(options_.bins, " counts"),
                         xq::detail::concat(histogram.size(), " counts"));
  for (std::size_t k = 0; k < histogram.size(); ++k)
    if (!(std::isfinite(histogram[k]) && histogram[k] >= 0.0f))
      throw argument_error(where, "finite counts >= 0", xq::detail::concat(histogram[k], " at bin ", k));
  const bool unset = min_val == std::numeric_limits<float>::infinity() &&
                     max_val == -std::numeric_limits<float>::infinity();
  if (!unset && !(std::isfinite(min_val) && std::isfinite(max_val) && min_val <= max_val))
    throw argument_error(where, "finite min_val <= max_val, or +Inf / -Inf before any data",
                         xq::detail::concat("min_val = ", min_val, ", max_val = ", max_val));
  histogram_ = std::move(histogram);
  min_val_ = min_val;
  max_val_ = max_val;
}

}  // namespace xq::torch
