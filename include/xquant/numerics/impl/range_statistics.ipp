#pragma once
/// \file range_statistics.ipp
/// The scalar min/max reduction and the scans for error messages (numerics/range_statistics.hpp);
/// in separate mode also measure_range for the default and scalar policies.

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "../range_statistics.hpp"

namespace xq {

namespace kernels {

XQ_DECL bool min_max(scalar_policy, const float* x, const channel_layout& l, float* min, float* max) {
  detail::min_max_part all(l.channels);
  for (std::size_t o = 0; o < l.outer; ++o)
    for (std::size_t c = 0; c < l.channels; ++c)
      for (std::size_t i = 0; i < l.inner; ++i)
        detail::min_max_one(x[(o * l.channels + c) * l.inner + i], all.min[c], all.max[c], all.not_finite);
  std::copy(all.min.begin(), all.min.end(), min);
  std::copy(all.max.begin(), all.max.end(), max);
  return all.not_finite == 0.0f;
}

}  // namespace kernels

namespace detail {

XQ_DECL float first_zero(const float* x, const kernels::channel_layout& l, std::size_t c) {
  for (std::size_t o = 0; o < l.outer; ++o) {
    const float* run = x + (o * l.channels + c) * l.inner;
    for (std::size_t i = 0; i < l.inner; ++i)
      if (run[i] == 0.0f) return run[i];
  }
  return 0.0f;
}

}  // namespace detail

XQ_DECL std::size_t first_non_finite(const tensor& x) {
  const float* p = x.data();
  for (std::size_t i = 0, n = x.size(); i < n; ++i)
    if (!std::isfinite(p[i])) return i;
  return x.size();
}

#if defined(XQ_SEPARATE_COMPILATION)
template range_statistics measure_range<simd_policy<>>(const tensor&, const kernels::channel_layout&);
template range_statistics measure_range<simd_policy<>>(const tensor&);
template range_statistics measure_range<scalar_policy>(const tensor&, const kernels::channel_layout&);
template range_statistics measure_range<scalar_policy>(const tensor&);
#endif

}  // namespace xq
