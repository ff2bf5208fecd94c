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

inline void cblas_gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                       float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta,
                       float* c, std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

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
inline void gemm_in_blocks(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                           float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                           float beta, float* c, std::size_t ldc) {
  const bool by_rows = m >= n;  // cut the longer side: the other operand is packed once per block
  const std::size_t extent = by_rows ? m : n, size = gemm_block_size(extent);
  const std::size_t blocks = (extent + size - 1) / size;
  const int threads = blocks > 1 ? kernels::max_threads() : 1;
  // Taken after max_threads(): the scope sets the caller's OpenMP thread count to 1, and
  // parallel_items names its thread count itself. Inside the region OpenBLAS's OpenMP
  // build runs on one thread by itself (it is in an active parallel region).
  const kernels::single_threaded_blas one_thread;
  kernels::parallel_items(threads < int(blocks) ? threads : int(blocks), blocks, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t blk = b0; blk < b1; ++blk) {
      const std::size_t first = blk * size, count = first + size < extent ? size : extent - first;
      if (by_rows) {  // rows [first, first + count) of op(A) and C
        const float* ab = transpose_a ? a + first : a + first * lda;
        cblas_gemm(transpose_a, transpose_b, count, n, k, alpha, ab, lda, b, ldb, beta, c + first * ldc, ldc);
      } else {  // columns [first, first + count) of op(B) and C
        const float* bb = transpose_b ? b + first * ldb : b + first;
        cblas_gemm(transpose_a, transpose_b, m, count, k, alpha, a, lda, bb, ldb, beta, c + first, ldc);
      }
    }
  });
}

}  // namespace xq::detail

namespace xq::kernels {

/// Row-major C = alpha * op(A) * op(B) + beta * C, with op(A) m×k, op(B) k×n, C m×n.
/// `lda`, `ldb`, `ldc` are the row strides of A, B, C as stored.
inline void gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                 float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                 float beta, float* c, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  if (!xq::detail::gemm_worth_threads(m, n, k)) {
    const single_threaded_blas one_thread;
    xq::detail::cblas_gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else if (deterministic()) {
    xq::detail::gemm_in_blocks(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    if (max_threads() > 1 || blas_has_thread_pool()) xq::detail::count_parallel_region();
    xq::detail::cblas_gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

}  // namespace xq::kernels
