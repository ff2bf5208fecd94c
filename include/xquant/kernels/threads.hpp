#pragma once
/// \file threads.hpp
/// What threads xquant uses, and how.
///
///  - **Where**: xquant's own OpenMP loops (the elementwise and fake-quant walkers,
///    `parallel_for`; the per-image and per-block loops, `parallel_for_items`: im2col,
///    col2im, pooling, depthwise convolution, the parameter-gradient sums) and the GEMMs,
///    which OpenBLAS threads itself. Both use one OpenMP pool when OpenBLAS is its OpenMP
///    build (what CMakeLists.txt links when OpenMP is on).
///  - **How many**: `omp_get_max_threads()` of the calling thread (OMP_NUM_THREADS,
///    `omp_set_num_threads`), at most the cores other processes leave idle (idle_cores.hpp:
///    on a machine where another process keeps a core busy, every region would wait for
///    the thread that shares it); one inside an active parallel region of the caller's.
///  - **When**: only for work at or above a measured threshold (config.hpp:
///    XQ_PARALLEL_THRESHOLD, XQ_PARALLEL_ITEMS_THRESHOLD, XQ_GEMM_PARALLEL_THRESHOLD).
///    Below it a region costs more than it saves, and on a machine whose other cores are
///    busy it costs far more: the region waits for a thread the OS has not scheduled.
///  - **Deterministic mode** (`set_deterministic`, `deterministic_mode`): the same bits
///    for any thread count. xquant's own loops already split work at fixed boundaries;
///    the one thing that changes with the thread count is OpenBLAS's threaded GEMM (its
///    tiles, hence its sums, depend on how it splits the matrices). In deterministic mode
///    a large GEMM is cut into a fixed number of blocks of C (gemm.hpp), each computed by
///    a single-threaded BLAS call, and the blocks are spread over the threads.
///
/// Changing thread counts is per calling thread in OpenMP, but OpenBLAS keeps one
/// process-wide count: see `single_threaded_blas`.

#include <atomic>
#include <cstddef>

#include <cblas.h>

#include "../config.hpp"
#include "idle_cores.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

/// 1 when the CBLAS is OpenBLAS (its thread-count functions may be called), 0 otherwise.
/// CMakeLists.txt sets it to 0 for another BLA_VENDOR (another BLAS library may come with
/// OpenBLAS's cblas.h, and then OPENBLAS_VERSION is defined but openblas_* are missing).
#ifndef XQ_HAVE_OPENBLAS
#if defined(OPENBLAS_VERSION)
#define XQ_HAVE_OPENBLAS 1
#else
#define XQ_HAVE_OPENBLAS 0
#endif
#endif

namespace xq {

// (Helpers live in xq::detail: a namespace xq::kernels::detail declared here would hide
// xq::detail from the kernels headers that name `detail::` unqualified.)
namespace detail {
inline std::atomic<bool>& deterministic_flag() {
  static std::atomic<bool> on{XQ_DETERMINISTIC_DEFAULT != 0};
  return on;
}
inline std::atomic<unsigned long>& parallel_region_counter() {
  static std::atomic<unsigned long> count{0};
  return count;
}
inline void count_parallel_region() { parallel_region_counter().fetch_add(1, std::memory_order_relaxed); }
}  // namespace detail

/// Whether results must be the same bits for any thread count (default: off, or
/// XQ_DETERMINISTIC_DEFAULT). Process-wide, like PyTorch's
/// `torch.use_deterministic_algorithms`.
inline bool deterministic() noexcept { return detail::deterministic_flag().load(std::memory_order_relaxed); }

/// Turns deterministic mode on or off for the whole process. In deterministic mode every
/// result (outputs, gradients, trained weights) is the same on 1, 2 or N threads; it
/// differs from the bits of the default mode only where a GEMM is large enough to be
/// split (XQ_GEMM_PARALLEL_THRESHOLD), and costs a few percent there (bench/README.md).
///
/// \code
///   xq::set_deterministic(true);   // or a scope: xq::deterministic_mode on;
/// \endcode
inline void set_deterministic(bool on) noexcept { detail::deterministic_flag().store(on, std::memory_order_relaxed); }

/// Sets deterministic mode (on by default) for its scope and restores the previous one.
/// The mode is process-wide: a scope on one thread changes it for every thread.
class deterministic_mode {
 public:
  explicit deterministic_mode(bool on = true) : previous_(deterministic()) { set_deterministic(on); }
  ~deterministic_mode() { set_deterministic(previous_); }
  deterministic_mode(const deterministic_mode&) = delete;
  deterministic_mode& operator=(const deterministic_mode&) = delete;

