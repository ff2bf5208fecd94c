#pragma once
/// \file gemm.hpp
/// Single-precision GEMM through CBLAS (OpenBLAS by default; see CMakeLists.txt).
/// Dense layers and im2col convolutions spend nearly all their time here.

#include <cstddef>

#include <cblas.h>

namespace xq::kernels {

/// Row-major C = alpha * op(A) * op(B) + beta * C, with op(A) m×k, op(B) k×n, C m×n.
/// `lda`, `ldb`, `ldc` are the row strides of A, B, C as stored.
inline void gemm(bool transpose_a, bool transpose_b, std::size_t m, std::size_t n, std::size_t k,
                 float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                 float beta, float* c, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

}  // namespace xq::kernels
