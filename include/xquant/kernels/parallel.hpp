#pragma once
/// \file parallel.hpp
/// Splits a range across threads (OpenMP when the build has it). Chunk
/// boundaries are multiples of `grain` so every chunk but the last starts on a
/// SIMD- and cache-line-aligned element, and elementwise results never depend
/// on the thread count. Work below a measured size (config.hpp) stays on the
/// caller's thread: threads.hpp says why.

#include <cstddef>

#include "../config.hpp"
#include "../core/fp_environment.hpp"
#include "threads.hpp"

namespace xq::kernels {

/// Calls `body(begin, end)` over [0, n) in chunks of whole grains, one per thread, on
/// `threads` threads (1: once, on the caller's thread). `parallel_for` picks `threads`;
/// called directly, this is how bench/threads_bench.cpp times a region of any size.
template <class Body>
void parallel_chunks(int threads, std::size_t n, std::size_t grain, Body&& body) {
#if defined(_OPENMP)
  if (threads > 1 && n > grain) {
    std::size_t chunk = (n + std::size_t(threads) - 1) / std::size_t(threads);
    chunk = (chunk + grain - 1) / grain * grain;
    const long chunks = long((n + chunk - 1) / chunk);
    const fp_state caller = fp_state::current();  // e.g. TF's flushed denormals
    xq::detail::count_parallel_region();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long c = 0; c < chunks; ++c) {
      const scoped_fp_state same_environment(caller);
      const std::size_t begin = std::size_t(c) * chunk;
      const std::size_t end = begin + chunk < n ? begin + chunk : n;
      body(begin, end);
    }
    return;
  }
#endif
  (void)threads;
  (void)grain;
  body(std::size_t(0), n);
}

/// Calls `body(i, i + 1)` for each of `count` items on `threads` threads (1: one call
/// `body(0, count)` on the caller's thread). `parallel_for_items` picks `threads`.
template <class Body>
void parallel_items(int threads, std::size_t count, Body&& body) {
#if defined(_OPENMP)
  if (threads > 1 && count > 1) {
    const long n = long(count);
    const fp_state caller = fp_state::current();
    xq::detail::count_parallel_region();
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < n; ++i) {
      const scoped_fp_state same_environment(caller);
      body(std::size_t(i), std::size_t(i) + 1);
    }
    return;
  }
#endif
  (void)threads;
  body(std::size_t(0), count);
}

/// Calls `body(begin, end)` over [0, n), in parallel when n >= XQ_PARALLEL_THRESHOLD.
template <class Body>
void parallel_for(std::size_t n, std::size_t grain, Body&& body) {
  parallel_chunks(n >= XQ_PARALLEL_THRESHOLD ? max_threads() : 1, n, grain, body);
}

/// Calls `body(begin, end)` over [0, count) items (blocks, rows, runs), split
/// across threads only when `worth_it` (the caller knows the element count and
/// compares it with a threshold of config.hpp).
template <class Body>
void parallel_for_items(std::size_t count, bool worth_it, Body&& body) {
  parallel_items(worth_it ? max_threads() : 1, count, body);
}

}  // namespace xq::kernels
