#pragma once
/// \file isa_region.hpp
/// Code compiled for an instruction set the build's flags do not name, so that one binary
/// built for a generic x86-64 carries the AVX2, AVX-512 and VNNI kernels and picks one at
/// run time (cpu_features.hpp).
///
///   XQ_ISA_REGION_BEGIN("avx512f,avx512bw,avx512vnni")
///   namespace my_kernels_avx512_vnni { ... every function defined here may use them ... }
///   XQ_ISA_REGION_END
///
/// A region, not a target attribute on each function: the attribute does not reach lambdas
/// and templates defined inside an attributed function, and an intrinsic that is not inlined
/// into its caller is a function call per instruction. GCC's `#pragma GCC target` and clang's
/// `#pragma clang attribute` give every function defined in the region (lambdas and
/// instantiated templates included) the instruction set. Nothing from a region may run
/// before the caller has checked cpu().has(isa).
///
/// XQ_ISA_COMPILED(isa) says whether a region's kernels exist in this translation unit: always
/// where regions work (GCC or clang on x86-64, outside CUDA's compiler, whose front end does
/// not take the pragmas), otherwise only where the build's flags name the instruction set.

#include "cpu_features.hpp"

#define XQ_ISA_PRAGMA(x) _Pragma(#x)

#if XQ_X86_CPUID && defined(__x86_64__) && !defined(__CUDACC__) && !defined(XQ_NO_ISA_DISPATCH)
#define XQ_ISA_DISPATCH 1
#if defined(__clang__)
#define XQ_ISA_REGION_BEGIN(targets) XQ_ISA_PRAGMA(clang attribute push(__attribute__((target(targets))), apply_to = function))
#define XQ_ISA_REGION_END XQ_ISA_PRAGMA(clang attribute pop)
#else
#define XQ_ISA_REGION_BEGIN(targets) XQ_ISA_PRAGMA(GCC push_options) XQ_ISA_PRAGMA(GCC target(targets))
#define XQ_ISA_REGION_END XQ_ISA_PRAGMA(GCC pop_options)
#endif
#else
#define XQ_ISA_DISPATCH 0
#define XQ_ISA_REGION_BEGIN(targets)
#define XQ_ISA_REGION_END
#endif

// Whether the build's flags alone allow each kernel family (where regions do not exist).
#if defined(__AVX2__) && defined(__FMA__)
#define XQ_ISA_FLAGS_avx2 1
#else
#define XQ_ISA_FLAGS_avx2 0
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define XQ_ISA_FLAGS_avx512bw 1
#else
#define XQ_ISA_FLAGS_avx512bw 0
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#define XQ_ISA_FLAGS_avx512_vnni 1
#else
#define XQ_ISA_FLAGS_avx512_vnni 0
#endif
#if defined(__AVX2__) && defined(__AVXVNNI__)
#define XQ_ISA_FLAGS_avx_vnni 1
#else
#define XQ_ISA_FLAGS_avx_vnni 0
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VPOPCNTDQ__)
#define XQ_ISA_FLAGS_avx512_vpopcntdq 1
#else
#define XQ_ISA_FLAGS_avx512_vpopcntdq 0
#endif

#define XQ_ISA_COMPILED(isa) (XQ_ISA_DISPATCH || XQ_ISA_FLAGS_##isa)

// The target strings of each region.
// (cpu_features::has checks each of them.)
#define XQ_ISA_TARGET_avx2 "avx2,fma"
#define XQ_ISA_TARGET_avx512bw "avx2,fma,avx512f,avx512bw,avx512vl"
#define XQ_ISA_TARGET_avx_vnni "avx2,fma,avxvnni"
#define XQ_ISA_TARGET_avx512_vnni "avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni"
#define XQ_ISA_TARGET_avx512_vpopcntdq "avx2,fma,avx512f,avx512bw,avx512vl,avx512vpopcntdq"
