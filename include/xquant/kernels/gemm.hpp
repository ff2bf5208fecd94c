#pragma once
/// \file gemm.hpp
/// Single-precision GEMM through CBLAS (OpenBLAS by default; see CMakeLists.txt).
/// Dense layers and im2col convolutions spend nearly all their time here.
///
/// Threads (threads.hpp): a GEMM of fewer than XQ_GEMM_PARALLEL_THRESHOLD multiply-adds
/// runs on the caller's thread. A larger one is threaded by the BLAS, except in
/// deterministic mode: OpenBLAS's bits depend on how it tiles C, and it tiles C by its
/// thread count (1 against 2 threads: a few ulps apart in about a third of the entries,
/// bench/README.md), so there C is cut into XQ_GEMM_BLOCKS blocks whatever the thread
/// count, each block is one single-threaded BLAS call, and the blocks are spread over the
/// threads. A GEMM below the threshold is one call in both modes: the same bits.

#include <cstddef>

#include <cblas.h>

#include "../config.hpp"
#include "parallel.hpp"
#include "threads.hpp"

namespace xq::detail {

XQ_DECL void cblas_gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                        float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta,
                        float* c, std::size_t ldc);

/// Whether a GEMM of m x n x k multiply-adds is worth more than one thread.
inline bool gemm_worth_threads(std::size_t m, std::size_t n, std::size_t k) {
  return double(m) * double(n) * double(k) >= double(XQ_GEMM_PARALLEL_THRESHOLD);
}

/// Rows (or columns) per block in deterministic mode, from the shape alone. Up to
/// XQ_GEMM_BLOCKS blocks of the longer side of C, a power of two of them (equal shares on
/// 2, 4 or 8 threads) and none narrower than 64 unless that leaves one: each block packs
/// the whole other operand again, and narrow blocks repeat that work for little arithmetic
/// (8 blocks of 16 columns made a 64 x 128 x 3136 GEMM 1.46x slower than OpenBLAS's own
/// two threads; 2 blocks of 64, 1.0x). Multiples of 8: whole AVX vectors of C.
inline std::size_t gemm_block_size(std::size_t extent) {
  std::size_t blocks = 2;
  while (blocks * 2 <= std::size_t(XQ_GEMM_BLOCKS) && extent / (blocks * 2) >= 64) blocks *= 2;
  const std::size_t size = (extent + blocks - 1) / blocks;
  return (size + 7) / 8 * 8;
}

/// Deterministic mode's GEMM: fixed blocks of C, each one single-threaded BLAS call.
/// Every entry of C is computed by the same call on the same operands for any thread
/// count, so its bits do not depend on it.
XQ_DECL void gemm_in_blocks(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                            float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                            float beta, float* c, std::size_t ldc);

}  // namespace xq::detail

namespace xq::kernels {

/// Row-major C = alpha * op(A) * op(B) + beta * C, with op(A) m×k, op(B) k×n, C m×n.
/// `lda`, `ldb`, `ldc` are the row strides of A, B, C as stored.
XQ_DECL void gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                  float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                  float beta, float* c, std::size_t ldc);

}  // namespace xq::kernels

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/gemm.ipp"
#endif
