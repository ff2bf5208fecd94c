#pragma once
/// \file config.hpp
/// Version and the XQ_ configuration macros.

#define XQ_VERSION_MAJOR 0
#define XQ_VERSION_MINOR 1
#define XQ_VERSION_PATCH 0

/// Separate compilation, as Boost.Asio offers it. xquant is header-only by default: every
/// translation unit compiles what it uses. Defining XQ_SEPARATE_COMPILATION in every
/// translation unit of a program, and compiling <xquant/src.hpp> in one of them (CMake:
/// link `xquant::compiled`), compiles the library's non-template code once instead: the
/// headers then only declare it, and a program's own translation units build in seconds.
///
/// How a header is split: what templates and one-line accessors need stays in the header;
/// the bodies of other functions are in `<room>/impl/<header>.ipp`, declared `XQ_DECL` (inline
/// in header-only mode, an ordinary declaration in separate mode), and the header includes
/// its .ipp at its end unless XQ_SEPARATE_COMPILATION is defined.
#if defined(XQ_SEPARATE_COMPILATION)
#define XQ_DECL
#else
#define XQ_DECL inline
#endif

// Device code: every elementwise kernel in quant/ is written once and compiled
// for the host (float and xsimd batches) and, under nvcc, for the device.
#if defined(__CUDACC__)
#define XQ_HOST_DEVICE __host__ __device__
#ifndef XQ_WITH_CUDA
#define XQ_WITH_CUDA 1
#endif
#else
#define XQ_HOST_DEVICE
#endif

#if defined(__GNUC__) || defined(__clang__)
#define XQ_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define XQ_ALWAYS_INLINE inline
#endif

// Tensors at least this large are split across threads (when OpenMP is on).
// Below it, thread start-up costs more than the work.
#ifndef XQ_PARALLEL_THRESHOLD
#define XQ_PARALLEL_THRESHOLD (std::size_t(1) << 18)
#endif

/// Marks a loop over independent elements (no sums across iterations) for
/// vectorization. GCC's -O2 cost model leaves loops with a run-time trip count scalar
/// (10x slower max pooling); `omp simd`, honored under -fopenmp, vectorizes them at any
/// optimization level. Each element's arithmetic is unchanged, so are the results.
#ifndef XQ_OMP_SIMD
#if defined(_OPENMP)
#define XQ_OMP_SIMD _Pragma("omp simd")
#else
#define XQ_OMP_SIMD
#endif
#endif
