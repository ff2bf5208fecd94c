#pragma once
/// \file memory.hpp
/// Tensor memory: the caching allocator behind every `xq::tensor`.
///
/// A training step allocates and frees the same large tensors every time (activations,
/// column matrices, gradients, masks). Handed back to glibc's malloc, a block of more than
/// 128 KiB is unmapped or trimmed away, and the next step faults its pages in again and the
/// kernel zeroes them: the Fashion-MNIST CNN's first epoch trained at 1,676 images/s that
/// way and at 3,091 once the memory stayed mapped (issue 4's note). Frameworks keep such
/// memory in a caching allocator of their own (PyTorch's CUDA one, TF's BFC), and so does
/// xquant, at the depth where tensors get their storage: `tensor`'s allocator. Nothing
/// process-wide changes — other code's malloc behaves as it always did.
///
/// The cache sorts blocks by size class (a size rounded up to an eighth of its power of
/// two: at most 12.5% larger than asked) and serves a request from its class only, the
/// block freed last first (its lines are the likeliest still in cache). A training loop
/// asks for the same sizes every step, so after the first step every large tensor comes
/// from the cache. Cached memory is bounded (`set_tensor_cache_limit`); beyond the bound
/// the blocks cached longest ago are freed first. Blocks are 64-byte aligned (a cache
/// line, and a full AVX-512 vector).

#include <cstddef>
#include <cstdint>
#include <new>

#include "../config.hpp"

namespace xq {

/// What the tensor memory cache holds and has done, since the process started.
struct tensor_memory_stats {
  std::size_t bytes_in_use = 0;       ///< in live tensors, at the blocks' rounded sizes (cached sizes only)
  std::size_t peak_bytes_in_use = 0;  ///< the most `bytes_in_use` has been
  std::size_t bytes_cached = 0;       ///< freed blocks kept for reuse
  std::size_t cache_limit = 0;        ///< the most `bytes_cached` may be
  std::uint64_t hits = 0;             ///< requests served from the cache
  std::uint64_t misses = 0;           ///< requests of a cached size that went to the system
  std::uint64_t evictions = 0;        ///< freed blocks given back because of the limit
};

/// The cache's figures now.
XQ_DECL tensor_memory_stats tensor_memory();
/// Starts `peak_bytes_in_use` again from what is in use now: the peak of one phase (a
/// training run) after it.
XQ_DECL void reset_peak_tensor_memory();

/// Gives every cached block back to the system (live tensors are untouched).
XQ_DECL void release_cached_tensor_memory();

/// Bounds the cached bytes (default 1 GiB); blocks beyond it are given back, oldest first.
/// 0 turns caching off.
XQ_DECL void set_tensor_cache_limit(std::size_t bytes);

/// Blocks smaller than this go straight to the system allocator: malloc keeps such
/// blocks in its own free lists, and the cache's lock would cost more than it saves.
inline constexpr std::size_t tensor_cache_min_bytes = 16 * 1024;

/// The alignment of every tensor's storage.
inline constexpr std::size_t tensor_alignment = 64;

namespace detail {
XQ_DECL void* tensor_memory_allocate(std::size_t bytes);
XQ_DECL void tensor_memory_free(void* p, std::size_t bytes) noexcept;
}  // namespace detail

/// The standard-allocator face of the cache: what `xq::tensor` stores its elements with.
/// Stateless, so any two compare equal and containers move storage between them freely.
template <class T>
struct tensor_allocator {
  using value_type = T;

  tensor_allocator() noexcept = default;
  template <class U>
  tensor_allocator(const tensor_allocator<U>&) noexcept {}  // NOLINT: rebinding is implicit by contract

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(detail::tensor_memory_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { detail::tensor_memory_free(p, n * sizeof(T)); }

  friend bool operator==(const tensor_allocator&, const tensor_allocator&) noexcept { return true; }
  friend bool operator!=(const tensor_allocator&, const tensor_allocator&) noexcept { return false; }
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/memory.ipp"
#endif
