#pragma once
/// \file nvidia_calibrators.ipp
/// NVIDIA's MaxCalibrator and HistogramCalibrator (numerics/nvidia_calibrators.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "../nvidia_calibrators.hpp"
#include "../numpy_histogram.hpp"
#include "../torch_cpu_kernels.hpp"

namespace xq::nvidia {

namespace detail {

/// Throws unless all n values are finite (the index and value of the first that is not).
inline void require_finite(const float* data, std::size_t n, const char* where) {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(data[i]))
      throw argument_error(where, "finite values in the batch (nothing was recorded)",
                           xq::detail::concat(data[i], " at flat index ", i));
}

inline void require_batch(const float* data, std::size_t n, const char* where) {
  if (n == 0) throw argument_error(where, "a non-empty batch", "0 values");
  require_finite(data, n, where);
}

/// numpy.searchsorted(a, v, side='left') on float64, NaN sorting last.
inline std::size_t searchsorted_left(const std::vector<double>& a, double v) {
  auto less = [](double x, double y) { return x < y || (std::isnan(y) && !std::isnan(x)); };
  return std::size_t(std::lower_bound(a.begin(), a.end(), v, less) - a.begin());
}

/// scipy.special.rel_entr (scipy 1.17, xsf's convex_analysis): log1p of (x - y) / y when
/// x and y are within a factor of two (not log(x / y): 48 of 348 terms differ in the last
/// bit on a normal histogram), log of the ratio otherwise, and the difference of logs when
/// the ratio under- or overflows.
inline double rel_entr(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
  if (x <= 0 || y <= 0) return x == 0 && y >= 0 ? 0.0 : std::numeric_limits<double>::infinity();
  const double ratio = x / y;
  if (0.5 < ratio && ratio < 2) return x * std::log1p((x - y) / y);
  if (std::numeric_limits<double>::min() < ratio && ratio < std::numeric_limits<double>::infinity())
    return x * std::log(ratio);
  return x * (std::log(x) - std::log(y));
}

/// `calib_hist.int()`: torch's float-to-int32 conversion truncates.
inline std::vector<std::int64_t> int_counts(const std::vector<float>& hist) {
  std::vector<std::int64_t> out(hist.size());
  for (std::size_t k = 0; k < hist.size(); ++k) out[k] = std::int64_t(std::int32_t(hist[k]));
  return out;
}

inline void check_bits(int num_bits, const char* where) {
  if (num_bits < 1 || num_bits > 16)
    throw argument_error(where, "num_bits in 1..16", xq::detail::concat("num_bits = ", num_bits));
}

inline void check_state(const std::vector<float>& hist, const std::vector<float>& edges, const char* where) {
  if (hist.empty() && edges.empty()) throw argument_error(where, "a collected histogram", "no data collected");
  if (hist.empty() || edges.size() < hist.size() + 1)
    throw argument_error(where, "at least one edge more than counts",
                         xq::detail::concat(hist.size(), " counts and ", edges.size(), " edges"));
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// MaxCalibrator

XQ_DECL void max_calibrator::collect(const float* data, std::size_t n) {
  constexpr const char* where = "nvidia.max_calibrator.collect";
  detail::require_batch(data, n, where);
  // quant_utils.reduce_amax: max(|x|); torch.max keeps the stored max on a tie.
  float m = std::fabs(data[0]);
  for (std::size_t i = 1; i < n; ++i) m = std::max(m, std::fabs(data[i]));
  amax_ = amax_ ? std::max(*amax_, m) : m;
}

XQ_DECL float max_calibrator::compute_amax() const {
  if (!amax_) throw argument_error("nvidia.max_calibrator.compute_amax", "at least one collected batch", "none");
  return *amax_;
}

XQ_DECL void max_calibrator::restore(std::optional<float> amax) {
  if (amax && !(std::isfinite(*amax) && *amax >= 0.0f))
    throw argument_error("nvidia.max_calibrator.restore", "a finite amax >= 0", xq::detail::concat(*amax));
  amax_ = amax;
}

// ---------------------------------------------------------------------------------------------
// HistogramCalibrator

XQ_DECL histogram_calibrator::histogram_calibrator(histogram_options options) : options_(options) {
  constexpr const char* where = "nvidia.histogram_calibrator";
  if (options.num_bins < 1)
    throw argument_error(where, "num_bins >= 1", xq::detail::concat("num_bins = ", options.num_bins));
  detail::check_bits(options.num_bits, where);
}

XQ_DECL void histogram_calibrator::collect(const float* data, std::size_t n, sharded_batch* whole_batch) {
  constexpr const char* where = "nvidia.histogram_calibrator.collect";
  if (whole_batch) detail::require_finite(data, n, where);  // an empty shard is fine
  else detail::require_batch(data, n, where);
  // `if torch.min(x) < 0: x = x.abs()`, then skip_zeros drops the (signed) zeros.
  float lowest = n ? *std::min_element(data, data + n) : std::numeric_limits<float>::infinity();
  if (whole_batch) {  // the whole batch's minimum, and whether any rank has a value
    float packed[2] = {lowest, n ? -1.0f : 0.0f};
    whole_batch->min(packed, 2);
    if (packed[1] == 0.0f) throw argument_error(where, "a non-empty batch", "0 values on every rank");
    lowest = packed[0];
  }
  const bool negative = lowest < 0.0f;
  std::vector<float> x;
  x.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = negative ? std::fabs(data[i]) : data[i];
    if (options_.skip_zeros && v == 0.0f) continue;
    x.push_back(v);
  }
  // torch.max: the first of equal values, NaN excluded above; over every shard.
  float x_max = -std::numeric_limits<float>::infinity();
  for (float v : x) x_max = v > x_max ? v : x_max;
  if (whole_batch) {
    float m = -x_max;
    whole_batch->min(&m, 1);
    x_max = -m;
  }
  if (x_max == -std::numeric_limits<float>::infinity())
    throw argument_error(where, "a non-zero value in the batch (skip_zeros)", "only zeros");
  // This batch's counts on `bins` bins over [0, top]: over every shard, the whole batch's.
  auto batch_counts = [&](std::int64_t bins, double top) {
    std::vector<float> counts = torch::cpu::histc(x.data(), x.size(), bins, 0.0, top);
    if (whole_batch) sum_over_shards(*whole_batch, counts);
    return counts;
  };
  if (hist_.empty()) {
    std::vector<float> hist = batch_counts(options_.num_bins, double(x_max));
    edges_ = torch::cpu::linspace(0.0f, x_max, options_.num_bins + 1);
    hist_ = std::move(hist);
    return;
  }
  std::vector<float> edges = edges_;
  std::int64_t bins = std::int64_t(hist_.size());
  if (x_max > edges.back()) {
    const float width = edges[1] - edges[0];
    const float ratio = std::ceil(x_max / width);
    // int((x_max / width).ceil().item()): a zero width (all-zero first batch) gives inf,
    // which Python refuses to convert.
    if (!std::isfinite(ratio))
      throw argument_error(where, "a histogram with a non-zero bin width to grow",
                           xq::detail::concat("width ", width, " for a batch max of ", x_max));
    bins = std::int64_t(double(ratio));
    edges = torch::cpu::arange(0.0, double(x_max + width), double(width));
  }
  std::vector<float> hist = batch_counts(bins, double(edges.back()));
  for (std::size_t k = 0; k < hist_.size() && k < hist.size(); ++k) hist[k] += hist_[k];
  hist_ = std::move(hist);
  edges_ = std::move(edges);
}

XQ_DECL float histogram_calibrator::compute_amax(amax_method method, const amax_options& o) const {
  switch (method) {
    case amax_method::entropy:
      return compute_amax_entropy(hist_, edges_, options_.num_bits, options_.is_unsigned, o.stride, o.start_bin);
    case amax_method::mse:
      return compute_amax_mse(hist_, edges_, options_.num_bits, options_.is_unsigned, o.stride, o.start_bin);
    case amax_method::percentile:
      return compute_amax_percentile(hist_, edges_, o.percentile);
  }
  throw argument_error("nvidia.histogram_calibrator.compute_amax", "entropy, mse or percentile",
                       "another method");
}

XQ_DECL void histogram_calibrator::restore(std::vector<float> hist, std::vector<float> edges) {
  constexpr const char* where = "nvidia.histogram_calibrator.restore";
  if (!(hist.empty() && edges.empty())) {
    detail::check_state(hist, edges, where);
    for (std::size_t k = 0; k < hist.size(); ++k)
      if (!(std::isfinite(hist[k]) && hist[k] >= 0.0f))
        throw argument_error(where, "finite counts >= 0", xq::detail::concat(hist[k], " at bin ", k));
    for (std::size_t k = 0; k < edges.size(); ++k)
      if (!std::isfinite(edges[k]) || (k > 0 && edges[k] < edges[k - 1]))
        throw argument_error(where, "finite, non-decreasing edges", xq::detail::concat(edges[k], " at edge ", k));
  }
  hist_ = std::move(hist);
  edges_ = std::move(edges);
}

// ---------------------------------------------------------------------------------------------
// The amax searches

XQ_DECL float compute_amax_entropy(const std::vector<float>& hist, const std::vector<float>& edges, int num_bits,
                                   bool is_unsigned, std::int64_t stride, std::int64_t start_bin,
                                   std::vector<double>* divergences_out) {
  constexpr const char* where = "nvidia.compute_amax_entropy";
  detail::check_state(hist, edges, where);
  detail::check_bits(num_bits, where);
  if (stride < 1) throw argument_error(where, "stride >= 1", xq::detail::concat("stride = ", stride));
  if (start_bin < 1) throw argument_error(where, "start_bin >= 1", xq::detail::concat("start_bin = ", start_bin));
  std::vector<std::int64_t> bins = detail::int_counts(hist);
  if (bins.size() < 2) throw argument_error(where, "at least 2 bins", xq::detail::concat(bins.size(), " bin"));
  bins[0] = bins[1];  // the peer's quirk, on its working copy (see the header)
  const std::int64_t stop = std::int64_t(bins.size());
  if (start_bin > stop)
    throw argument_error(where, xq::detail::concat("start_bin <= the number of bins (", stop, ")"),
                         xq::detail::concat("start_bin = ", start_bin));
  const std::int64_t nbins = std::int64_t(1) << (num_bits - 1 + int(is_unsigned));
  // sum(bins[i:]) for every i
  std::vector<std::int64_t> tail(bins.size() + 1, 0);
  for (std::size_t k = bins.size(); k-- > 0;) tail[k] = tail[k + 1] + bins[k];

  const std::size_t levels = static_cast<std::size_t>(nbins);
  std::vector<double> divergences, space(levels + 1), density_counts(levels);
  std::vector<std::int64_t> members(levels), digitized;
  std::vector<double> pk, qk, vec;
  for (std::int64_t i = start_bin; i <= stop; i += stride) {
    // space = np.linspace(0, i, nbins + 1) (float64); digitize(range(i), space) - 1
    const double step = double(i) / double(nbins);
    for (std::int64_t k = 0; k < nbins; ++k) space[std::size_t(k)] = double(k) * step + 0.0;
    space[std::size_t(nbins)] = double(i);
    digitized.assign(std::size_t(i), -1);
    std::fill(density_counts.begin(), density_counts.end(), 0.0);
    std::fill(members.begin(), members.end(), 0);
    for (std::int64_t j = 0; j < i; ++j) {
      if (bins[std::size_t(j)] == 0) continue;  // empty source bins are left out (-1)
      const std::int64_t d = std::int64_t(std::upper_bound(space.begin(), space.end(), double(j)) - space.begin()) - 1;
      digitized[std::size_t(j)] = d;
      density_counts[std::size_t(d)] += double(bins[std::size_t(j)]);
      ++members[std::size_t(d)];
    }
    for (std::int64_t k = 0; k < nbins; ++k)
      if (members[std::size_t(k)] > 0)
        density_counts[std::size_t(k)] = density_counts[std::size_t(k)] / double(members[std::size_t(k)]);
    // scipy.stats.entropy(reference_density, new_density): both normalized by their
    // (pairwise) sums in float64, then sum(rel_entr(p, q)).
    pk.assign(std::size_t(i), 0.0);
    qk.assign(std::size_t(i), 0.0);
    for (std::int64_t j = 0; j < i; ++j) {
      const std::int64_t d = digitized[std::size_t(j)];
      qk[std::size_t(j)] = d != -1 ? density_counts[std::size_t(d)] : 0.0;
      pk[std::size_t(j)] = double(bins[std::size_t(j)]);
    }
    // reference_density[-1] += sum(bins[i:]) (int32 arithmetic)
    pk[std::size_t(i - 1)] = double(std::int32_t(bins[std::size_t(i - 1)] + tail[std::size_t(i)]));
    const double q_sum = numpy::pairwise_sum(qk.data(), qk.size());
    const double p_sum = numpy::pairwise_sum(pk.data(), pk.size());
    vec.resize(std::size_t(i));
    for (std::int64_t j = 0; j < i; ++j) {
      const double q = qk[std::size_t(j)] / q_sum;
      const double p = pk[std::size_t(j)] / p_sum;
      vec[std::size_t(j)] = detail::rel_entr(p, q);
    }
    divergences.push_back(numpy::pairwise_sum(vec.data(), vec.size()));
  }
  // last_argmin = len - 1 - argmin(divergences[::-1]): numpy's argmin takes the first NaN,
  // else the first minimum, of the reversed list.
  std::size_t best = divergences.size() - 1;
  for (std::size_t r = divergences.size(); r-- > 0;) {
    const double d = divergences[r];
    if (std::isnan(d)) {
      best = r;
      break;
    }
    if (d < divergences[best]) best = r;
  }
  if (divergences_out) *divergences_out = divergences;
  return edges[std::size_t(std::int64_t(best) * stride + start_bin)];
}

namespace detail {

/// `_tensor_quant` then `outputs / scale` (FakeTensorQuantFunction) for one amax, its
/// bounds and scale computed once.
struct tensor_quant {
  float max_bound, min_bound, scale;
  bool zero_amax;

