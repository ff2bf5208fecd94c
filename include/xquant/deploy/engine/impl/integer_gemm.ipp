#pragma once
/// \file integer_gemm.ipp
/// The integer engine's matrix products (deploy/engine/integer_gemm.hpp).
///
/// The packed layout: the N columns cut into panels of 16 (the last one padded with zero
/// columns), K padded to an even count with a zero row; panel after panel, and in a panel
/// for each pair of rows k, k+1 the 16 columns' two values side by side:
///
///   data[(panel * pairs + p) * 32 + 2 * j + r] = B[2p + r][16 * panel + j]
///
/// so one 32-bit broadcast of A[i][2p..2p+1] and the panel's two 256-bit rows of pair p
/// give VPMADDWD (`_mm256_madd_epi16`) the products of 16 columns: lane j gets
/// A[i][2p] * B[2p][j] + A[i][2p+1] * B[2p+1][j], exact in int32.
///
/// The AVX2 kernel keeps a tile of 6 rows x 16 columns of C in 12 registers for the whole
/// of K (6 broadcasts, 2 loads, 12 VPMADDWD and 12 VPADDD per pair of k), and walks the
/// panels inside blocks of rows small enough for L1/L2, so a panel of B is reused by every
/// row tile of a block. Exactness: every VPMADDWD pair and every VPADDD is a sum of exact
/// products computed modulo 2^32 (wrap-around, no saturation), and the true sum fits int32
/// (lower() checks it), so any order gives the reference's integers.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "../../../kernels/parallel.hpp"
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
    : k_(k), n_(n), data_(panels() * pairs() * 2 * panel_width, 0) {
  const std::size_t pairs_ = pairs();
  for (std::size_t p = 0; p < k; ++p)
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t panel = j / panel_width, jj = j % panel_width;
      data_[(panel * pairs_ + p / 2) * 2 * panel_width + 2 * jj + p % 2] = b[p * n + j];
    }
}

namespace detail {

/// Rows of C per tile of the AVX2 kernel (with 16 columns: 12 accumulator registers).
constexpr std::size_t gemm_s16_tile_rows = 6;

/// Rows per block: a block's rows of A are read once per panel of B, so they should stay
/// in L2 (at K = 288: 96 rows are 54 KiB), and there should be blocks enough to share
/// among threads.
inline std::size_t gemm_s16_block_rows(std::size_t k) {
  const std::size_t bytes_per_row = 2 * std::max<std::size_t>(k, 1);
  const std::size_t rows = (std::size_t(96) << 10) / bytes_per_row;  // 96 KiB of A
  return std::max<std::size_t>(gemm_s16_tile_rows, std::min<std::size_t>(rows, 16 * gemm_s16_tile_rows)) /
         gemm_s16_tile_rows * gemm_s16_tile_rows;
}

/// Stores a row of 16 accumulators (the first `cols` of them) at c.
inline void store_s32_row(std::int32_t* c, const std::int32_t (&row)[16], std::size_t cols) {
  std::memcpy(c, row, cols * sizeof(std::int32_t));
}

/// Calls f(0), ..., f(Count - 1), unrolled at compile time: the tile's accumulators must be
/// registers, and GCC at -O2 keeps an array indexed in a loop in memory.
template <class F, std::size_t... I>
XQ_ALWAYS_INLINE void unrolled(F&& f, std::index_sequence<I...>) {
  (f(std::integral_constant<std::size_t, I>{}), ...);
}
template <std::size_t Count, class F>
XQ_ALWAYS_INLINE void unrolled(F&& f) {
  unrolled(f, std::make_index_sequence<Count>{});
}

#if defined(__AVX2__)

/// A's pair A[k], A[k+1] as one int32 (unaligned load; the caller makes sure k+1 < K).
XQ_ALWAYS_INLINE __m256i broadcast_pair(const std::int16_t* a) {
  std::int32_t v;
  std::memcpy(&v, a, sizeof v);
  return _mm256_set1_epi32(v);
}

/// Stores a tile's accumulators (Rows x 16, the first `cols` columns) at c.
template <std::size_t Rows>
XQ_ALWAYS_INLINE void store_tile(const __m256i (&acc)[Rows][2], std::int32_t* c, std::size_t ldc, std::size_t cols) {
  if (cols == 16) {
    unrolled<Rows>([&](auto r) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), acc[r][0]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), acc[r][1]);
    });
  } else {
    alignas(32) std::int32_t row[16];
    unrolled<Rows>([&](auto r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(row), acc[r][0]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(row + 8), acc[r][1]);
      store_s32_row(c + r * ldc, row, cols);
    });
  }
}

/// C[0..Rows)[0..cols) of one panel: bias + A * B over the whole of K. `w` is the panel
/// (pairs x 32 int16), `bias16` its 16 biases (zero padded).
template <std::size_t Rows>
void gemm_s16_tile_avx2(const std::int16_t* a, std::size_t lda, std::size_t k, const std::int16_t* w,
                        const std::int32_t* bias16, std::int32_t* c, std::size_t ldc, std::size_t cols) {
  __m256i acc[Rows][2];
  const __m256i bias_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias16));
  const __m256i bias_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias16 + 8));
  unrolled<Rows>([&](auto r) {
    acc[r][0] = bias_lo;
    acc[r][1] = bias_hi;
  });
  const std::size_t full = k / 2;
  const __m256i* wp = reinterpret_cast<const __m256i*>(w);
  for (std::size_t p = 0; p < full; ++p, wp += 2) {
    const __m256i b0 = _mm256_loadu_si256(wp), b1 = _mm256_loadu_si256(wp + 1);
    unrolled<Rows>([&](auto r) {
      const __m256i x = broadcast_pair(a + r * lda + 2 * p);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(x, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(x, b1));
    });
  }
  if (k % 2) {  // the last k alone: its partner in B is the zero padding row
    const __m256i b0 = _mm256_loadu_si256(wp), b1 = _mm256_loadu_si256(wp + 1);
    unrolled<Rows>([&](auto r) {
      const __m256i x = _mm256_set1_epi32(std::int32_t(std::uint16_t(a[r * lda + k - 1])));
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(x, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(x, b1));
    });
  }
  store_tile<Rows>(acc, c, ldc, cols);
}

