#pragma once
/// \file memory.ipp
/// The tensor memory cache's code (core/memory.hpp).

#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../memory.hpp"

// Under AddressSanitizer a cached block is poisoned until it is handed out again, so a
// tensor's storage used after its tensor died is still reported (a cache hides it otherwise).
#if defined(__SANITIZE_ADDRESS__)
#define XQ_ASAN_CACHE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define XQ_ASAN_CACHE 1
#endif
#endif
#if defined(XQ_ASAN_CACHE)
#include <sanitizer/asan_interface.h>
#define XQ_CACHE_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define XQ_CACHE_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define XQ_CACHE_POISON(p, n) ((void)(p), (void)(n))
#define XQ_CACHE_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace xq {
namespace detail {

/// Freed blocks by size class, each class a stack (the block freed last served first), and
/// all of them in the order they were cached (the oldest evicted first).
class tensor_memory_cache {
 public:
  static tensor_memory_cache& instance() {
    static auto* cache = new tensor_memory_cache;  // never destroyed: tensors may die after main
    return *cache;
  }

  /// The size a block of `bytes` (at least tensor_cache_min_bytes) is allocated at.
  static std::size_t size_class(std::size_t bytes) {
    int log2 = 0;
    while ((bytes >> log2) > 1) ++log2;
    const std::size_t step = std::size_t(1) << (log2 - 3);
    return (bytes + step - 1) & ~(step - 1);
  }

  void* allocate(std::size_t bytes) {
    const std::size_t size = size_class(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = by_size_.find(size);
      if (found != by_size_.end() && !found->second.empty()) {
        const auto block = found->second.back();
        found->second.pop_back();
        void* p = block->p;
        XQ_CACHE_UNPOISON(p, size);
        by_age_.erase(block);
        stats_.bytes_cached -= size;
        ++stats_.hits;
        note_in_use(size);
        return p;
      }
      ++stats_.misses;
    }
    void* p = nullptr;
    try {
      p = system_allocate(size);
    } catch (const std::bad_alloc&) {  // cached blocks of other sizes may be what is missing
      release(0);
      p = system_allocate(size);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    note_in_use(size);
    return p;
  }

  void free(void* p, std::size_t bytes) noexcept {
    const std::size_t size = size_class(bytes);
    std::vector<block> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.bytes_in_use -= size;
      if (size > stats_.cache_limit) {
        evicted.push_back({p, size});
      } else {
        try {
          by_age_.push_back({p, size});
          by_size_[size].push_back(std::prev(by_age_.end()));
          stats_.bytes_cached += size;
          XQ_CACHE_POISON(p, size);
        } catch (...) {  // no memory for the bookkeeping: give the block back instead
          if (!by_age_.empty() && by_age_.back().p == p) by_age_.pop_back();
          evicted.push_back({p, size});
        }
        evict_beyond(stats_.cache_limit, evicted);
      }
      stats_.evictions += evicted.size();
    }
    for (const block& b : evicted) system_free(b.p);
  }

  /// Gives cached blocks back until at most `keep` bytes stay cached.
  void release(std::size_t keep) {
    std::vector<block> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      evict_beyond(keep, evicted);
    }
    for (const block& b : evicted) system_free(b.p);
  }

  void set_limit(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.cache_limit = bytes;
    }
    release(bytes);
  }

  tensor_memory_stats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

  static void* system_allocate(std::size_t bytes) { return ::operator new(bytes, std::align_val_t{tensor_alignment}); }
  static void system_free(void* p) noexcept { ::operator delete(p, std::align_val_t{tensor_alignment}); }

 private:
  struct block {
    void* p;
    std::size_t size;
  };
  using age_list = std::list<block>;

  tensor_memory_cache() { stats_.cache_limit = std::size_t(1) << 30; }

  void note_in_use(std::size_t size) {
    stats_.bytes_in_use += size;
    if (stats_.bytes_in_use > stats_.peak_bytes_in_use) stats_.peak_bytes_in_use = stats_.bytes_in_use;
  }

  /// Moves the oldest cached blocks to `evicted` until at most `keep` bytes stay (lock held).
  void evict_beyond(std::size_t keep, std::vector<block>& evicted) {
    while (stats_.bytes_cached > keep && !by_age_.empty()) {
      const block oldest = by_age_.front();
      auto& same_size = by_size_[oldest.size];  // its class's oldest, so the first of its stack
      same_size.erase(same_size.begin());
      by_age_.pop_front();
      stats_.bytes_cached -= oldest.size;
      XQ_CACHE_UNPOISON(oldest.p, oldest.size);
      evicted.push_back(oldest);
    }
  }

  std::mutex mutex_;
  age_list by_age_;
  std::unordered_map<std::size_t, std::vector<age_list::iterator>> by_size_;
  tensor_memory_stats stats_;
};

XQ_DECL void* tensor_memory_allocate(std::size_t bytes) {
  if (bytes < tensor_cache_min_bytes) return tensor_memory_cache::system_allocate(bytes);
  return tensor_memory_cache::instance().allocate(bytes);
}

XQ_DECL void tensor_memory_free(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (bytes < tensor_cache_min_bytes) return tensor_memory_cache::system_free(p);
  tensor_memory_cache::instance().free(p, bytes);
}

}  // namespace detail

XQ_DECL tensor_memory_stats tensor_memory() { return detail::tensor_memory_cache::instance().stats(); }

XQ_DECL void reset_peak_tensor_memory() { detail::tensor_memory_cache::instance().reset_peak(); }

XQ_DECL void release_cached_tensor_memory() { detail::tensor_memory_cache::instance().release(0); }

XQ_DECL void set_tensor_cache_limit(std::size_t bytes) { detail::tensor_memory_cache::instance().set_limit(bytes); }

}  // namespace xq

#undef XQ_CACHE_POISON
#undef XQ_CACHE_UNPOISON
#undef XQ_ASAN_CACHE