  tensor_quant(float amax, int num_bits, bool is_unsigned)
      : max_bound(float(std::ldexp(1.0, num_bits - 1 + int(is_unsigned)) - 1.0)),
        min_bound(is_unsigned ? 0.0f : -max_bound),
        scale(max_bound / amax),
        zero_amax(amax <= float(1.0 / (1 << 24))) {
    // values quantized with amax <= 2^-24 are all 0, then divided by a scale of 1
    if (zero_amax) scale = 0.0f;
  }

  float operator()(float x) const {
    float q = std::nearbyint(x * scale);  // torch.round: half to even
    q = std::min(std::max(q, min_bound), max_bound);
    return q / (zero_amax ? 1.0f : scale);
  }
};

}  // namespace detail

XQ_DECL float fake_tensor_quant(float x, float amax, int num_bits, bool is_unsigned) {
  return detail::tensor_quant(amax, num_bits, is_unsigned)(x);
}

XQ_DECL float compute_amax_mse(const std::vector<float>& hist, const std::vector<float>& edges, int num_bits,
                               bool is_unsigned, std::int64_t stride, std::int64_t start_bin,
                               std::vector<float>* mses_out) {
  constexpr const char* where = "nvidia.compute_amax_mse";
  detail::check_state(hist, edges, where);
  detail::check_bits(num_bits, where);
  if (stride < 1) throw argument_error(where, "stride >= 1", xq::detail::concat("stride = ", stride));
  if (start_bin < 0) throw argument_error(where, "start_bin >= 0", xq::detail::concat("start_bin = ", start_bin));
  // `(q - centers)**2 * counts` broadcasts only when there are as many centers as counts.
  if (edges.size() != hist.size() + 1)
    throw argument_error(where, xq::detail::concat(hist.size() + 1, " edges for ", hist.size(), " counts"),
                         xq::detail::concat(edges.size(), " edges (the peer fails to broadcast them)"));
  const std::vector<std::int64_t> ints = detail::int_counts(hist);
  const std::size_t n = hist.size();
  std::vector<float> counts(n), centers(n), err(n);
  for (std::size_t k = 0; k < n; ++k) {
    counts[k] = float(ints[k]);
    centers[k] = (edges[k + 1] + edges[k]) / 2.0f;
  }
  if (start_bin >= std::int64_t(n))
    throw argument_error(where, xq::detail::concat("start_bin < the number of bins (", n, ")"),
                         xq::detail::concat("start_bin = ", start_bin));
  std::vector<float> mses;
  std::vector<std::int64_t> arguments;
  for (std::int64_t i = start_bin; i < std::int64_t(n); i += stride) {
    const detail::tensor_quant quant(centers[std::size_t(i)], num_bits, is_unsigned);
    for (std::size_t k = 0; k < n; ++k) {
      const float d = quant(centers[k]) - centers[k];
      err[k] = (d * d) * counts[k];
    }
    mses.push_back(torch::cpu::sum(err.data(), n) / float(n));  // .mean()
    arguments.push_back(i);
  }
  std::size_t best = 0;  // np.argmin: the first NaN, else the first minimum
  for (std::size_t r = 0; r < mses.size(); ++r) {
    if (std::isnan(mses[r])) {
      best = r;
      break;
    }
    if (mses[r] < mses[best]) best = r;
  }
  if (mses_out) *mses_out = mses;
  return centers[std::size_t(arguments[best])];
}

XQ_DECL float compute_amax_percentile(const std::vector<float>& hist, const std::vector<float>& edges,
                                      double percentile) {
  constexpr const char* where = "nvidia.compute_amax_percentile";
  if (!(percentile >= 0.0 && percentile <= 100.0))
    throw argument_error(where, "a percentile in [0, 100]", xq::detail::concat(percentile));
  detail::check_state(hist, edges, where);
  const std::vector<std::int64_t> ints = detail::int_counts(hist);
  std::int64_t total = 0;
  for (std::int64_t c : ints) total += c;
  std::vector<double> cdf(ints.size());
  double acc = 0.0;
  for (std::size_t k = 0; k < ints.size(); ++k) {
    acc += double(ints[k]) / double(total);
    cdf[k] = acc;
  }
  return edges[detail::searchsorted_left(cdf, percentile / 100.0)];
}

}  // namespace xq::nvidia
