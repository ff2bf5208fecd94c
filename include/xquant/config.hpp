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
/// its .ipp at its end unless XQ_SEPARATE_COMPILATION is defined. A virtual function defined
/// in an .ipp is declared XQ_DECL in its class too: otherwise it is the class's key function
/// (the Itanium ABI's first virtual function not inline in the class), and in header-only mode
/// every translation unit that includes the header would emit the vtable and every virtual
/// body, used or not.
#if defined(XQ_SEPARATE_COMPILATION)
#define XQ_DECL
#else
#define XQ_DECL inline
#endif

/// A layer's copy, move and destruction, declared in its class by XQ_SPECIAL_MEMBERS(T) and
/// defined (defaulted) in its .ipp by XQ_DEFINE_SPECIAL_MEMBERS(T). A layer holds strings,
/// shared parameters and tensors; implicit members would inline every member's copy and
/// release into each composite a program builds from it (its constructors, its quantized
/// twin, its destructor): in separate mode they are then one call each.
#define XQ_SPECIAL_MEMBERS(T)              \
  XQ_DECL T(const T&);                     \
  XQ_DECL T(T&&) noexcept;                 \
  XQ_DECL T& operator=(const T&);          \
  XQ_DECL T& operator=(T&&) noexcept;      \
  XQ_DECL ~T();
#define XQ_DEFINE_SPECIAL_MEMBERS(T)                       \
  XQ_DECL T::T(const T&) = default;                        \
  XQ_DECL T::T(T&&) noexcept = default;                    \
  XQ_DECL T& T::operator=(const T&) = default;             \
  XQ_DECL T& T::operator=(T&&) noexcept = default;         \
  XQ_DECL T::~T() = default;

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

// Thresholds below which work stays on the caller's thread (kernels/threads.hpp). Measured
// on 2 Zen 3 cores with Google Benchmark (bench/threads_bench.cpp; figures and command in
// bench/README.md, "Threads"): each is where two threads are clearly faster than one on a
// quiet machine. Below them a region costs more than it saves, and where another process
// keeps a core busy every region costs milliseconds. Override with -D.

// Elementwise walkers and fake quantizers (parallel_for): elements of the tensor. Two
// threads: 1.1x at 16Ki, 1.5x at 64Ki, 1.7x at 256Ki on a quiet machine.
#ifndef XQ_PARALLEL_THRESHOLD
#define XQ_PARALLEL_THRESHOLD (std::size_t(1) << 18)
#endif

// Per-image loops (im2col, col2im, pooling, depthwise convolution): elements written or
// read per call, as each caller counts them (im2col: the column matrix). Two threads at
// 512Ki: 1.3-2.0x quiet; with a busy core and OMP_WAIT_POLICY=passive, 0.96x (im2col) and
// 1.1x (col2im), where at 128Ki they lose 30%.
#ifndef XQ_PARALLEL_ITEMS_THRESHOLD
#define XQ_PARALLEL_ITEMS_THRESHOLD (std::size_t(1) << 19)
#endif

// GEMMs: m * n * k (multiply-adds). Below it a GEMM runs on one thread; at or above it
// OpenBLAS threads it (or, in deterministic mode, xquant spreads fixed blocks of it).
// OpenBLAS 0.3.21 itself threads from 262,144 up; two threads gain 1.2-1.7x at 4Mi on a
// quiet machine, but with a busy core cost 0.7 ms per GEMM at 1Mi (a 14x slowdown there).
#ifndef XQ_GEMM_PARALLEL_THRESHOLD
#define XQ_GEMM_PARALLEL_THRESHOLD (std::size_t(1) << 22)
#endif

// Deterministic mode: the most blocks of C a large GEMM is cut into (kernels/gemm.hpp).
// Results in deterministic mode depend on it (not on the thread count): changing it
// changes bits.
#ifndef XQ_GEMM_BLOCKS
#define XQ_GEMM_BLOCKS 8
#endif

// Whether deterministic mode (kernels/threads.hpp) is on at start-up.
#ifndef XQ_DETERMINISTIC_DEFAULT
#define XQ_DETERMINISTIC_DEFAULT 0
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
