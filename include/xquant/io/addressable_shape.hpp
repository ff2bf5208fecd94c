#pragma once
/// \file addressable_shape.hpp
/// The bound every file reader puts on a shape before it makes a tensor of it.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

namespace xq::io::detail {

/// The number of elements of a tensor of shape `dims` (any range of unsigned sizes), or
/// nothing when such a tensor cannot be made: the product of its dimensions, a 0 counted as
/// 1, times 8 bytes must fit in std::ptrdiff_t. The zero rule is the point: a 0 makes the
/// element count 0 but not the strides, which xtensor computes as products of the other
/// dimensions, so (0, 2^32, 2^32) holds no element and still overflows them (undefined
/// behaviour, found by fuzzing the IDX, .npy and checkpoint readers). A bound on the element
/// count alone stops at the 0. Within the bound, count × (element size ≤ 8) cannot overflow.
template <class Dims>
std::optional<std::uint64_t> addressable_element_count(const Dims& dims) {
  const std::uint64_t limit = std::uint64_t(std::numeric_limits<std::ptrdiff_t>::max()) / 8;
  std::uint64_t strides = 1, count = 1;
  for (const auto d : dims) {
    const std::uint64_t f = d == 0 ? 1 : std::uint64_t(d);
    if (strides > limit / f) return std::nullopt;
    strides *= f;
    count *= std::uint64_t(d);
  }
  return count;
}

}  // namespace xq::io::detail
