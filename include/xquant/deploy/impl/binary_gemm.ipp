#pragma once
/// \file binary_gemm.ipp
/// XNOR-popcount products (deploy/binary_gemm.hpp).

#include <cstddef>
#include <cstdint>

#include "../binary_gemm.hpp"

namespace xq::deploy {

XQ_DECL void binary_gemm_reference(std::size_t m, std::size_t n, std::size_t words, std::int32_t k,
                                   const std::uint64_t* a, const std::uint64_t* b, std::int32_t* c) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::int32_t differ = 0;
      for (std::size_t w = 0; w < words; ++w) differ += __builtin_popcountll(a[i * words + w] ^ b[j * words + w]);
      c[i * n + j] = k - 2 * differ;
    }
}

XQ_DECL void binary_gemm(std::size_t m, std::size_t n, std::size_t words, std::int32_t k, const std::uint64_t* a,
                         const std::uint64_t* b, std::int32_t* c) {
  // Four columns at a time: each word of A is loaded once for four XORs.
  for (std::size_t i = 0; i < m; ++i) {
    const std::uint64_t* ai = a + i * words;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const std::uint64_t* b0 = b + j * words;
      std::int32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0;
      for (std::size_t w = 0; w < words; ++w) {
        const std::uint64_t x = ai[w];
        d0 += __builtin_popcountll(x ^ b0[w]);
        d1 += __builtin_popcountll(x ^ b0[words + w]);
        d2 += __builtin_popcountll(x ^ b0[2 * words + w]);
        d3 += __builtin_popcountll(x ^ b0[3 * words + w]);
      }
      c[i * n + j] = k - 2 * d0;
      c[i * n + j + 1] = k - 2 * d1;
      c[i * n + j + 2] = k - 2 * d2;
      c[i * n + j + 3] = k - 2 * d3;
    }
    for (; j < n; ++j) {
      std::int32_t d = 0;
      for (std::size_t w = 0; w < words; ++w) d += __builtin_popcountll(ai[w] ^ b[j * words + w]);
      c[i * n + j] = k - 2 * d;
    }
  }
}

}  // namespace xq::deploy
