#pragma once
/// \file addressable_shape.hpp
/// The bound every file reader puts on a shape before it makes a tensor of it.

#include <cstddef>
#include <cstdint>
#include <limits>

namespace xq::io::detail {

/// True when a tensor of shape `dims` (any range of unsigned sizes) can be made: the product
/// of its dimensions, a 0 counted as 1, times 8 bytes fits in std::ptrdiff_t. The zero rule
/// is the point: a 0 makes the element count 0 but not the strides, which xtensor computes
/// as products of the other dimensions, so (0, 2^32, 2^32) holds no element and still
/// overflows them (undefined behaviour, found by fuzzing the IDX, .npy and checkpoint
/// readers). An element-count bound alone stops at the 0.
template <class Dims>
bool addressable_shape(const Dims& dims) {
  const std::uint64_t limit = std::uint64_t(std::numeric_limits<std::ptrdiff_t>::max()) / 8;
  std::uint64_t product = 1;
  for (const auto d : dims) {
    const std::uint64_t f = d == 0 ? 1 : std::uint64_t(d);
    if (product > limit / f) return false;
    product *= f;
  }
  return true;
}

}  // namespace xq::io::detail
