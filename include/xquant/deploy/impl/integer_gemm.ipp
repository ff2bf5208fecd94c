#pragma once
/// \file integer_gemm.ipp
/// The integer engine's matrix products (deploy/integer_gemm.hpp). The packed layout:
/// K padded to an even count, then for each pair of rows k, k+1 and each column j the
/// two values B[k][j], B[k+1][j] side by side, so one 32-bit broadcast of A[i][k..k+1]
/// times one load of B gives VPMADDWD's pairs for consecutive columns.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../integer_gemm.hpp"

namespace xq::deploy {

XQ_DECL void gemm_s16_reference(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda,
                                const std::int16_t* b, const std::int32_t* bias, std::int32_t* c) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::int32_t s = bias ? bias[j] : 0;
      for (std::size_t p = 0; p < k; ++p) s += std::int32_t(a[i * lda + p]) * std::int32_t(b[p * n + j]);
      c[i * n + j] = s;
    }
}

XQ_DECL packed_s16_matrix::packed_s16_matrix(const std::int16_t* b, std::size_t k, std::size_t n)
    : k_(k), n_(n), data_(((k + 1) / 2) * n * 2, 0) {
  for (std::size_t p = 0; p < k; ++p)
    for (std::size_t j = 0; j < n; ++j) data_[(p / 2) * n * 2 + j * 2 + (p % 2)] = b[p * n + j];
}

XQ_DECL void gemm_s16(std::size_t m, const std::int16_t* a, std::size_t lda, const packed_s16_matrix& b,
                      const std::int32_t* bias, std::int32_t* c) {
  const std::size_t n = b.cols(), k = b.rows(), pairs = (k + 1) / 2;
  const std::int16_t* w = b.data().data();
  std::vector<std::int32_t> row(n);
  for (std::size_t i = 0; i < m; ++i) {
    const std::int16_t* ai = a + i * lda;
    for (std::size_t j = 0; j < n; ++j) row[j] = bias ? bias[j] : 0;
    for (std::size_t p = 0; p < pairs; ++p) {
      const std::int32_t a0 = ai[2 * p];
      const std::int32_t a1 = 2 * p + 1 < k ? ai[2 * p + 1] : 0;
      const std::int16_t* wp = w + p * n * 2;
      for (std::size_t j = 0; j < n; ++j) row[j] += a0 * wp[2 * j] + a1 * wp[2 * j + 1];
    }
    std::memcpy(c + i * n, row.data(), n * sizeof(std::int32_t));
  }
}

}  // namespace xq::deploy
