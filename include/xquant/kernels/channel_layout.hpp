#pragma once
/// \file channel_layout.hpp
/// How a per-channel tensor is walked: `outer` runs of `channels` runs of
/// `inner` contiguous elements. Channel on the last axis (TF, Keras) is
/// inner == 1; PyTorch's axis 0 on [C, ...] is outer == 1.

#include <cstddef>
#include <vector>

#include "../core/error.hpp"

namespace xq::kernels {

struct channel_layout {
  std::size_t outer = 1;
  std::size_t channels = 1;
  std::size_t inner = 1;

  std::size_t size() const noexcept { return outer * channels * inner; }

  /// Layout of a row-major tensor of `shape` with channels on `axis`
  /// (negative counts from the end). Throws when the axis is out of range.
  template <class Shape>
  static channel_layout of(const Shape& shape, long axis, const char* where) {
    const long rank = long(shape.size());
    const long a = axis < 0 ? axis + rank : axis;
    if (rank == 0 || a < 0 || a >= rank) {
      throw argument_error(where, xq::detail::concat("an axis in [", -rank, ", ", rank - 1, "]"),
                           xq::detail::concat("axis ", axis, " for a tensor of rank ", rank));
    }
    channel_layout l;
    for (long d = 0; d < a; ++d) l.outer *= std::size_t(shape[std::size_t(d)]);
    l.channels = std::size_t(shape[std::size_t(a)]);
    for (long d = a + 1; d < rank; ++d) l.inner *= std::size_t(shape[std::size_t(d)]);
    return l;
  }
};

}  // namespace xq::kernels
