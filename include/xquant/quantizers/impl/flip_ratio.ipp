#pragma once
/// \file flip_ratio.ipp
/// The flip-ratio metric's update (quantizers/flip_ratio.hpp).

#include <cstddef>
#include <cstdint>

#include "../../core/error.hpp"
#include "../flip_ratio.hpp"

namespace xq {

XQ_DECL void flip_ratio::update(const tensor& values) {
  const std::size_t n = values.size();
  if (!built_) {
    previous_.assign(n, 0);  // Larq's previous values start at zero
    built_ = true;
  } else if (n != previous_.size()) {
    throw shape_error("xq::flip_ratio::update", detail::concat(previous_.size(), " values, as before"),
                      detail::concat(n, " values"));
  }
  const float* v = values.data();
  std::int8_t* prev = previous_.data();
  std::size_t unchanged = 0;
#if defined(_OPENMP)
#pragma omp simd reduction(+ : unchanged)
#endif
  for (std::size_t i = 0; i < n; ++i) {
    const auto cur = static_cast<std::int8_t>(static_cast<int>(v[i]));
    unchanged += (cur == prev[i]);
    prev[i] = cur;
  }
  // float32 throughout, as Larq's metric variables.
  const float flip = n ? 1.0f - static_cast<float>(unchanged) / static_cast<float>(n) : 0.0f;
  total_ += count_ > 0.0f ? flip : 0.0f;
  count_ += 1.0f;
}

}  // namespace xq
