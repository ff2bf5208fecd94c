#pragma once
/// \file flip_ratio.hpp
/// `xq::flip_ratio`: the share of a quantizer's outputs that changed since the
/// previous update, averaged over updates. Larq's `FlipRatio` (larq/metrics.py),
/// number for number:
///  1. the values are cast to int8 (C's truncation toward zero, as tf.cast does),
///  2. flip = 1 - count(previous == current) / size,
///  3. the first update after a reset adds 0 (Larq multiplies by sign(count)),
///  4. result = total / (count - 1), 0 when count <= 1.
/// `reset()` zeroes total and count but keeps the previous values, as Larq does, so
/// an epoch's first update compares with the last values of the epoch before and
/// still counts 0.
///
/// The int8 cast truncates fractional outputs (DoReFa levels, a magnitude-aware
/// sign's scaled values), so flips between them are under-counted, as in Larq.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../config.hpp"
#include "../core/tensor.hpp"

namespace xq {

class flip_ratio {
 public:
  /// Feeds one tensor of quantized values (the same size every time).
  void update(const tensor& values);

  /// total / (count - 1) (Larq's div_no_nan: 0 when count <= 1).
  double result() const noexcept {
    const float denominator = count_ - 1.0f;
    return denominator != 0.0f && count_ > 0.0f ? static_cast<double>(total_ / denominator) : 0.0;
  }
  float total() const noexcept { return total_; }
  float count() const noexcept { return count_; }
  /// Zeroes total and count; keeps the previous values (Larq's `reset_state`).
  void reset() noexcept {
    total_ = 0.0f;
    count_ = 0.0f;
  }

 private:
  std::vector<std::int8_t> previous_;
  bool built_ = false;
  float total_ = 0.0f, count_ = 0.0f;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/flip_ratio.ipp"
#endif
