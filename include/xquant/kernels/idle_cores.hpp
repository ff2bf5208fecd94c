#pragma once
/// \file idle_cores.hpp
/// How many threads a parallel region may use now: no more than the cores that other
/// processes leave idle (issue 34, finding 9).
///
/// A parallel region is only as fast as its slowest thread. When another process keeps a
/// core busy, the thread that shares that core runs a fraction of the time, and every
/// region (each GEMM, convolution, elementwise pass: hundreds per training step) waits for
/// the scheduler to run it: a small model's `fit` took 26–37 s on the default two threads
/// beside one busy process against 3.7 s on one thread (bench/README.md has the figures
/// measured here). Neither the thresholds (threads.hpp), which see only the work's size,
/// nor libgomp's wait policy, which a library cannot set once the runtime has read
/// OMP_WAIT_POLICY at start-up, can see that. So xquant looks at the machine: on Linux it
/// reads the CPU time of the cores it may run on (/proc/stat, for the cores of its affinity
/// mask) and its own (/proc/self/stat) every 200 ms (the first time after 50 ms), and a
/// region gets at most the cores the other processes left idle (`cores − busy elsewhere`,
/// rounded down after adding 0.25: on two cores, two threads while the other processes use
/// at most a quarter of a core), in the busier of the last two intervals: fewer threads as
/// soon as the load comes, more after two intervals without it. Until the first interval
/// is measured a region runs on one thread. `kernels::max_threads()` applies it, so it
/// holds for xquant's own loops, its GEMMs (OpenBLAS), oneDNN's convolutions and the
/// integer engine, whichever entry point (`fit`, `predict`, `evaluate`, `calibrate`, the
/// engine's `run`, a loop of your own) runs them. Reading the two files takes tens of
/// microseconds, at most five times a second.
///
/// On by default (XQ_IDLE_CORE_LIMIT_DEFAULT; the environment variable XQ_IDLE_CORE_LIMIT=0
/// turns it off for a run); elsewhere than Linux it has no effect. The
/// thread count then follows the machine's load: outside deterministic mode, where the
/// count changes the last bits of OpenBLAS's large GEMMs and oneDNN's kernel gradients,
/// two runs on a machine whose load differs may differ in those bits. For runs that must
/// repeat bit for bit on a fixed thread count, turn it off:
///
/// \code
///   xq::set_idle_core_limit(false);          // the process, from now on
///   { xq::idle_core_limit_scope off(false);  // or the calling thread, for a scope
///     ... }
/// \endcode
/// (`fit_options::threads = xq::thread_policy::fixed` does the latter for the run.) With
/// the limit off, `predict` and `evaluate` also keep the OpenMP count instead of timing
/// their batches (train/fit.hpp).

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "../config.hpp"

#ifndef XQ_IDLE_CORE_LIMIT_DEFAULT
#define XQ_IDLE_CORE_LIMIT_DEFAULT 1
#endif

namespace xq {

namespace detail {
/// XQ_IDLE_CORE_LIMIT=0 (or off, false) in the environment turns the limit off, =1 (on,
/// true) on; otherwise XQ_IDLE_CORE_LIMIT_DEFAULT.
inline bool idle_core_limit_at_start() {
  const char* v = std::getenv("XQ_IDLE_CORE_LIMIT");
  if (v && (!std::strcmp(v, "0") || !std::strcmp(v, "off") || !std::strcmp(v, "false"))) return false;
  if (v && (!std::strcmp(v, "1") || !std::strcmp(v, "on") || !std::strcmp(v, "true"))) return true;
  return XQ_IDLE_CORE_LIMIT_DEFAULT != 0;
}
inline std::atomic<bool>& idle_core_limit_flag() {
  static std::atomic<bool> on{idle_core_limit_at_start()};
  return on;
}
/// The calling thread's setting: -1 the process's, 0 off, 1 on.
inline int& this_thread_idle_core_limit() {
  thread_local int setting = -1;
  return setting;
}
}  // namespace detail

/// Whether the calling thread's parallel regions are limited to the idle cores (the
/// setting of an `idle_core_limit_scope` on this thread, else the process's).
inline bool idle_core_limit() noexcept {
  const int mine = detail::this_thread_idle_core_limit();
  return mine >= 0 ? mine != 0 : detail::idle_core_limit_flag().load(std::memory_order_relaxed);
}

/// Turns the limit on or off for the process (threads inside a scope keep the scope's).
inline void set_idle_core_limit(bool on) noexcept { detail::idle_core_limit_flag().store(on, std::memory_order_relaxed); }

/// Sets the limit for the calling thread for its scope, and restores the previous setting.
class idle_core_limit_scope {
 public:
  explicit idle_core_limit_scope(bool on) : previous_(detail::this_thread_idle_core_limit()) {
    detail::this_thread_idle_core_limit() = on ? 1 : 0;
  }
  ~idle_core_limit_scope() { detail::this_thread_idle_core_limit() = previous_; }
  idle_core_limit_scope(const idle_core_limit_scope&) = delete;
  idle_core_limit_scope& operator=(const idle_core_limit_scope&) = delete;

 private:
  int previous_;
};

}  // namespace xq

namespace xq::kernels {

/// The last interval measured: the cores xquant may run on, the cores' worth of CPU time
/// other processes used in it (steal time included), and its length. `seconds` is 0 before
/// the first interval, and always where the limit cannot be measured (not Linux).
struct core_load {
  int cores = 0;
  double busy_elsewhere = 0.0;
  double seconds = 0.0;
};

/// `wanted` threads limited to the idle cores of the last interval (at least one; see the
/// file comment), measuring a new interval first when the last is 200 ms old. `wanted`
/// itself when the limit is off for the calling thread or cannot be measured.
XQ_DECL int idle_core_threads(int wanted);

/// The interval `idle_core_threads` decides on now (measuring a new one when due).
XQ_DECL core_load current_core_load();

}  // namespace xq::kernels

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/idle_cores.ipp"
#endif