 private:
  bool previous_;
};

}  // namespace xq

namespace xq::kernels {

/// The calling thread's OpenMP thread count (OMP_NUM_THREADS, `omp_set_num_threads`), or 1
/// inside an active parallel region: what it asks for, before the idle-core limit.
inline int openmp_threads() {
#if defined(_OPENMP)
  return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
  return 1;
#endif
}

/// Number of threads a large kernel will use: the calling thread's OpenMP thread count,
/// limited to the idle cores (idle_cores.hpp), or 1 inside an active parallel region
/// (xquant does not nest regions).
inline int max_threads() {
#if defined(_OPENMP)
  if (omp_in_parallel()) return 1;
  const int wanted = omp_get_max_threads();
  return wanted > 1 ? idle_core_threads(wanted) : wanted;
#else
  return 1;
#endif
}

/// Sets the calling thread's OpenMP thread count to `threads` for its scope (nothing inside
/// an active parallel region), and restores it: for the libraries that read the count
/// themselves at each call (OpenBLAS's OpenMP build, oneDNN), so that they use what
/// `max_threads()` allows.
class openmp_threads_scope {
 public:
  explicit openmp_threads_scope(int threads) {
#if defined(_OPENMP)
    if (threads >= 1 && !omp_in_parallel()) {
      saved_ = omp_get_max_threads();
      if (saved_ != threads) omp_set_num_threads(threads);
      else saved_ = 0;
    }
#else
    (void)threads;
#endif
  }
  ~openmp_threads_scope() {
#if defined(_OPENMP)
    if (saved_ > 0) omp_set_num_threads(saved_);
#endif
  }
  openmp_threads_scope(const openmp_threads_scope&) = delete;
  openmp_threads_scope& operator=(const openmp_threads_scope&) = delete;

 private:
  int saved_ = 0;
};

/// How many parallel regions xquant has opened, counting each GEMM it let the BLAS run on
/// more than one thread. A test hook: small work must leave it unchanged.
inline unsigned long parallel_region_count() noexcept {
  return xq::detail::parallel_region_counter().load(std::memory_order_relaxed);
}

/// Whether the BLAS runs its GEMMs on a pthreads pool of its own (OpenBLAS's pthreads
/// build) rather than on OpenMP's (its OpenMP build) or on the caller's thread.
inline bool blas_has_thread_pool() {
#if XQ_HAVE_OPENBLAS
  // openblas_get_parallel(): 0 sequential, 1 its own pthreads pool, 2 OpenMP.
  return openblas_get_parallel() == 1 && openblas_get_num_threads() > 1;
#else
  return false;
#endif
}

/// Makes the BLAS calls of its scope run on the calling thread, and restores.
///
/// - OpenBLAS's OpenMP build takes `omp_get_max_threads()` at every call, and one thread
///   inside an active parallel region: the scope sets the calling thread's OpenMP thread
///   count (an OpenMP ICV of that thread alone) to 1. OpenBLAS then also stores 1 in its
///   process-wide count until its next call sets it back from another thread's count, so
///   two threads of yours calling xquant at once with different thread counts may see
///   each other's count; a training loop calling from one thread never does.
/// - OpenBLAS's pthreads build has only the process-wide `openblas_set_num_threads`: the
///   scope sets it to 1 and restores it, which is not thread-safe either.
/// - Another BLAS: OpenMP's thread count is set to 1 (MKL and BLIS's OpenMP builds follow
///   it); a BLAS with a pool of its own keeps it.
class single_threaded_blas {
 public:
  single_threaded_blas() {
#if XQ_HAVE_OPENBLAS
    if (openblas_get_parallel() == 1) {
      blas_threads_ = openblas_get_num_threads();
      if (blas_threads_ > 1) openblas_set_num_threads(1);
      return;
    }
#endif
#if defined(_OPENMP)
    if (!omp_in_parallel()) {
      omp_threads_ = omp_get_max_threads();
      if (omp_threads_ > 1) omp_set_num_threads(1);
    }
#endif
  }
  ~single_threaded_blas() {
#if XQ_HAVE_OPENBLAS
    if (blas_threads_ > 1) openblas_set_num_threads(blas_threads_);
#endif
#if defined(_OPENMP)
    if (omp_threads_ > 1) omp_set_num_threads(omp_threads_);
#endif
  }
  single_threaded_blas(const single_threaded_blas&) = delete;
  single_threaded_blas& operator=(const single_threaded_blas&) = delete;

 private:
  int blas_threads_ = 0;
  int omp_threads_ = 0;
};

}  // namespace xq::kernels