#endif

/// The portable tile (no AVX2): the same order of work, plain int32 arithmetic on the
/// packed panel; compilers vectorize the 16-column inner loop.
template <std::size_t Rows>
void gemm_s16_tile_portable(const std::int16_t* a, std::size_t lda, std::size_t k, const std::int16_t* w,
                            const std::int32_t* bias16, std::int32_t* c, std::size_t ldc, std::size_t cols) {
  // Unsigned: sums wrap exactly as the SIMD kernel's (the true sum fits int32 anyway).
  std::uint32_t acc[Rows][16];
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t j = 0; j < 16; ++j) acc[r][j] = std::uint32_t(bias16[j]);
  const std::size_t pairs = (k + 1) / 2;
  for (std::size_t p = 0; p < pairs; ++p) {
    const std::int16_t* wp = w + p * 32;
    for (std::size_t r = 0; r < Rows; ++r) {
      const std::int32_t a0 = a[r * lda + 2 * p];
      const std::int32_t a1 = 2 * p + 1 < k ? a[r * lda + 2 * p + 1] : 0;
      for (std::size_t j = 0; j < 16; ++j)
        acc[r][j] += std::uint32_t(a0 * std::int32_t(wp[2 * j])) + std::uint32_t(a1 * std::int32_t(wp[2 * j + 1]));
    }
  }
  for (std::size_t r = 0; r < Rows; ++r) {
    std::int32_t row[16];
    for (std::size_t j = 0; j < 16; ++j) row[j] = std::int32_t(acc[r][j]);
    store_s32_row(c + r * ldc, row, cols);
  }
}

template <std::size_t Rows>
void gemm_s16_tile(const std::int16_t* a, std::size_t lda, std::size_t k, const std::int16_t* w,
                   const std::int32_t* bias16, std::int32_t* c, std::size_t ldc, std::size_t cols) {
#if defined(__AVX2__)
  gemm_s16_tile_avx2<Rows>(a, lda, k, w, bias16, c, ldc, cols);
#else
  gemm_s16_tile_portable<Rows>(a, lda, k, w, bias16, c, ldc, cols);
#endif
}

/// Rows [i0, i1) of C, block by block, panel by panel.
inline void gemm_s16_rows(std::size_t i0, std::size_t i1, const std::int16_t* a, std::size_t lda,
                          const packed_s16_matrix& b, const std::int32_t* bias, std::int32_t* c) {
  constexpr std::size_t tile = gemm_s16_tile_rows, width = packed_s16_matrix::panel_width;
  const std::size_t n = b.cols(), k = b.rows(), panels = b.panels(), pairs = b.pairs();
  const std::size_t block = gemm_s16_block_rows(k);
  const std::int16_t* data = b.data().data();
  for (std::size_t ib = i0; ib < i1; ib += block) {
    const std::size_t ie = std::min(i1, ib + block);
    for (std::size_t panel = 0; panel < panels; ++panel) {
      const std::int16_t* w = data + panel * pairs * 2 * width;
      const std::size_t j = panel * width, cols = std::min(width, n - j);
      alignas(32) std::int32_t bias16[width] = {};
      if (bias) std::copy(bias + j, bias + j + cols, bias16);
      std::size_t i = ib;
      for (; i + tile <= ie; i += tile) gemm_s16_tile<tile>(a + i * lda, lda, k, w, bias16, c + i * n + j, n, cols);
      switch (ie - i) {
        case 1: gemm_s16_tile<1>(a + i * lda, lda, k, w, bias16, c + i * n + j, n, cols); break;
        case 2: gemm_s16_tile<2>(a + i * lda, lda, k, w, bias16, c + i * n + j, n, cols); break;
        case 3: gemm_s16_tile<3>(a + i * lda, lda, k, w, bias16, c + i * n + j, n, cols); break;
        case 4: gemm_s16_tile<4>(a + i * lda, lda, k, w, bias16, c + i * n + j, n, cols); break;
        case 5: gemm_s16_tile<5>(a + i * lda, lda, k, w, bias16, c + i * n + j, n, cols); break;
        default: break;
      }
    }
  }
}

}  // namespace detail

XQ_DECL void gemm_s16(std::size_t m, const std::int16_t* a, std::size_t lda, const packed_s16_matrix& b,
                      const std::int32_t* bias, std::int32_t* c) {
  const std::size_t n = b.cols(), k = b.rows();
  if (m == 0 || n == 0) return;
  // Threads over whole blocks of rows, only for enough work (integer_gemm.hpp's threshold);
  // every entry of C is computed by one tile the same way whatever the split.
  const std::size_t block = detail::gemm_s16_block_rows(k), blocks = (m + block - 1) / block;
  const bool worth_it = double(m) * double(n) * double(k) >= double(XQ_INTEGER_GEMM_PARALLEL_THRESHOLD);
  const int threads = worth_it && blocks > 1 ? kernels::max_threads() : 1;
  kernels::parallel_chunks(threads, blocks, 1, [&](std::size_t b0, std::size_t b1) {
    detail::gemm_s16_rows(b0 * block, std::min(m, b1 * block), a, lda, b, bias, c);
  });
}

}  // namespace xq::deploy
