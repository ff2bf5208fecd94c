#pragma once
/// \file workspace.hpp
/// `detail::workspace(n)`: uninitialized float scratch storage (column matrices of the
/// lowered convolutions) a backward step can own, from the tensor memory cache.

#include <cstddef>
#include <memory>

#include "../config.hpp"
#include "../core/memory.hpp"

namespace xq::detail {

/// At least `n` uninitialized floats, 64-byte aligned, back to the tensor memory cache
/// (core/memory.hpp) when the last owner lets go: a column matrix of megabytes freed to
/// the system would be unmapped, and the next call would fault its pages in again (an
/// inference 3x3 32->64 conv on 64 14x14 images took 9.0 ms that way instead of 3.1 ms).
inline std::shared_ptr<float[]> workspace(std::size_t n) {
  const std::size_t bytes = (n ? n : 1) * sizeof(float);
  return std::shared_ptr<float[]>(static_cast<float*>(tensor_memory_allocate(bytes)),
                                  [bytes](float* p) { tensor_memory_free(p, bytes); });
}

}  // namespace xq::detail
