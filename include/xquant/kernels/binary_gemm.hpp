#pragma once
/// \file binary_gemm.hpp
/// The binary product of the binary engine (deploy/) and of binarized layers in training
/// (wrappers/xnor_forward.hpp) (Larq's compute engine, "XNOR-popcount"): with ±1 values
/// packed one bit each (bit 1 = -1, bit 0 = +1, as LCE packs them), the dot product of
/// two length-K vectors is
///
///   sum_k a_k * b_k = K - 2 * popcount(a XOR b)
///
/// because a product is -1 exactly where the bits differ. Rows are whole 64-bit words;
/// the bits past K in a row's last word are 0 in both operands, so they never differ.

#include <cstddef>
#include <cstdint>

#include "../config.hpp"
#include "cpu_features.hpp"

// Word operations (m * n * words) from which binary_gemm (and the binary convolutions of
// engine_kernels.hpp) use more than one thread: 1Mi, about 0.2 ms of this kernel on one
// Zen 3 core (5.5-6.5 Gword/s). BM_binary_gemm_threads in bench/deploy_bench.cpp times the
// region on 1 and 2 threads by size (bench/README.md, "The integer and binary engines").
// Override with -D.
#ifndef XQ_BINARY_GEMM_PARALLEL_THRESHOLD
#define XQ_BINARY_GEMM_PARALLEL_THRESHOLD (std::size_t(1) << 20)
#endif

namespace xq::kernels {

/// C[i][j] = k - 2 * popcount(A[i] xor B[j]) over `words` words per row: A is m rows,
/// B is n rows (each row one output channel's packed weights), C is m x n.
XQ_DECL void binary_gemm_reference(std::size_t m, std::size_t n, std::size_t words, std::int32_t k,
                                   const std::uint64_t* a, const std::uint64_t* b, std::int32_t* c);

/// The kernel binary_gemm uses now: the best this CPU runs within the cap
/// (kernels/cpu_features.hpp): avx512_vpopcntdq, avx2 or portable.
XQ_DECL kernels::cpu_isa binary_gemm_isa() noexcept;

/// The fast kernel: the same integers, chosen at run time (binary_gemm_isa). With AVX-512
/// VPOPCNTDQ, XOR + VPOPCNTQ on 8 columns per vector, 6 x 16 tiles; with AVX2, Mula's
/// nibble-lookup popcount (VPSHUFB) on nibble-split operands, 2 x 16 tiles of C; B
/// repacked per call (binary_gemm.ipp); portable: XOR-POPCNT on 64-bit words. Threads (OpenMP) over blocks of 64 rows when m * n * words >=
/// XQ_BINARY_GEMM_PARALLEL_THRESHOLD.
XQ_DECL void binary_gemm(std::size_t m, std::size_t n, std::size_t words, std::int32_t k, const std::uint64_t* a,
                         const std::uint64_t* b, std::int32_t* c);

}  // namespace xq::kernels

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/binary_gemm.ipp"
#endif
