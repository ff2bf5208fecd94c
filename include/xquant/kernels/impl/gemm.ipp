#pragma once
/// \file gemm.ipp
/// The code of kernels/gemm.hpp: compiled by every translation unit that includes it in
/// header-only mode, once in <xquant/src.hpp> in separate mode (config.hpp).

#include "../gemm.hpp"

namespace xq::detail {

XQ_DECL void cblas_gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                        float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta,
                        float* c, std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

XQ_DECL void gemm_in_blocks(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
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

XQ_DECL void gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                  float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                  float beta, float* c, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  if (!xq::detail::gemm_worth_threads(m, n, k)) {
    const single_threaded_blas one_thread;
    xq::detail::cblas_gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else if (deterministic()) {
    xq::detail::gemm_in_blocks(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    // OpenBLAS's OpenMP build reads the caller's OpenMP count: at most the idle cores.
    const int threads = max_threads();
    const openmp_threads_scope allowed(threads);
    if (threads > 1 || blas_has_thread_pool()) xq::detail::count_parallel_region();
    xq::detail::cblas_gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

}  // namespace xq::kernels
