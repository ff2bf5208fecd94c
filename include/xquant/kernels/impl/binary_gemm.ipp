#pragma once
/// \file binary_gemm.ipp
/// XNOR-popcount products (deploy/engine/binary_gemm.hpp).
///
/// The AVX2 kernel counts across columns: B is repacked (per call, it is small) so that one
/// 256-bit vector holds word w of 4 consecutive columns, and a word of A broadcast to the
/// 4 lanes XORs with it. The count is Mula's nibble lookup (VPSHUFB: a 16-entry table of
/// 4-bit popcounts, exact), with both operands split into low and high nibbles beforehand
/// (x & 0x0f.. and (x >> 4) & 0x0f.., B once per call, A once per block of rows), because
/// the XOR of two split words is already a lookup index: per 64-bit word of 4 columns,
/// 2 XOR + 2 VPSHUFB + 2 VPADDB, where splitting each XOR costs 2 AND and a shift more
/// (measured 1.5x faster on Zen 3, whose VPSHUFB, shifts and broadcasts share two pipes).
/// The byte counters take at most 31 words (31 * 8 = 248 < 256), then VPSADBW sums them
/// per 64-bit lane. A tile is 2 rows x 16 columns (8 byte counters in registers).
///
/// With AVX-512 VPOPCNTDQ the count is one instruction: a 512-bit vector holds word w of 8
/// consecutive columns, and per word XOR, VPOPCNTQ and an add into 64-bit counters give 8
/// columns' counts; a tile is 6 rows x 16 columns. The kernel is chosen at run time
/// (binary_gemm_isa, kernels/cpu_features.hpp); all give the reference's integers.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "../isa_region.hpp"
#include "../parallel.hpp"
#include "../unrolled.hpp"
#include "../binary_gemm.hpp"

namespace xq::kernels {

namespace detail {

/// The number of set bits of a 64-bit word.
inline int popcount64(std::uint64_t x) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_popcountll(x);
#else
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return int((x * 0x0101010101010101ull) >> 56);
#endif
}

}  // namespace detail

XQ_DECL void binary_gemm_reference(std::size_t m, std::size_t n, std::size_t words, std::int32_t k,
                                   const std::uint64_t* a, const std::uint64_t* b, std::int32_t* c) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::int32_t differ = 0;
      for (std::size_t w = 0; w < words; ++w) differ += detail::popcount64(a[i * words + w] ^ b[j * words + w]);
      c[i * n + j] = k - 2 * differ;
    }
}

namespace detail {

/// Rows [i0, i1) of the scalar XNOR-popcount, four columns at a time (each word of A is
/// loaded once for four XORs). The portable kernel, and the AVX2 kernel's row tail.
inline void binary_gemm_rows_popcnt(std::size_t i0, std::size_t i1, std::size_t n, std::size_t words,
                                    std::int32_t k, const std::uint64_t* a, const std::uint64_t* b,
                                    std::int32_t* c) {
  for (std::size_t i = i0; i < i1; ++i) {
    const std::uint64_t* ai = a + i * words;
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const std::uint64_t* b0 = b + j * words;
      std::int32_t d0 = 0, d1 = 0, d2 = 0, d3 = 0;
      for (std::size_t w = 0; w < words; ++w) {
        const std::uint64_t x = ai[w];
        d0 += popcount64(x ^ b0[w]);
        d1 += popcount64(x ^ b0[words + w]);
        d2 += popcount64(x ^ b0[2 * words + w]);
        d3 += popcount64(x ^ b0[3 * words + w]);
      }
      c[i * n + j] = k - 2 * d0;
      c[i * n + j + 1] = k - 2 * d1;
      c[i * n + j + 2] = k - 2 * d2;
      c[i * n + j + 3] = k - 2 * d3;
    }
    for (; j < n; ++j) {
      std::int32_t d = 0;
      for (std::size_t w = 0; w < words; ++w) d += popcount64(ai[w] ^ b[j * words + w]);
      c[i * n + j] = k - 2 * d;
    }
  }
}

#if XQ_ISA_COMPILED(avx2)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx2)
namespace avx2_binary {

XQ_DEFINE_UNROLLED  // this region's own (kernels/unrolled.hpp says why)

/// Columns per panel of the AVX2 kernel (four vectors of four words), rows per tile.
constexpr std::size_t binary_panel_width = 16, binary_tile_rows = 2;
/// Words a byte counter may take before it is flushed (31 * 8 = 248 < 256).
constexpr std::size_t binary_flush_words = 31;
constexpr std::uint64_t low_nibbles64 = 0x0f0f0f0f0f0f0f0full;

/// B (n rows of `words` words) split into nibbles and packed as panels of 16 columns:
/// panel p, word w: the 16 columns' low nibbles (w & 0x0f.., bit 7 of every byte clear, as
/// VPSHUFB needs its indices) at [(p * words + w) * 32 + j], their high nibbles
/// ((w >> 4) & 0x0f..) at [... + 16 + j]; columns past n all-zero (dropped).
inline std::vector<std::uint64_t> pack_binary_columns(const std::uint64_t* b, std::size_t n, std::size_t words) {
  constexpr std::size_t width = binary_panel_width;
  const std::size_t panels = (n + width - 1) / width;
  std::vector<std::uint64_t> packed(panels * words * 2 * width, 0);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t w = 0; w < words; ++w) {
      const std::uint64_t v = b[j * words + w];
      std::uint64_t* at = packed.data() + ((j / width) * words + w) * 2 * width + j % width;
      at[0] = v & low_nibbles64;
      at[width] = (v >> 4) & low_nibbles64;
    }
  return packed;
}

/// Rows of A split the same way: row r, word w at [(r * words + w) * 2] (low nibbles) and
/// [... + 1] (high).
inline void split_binary_rows(const std::uint64_t* a, std::size_t rows, std::size_t words, std::uint64_t* split) {
  for (std::size_t e = 0; e < rows * words; ++e) {
    split[2 * e] = a[e] & low_nibbles64;
    split[2 * e + 1] = (a[e] >> 4) & low_nibbles64;
  }
}

/// 8 columns' counts (two vectors of 4 x 64-bit VPSADBW lane sums, each < 2^32) as int32
/// in column order.
XQ_ALWAYS_INLINE __m256i column_counts(__m256i low4, __m256i high4) {
  const __m256i interleaved = _mm256_blend_epi32(low4, _mm256_slli_epi64(high4, 32), 0xAA);  // c0 c4 c1 c5 ...
  return _mm256_permutevar8x32_epi32(interleaved, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
}

/// One tile: Rows rows of split A against one panel (16 columns); writes the first `cols`.
/// Per word: the XOR of the low nibbles and of the high nibbles is each a VPSHUFB index
/// as it is (no mask, no shift), so a 64-bit word of 4 columns costs 2 XOR, 2 VPSHUFB and
/// 2 VPADDB.
template <std::size_t Rows>
void binary_tile_avx2(const std::uint64_t* a, std::size_t words, std::int32_t k, const std::uint64_t* panel,
                      std::int32_t* c, std::size_t ldc, std::size_t cols) {
  constexpr std::size_t width = binary_panel_width;
  const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                       0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i zero = _mm256_setzero_si256();
  __m256i counts[Rows][2];  // per row, columns 0-7 and 8-15 as int32
  unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA { counts[r][0] = counts[r][1] = zero; });
  for (std::size_t w0 = 0; w0 < words; w0 += binary_flush_words) {
    const std::size_t w1 = std::min(words, w0 + binary_flush_words);
    __m256i bytes[Rows][4];
    unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA { unrolled<4>([&](auto v) XQ_INLINE_LAMBDA { bytes[r][v] = zero; }); });
    for (std::size_t w = w0; w < w1; ++w) {
      const auto* bp = reinterpret_cast<const __m256i*>(panel + w * 2 * width);
      unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA {
        const __m256i lo = _mm256_set1_epi64x(static_cast<long long>(a[(r * words + w) * 2]));
        const __m256i hi = _mm256_set1_epi64x(static_cast<long long>(a[(r * words + w) * 2 + 1]));
        unrolled<4>([&](auto v) XQ_INLINE_LAMBDA {
          const __m256i pl = _mm256_shuffle_epi8(lut, _mm256_xor_si256(lo, _mm256_loadu_si256(bp + v)));
          const __m256i ph = _mm256_shuffle_epi8(lut, _mm256_xor_si256(hi, _mm256_loadu_si256(bp + 4 + v)));
          bytes[r][v] = _mm256_add_epi8(bytes[r][v], _mm256_add_epi8(pl, ph));
        });
      });
    }
    unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA {
      counts[r][0] = _mm256_add_epi32(counts[r][0], column_counts(_mm256_sad_epu8(bytes[r][0], zero),
                                                                  _mm256_sad_epu8(bytes[r][1], zero)));
      counts[r][1] = _mm256_add_epi32(counts[r][1], column_counts(_mm256_sad_epu8(bytes[r][2], zero),
                                                                  _mm256_sad_epu8(bytes[r][3], zero)));
    });
  }
  const __m256i kv = _mm256_set1_epi32(k);
  unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA {
    const __m256i r0 = _mm256_sub_epi32(kv, _mm256_add_epi32(counts[r][0], counts[r][0]));  // k - 2 * differ
    const __m256i r1 = _mm256_sub_epi32(kv, _mm256_add_epi32(counts[r][1], counts[r][1]));
    if (cols == width) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), r0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), r1);
    } else {
      alignas(32) std::int32_t row[width];
      _mm256_store_si256(reinterpret_cast<__m256i*>(row), r0);
      _mm256_store_si256(reinterpret_cast<__m256i*>(row + 8), r1);
      std::memcpy(c + r * ldc, row, cols * sizeof(std::int32_t));
    }
  });
}

inline void binary_gemm_rows_avx2(std::size_t i0, std::size_t i1, std::size_t n, std::size_t words, std::int32_t k,
                                  const std::uint64_t* a, const std::uint64_t* packed, std::int32_t* c) {
  constexpr std::size_t tile = binary_tile_rows, width = binary_panel_width;
  const std::size_t panels = (n + width - 1) / width;
  // Blocks of rows whose split A (16 bytes a word) stays in L1 while every panel passes.
  const std::size_t block =
      std::max<std::size_t>(tile, (std::size_t(16) << 10) / (16 * std::max<std::size_t>(words, 1)) / tile * tile);
  std::vector<std::uint64_t> split(std::min(block, i1 - i0) * words * 2);
  for (std::size_t ib = i0; ib < i1; ib += block) {
    const std::size_t ie = std::min(i1, ib + block);
    split_binary_rows(a + ib * words, ie - ib, words, split.data());
    for (std::size_t p = 0; p < panels; ++p) {
      const std::uint64_t* panel = packed + p * words * 2 * width;
      const std::size_t j = p * width, cols = std::min(width, n - j);
      std::size_t i = ib;
      for (; i + tile <= ie; i += tile)
        binary_tile_avx2<tile>(split.data() + (i - ib) * words * 2, words, k, panel, c + i * n + j, n, cols);
      if (i < ie) binary_tile_avx2<1>(split.data() + (i - ib) * words * 2, words, k, panel, c + i * n + j, n, cols);
    }
  }
}

}  // namespace avx2_binary
XQ_ISA_REGION_END
#endif

#if XQ_ISA_COMPILED(avx512_vpopcntdq)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx512_vpopcntdq)
namespace avx512_binary {

XQ_DEFINE_UNROLLED  // this region's own (kernels/unrolled.hpp says why)

/// Columns per vector (8 words of 64 bits), vectors per tile row, rows per tile.
constexpr std::size_t lanes = 8, vectors = 2, tile_rows = 6, width = lanes * vectors;

/// B (n rows of `words` words) as panels of 8 columns: panel p, word w at
/// [(p * words + w) * 8 + j]; columns past n all-zero (dropped).
inline std::vector<std::uint64_t> pack_columns(const std::uint64_t* b, std::size_t n, std::size_t words) {
  const std::size_t panels = (n + lanes - 1) / lanes;
  std::vector<std::uint64_t> packed(panels * words * lanes, 0);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t w = 0; w < words; ++w) packed[((j / lanes) * words + w) * lanes + j % lanes] = b[j * words + w];
  return packed;
}

/// Rows x `Vectors` panels: per word, a broadcast of A's word, then XOR, VPOPCNTQ and a
/// 64-bit add per panel. Writes the first `cols` columns of each row.
template <std::size_t Rows, std::size_t Vectors>
void tile(const std::uint64_t* const* a, std::size_t words, std::int32_t k, const std::uint64_t* panels,
          std::int32_t* c, std::size_t ldc, std::size_t cols) {
  __m512i counts[Rows][Vectors];
  unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA { unrolled<Vectors>([&](auto v) XQ_INLINE_LAMBDA { counts[r][v] = _mm512_setzero_si512(); }); });
  const std::size_t panel_words = words * lanes;
  for (std::size_t w = 0; w < words; ++w) {
    __m512i bv[Vectors];
    unrolled<Vectors>([&](auto v) XQ_INLINE_LAMBDA { bv[v] = _mm512_loadu_si512(panels + v * panel_words + w * lanes); });
    unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA {
      const __m512i x = _mm512_set1_epi64(static_cast<long long>(a[r][w]));
      unrolled<Vectors>([&](auto v) XQ_INLINE_LAMBDA {
        counts[r][v] = _mm512_add_epi64(counts[r][v], _mm512_popcnt_epi64(_mm512_xor_si512(x, bv[v])));
      });
    });
  }
  const __m256i kv = _mm256_set1_epi32(k);
  unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA {
    unrolled<Vectors>([&](auto v) XQ_INLINE_LAMBDA {
      const std::size_t first = v * lanes;
      if (first >= cols) return;
      const __m256i differ = _mm512_cvtepi64_epi32(counts[r][v]);  // each count <= 64 * words < 2^31
      const __m256i out = _mm256_sub_epi32(kv, _mm256_add_epi32(differ, differ));  // k - 2 * differ
      _mm256_mask_storeu_epi32(c + r * ldc + first, __mmask8((1u << std::min(lanes, cols - first)) - 1u), out);
    });
  });
}

/// Rows [i0, i1) of C, panel pair by panel pair.
inline void rows(std::size_t i0, std::size_t i1, std::size_t n, std::size_t words, std::int32_t k,
                 const std::uint64_t* a, const std::uint64_t* packed, std::int32_t* c) {
  const std::size_t panels = (n + lanes - 1) / lanes;
  for (std::size_t p = 0; p < panels; p += vectors) {
    const std::uint64_t* panel = packed + p * words * lanes;
    const std::size_t j = p * lanes, cols = std::min(width, n - j);
    const bool whole = p + vectors <= panels;
    std::size_t i = i0;
    const std::uint64_t* rows_at[tile_rows];
    for (; i + tile_rows <= i1; i += tile_rows) {
      for (std::size_t r = 0; r < tile_rows; ++r) rows_at[r] = a + (i + r) * words;
      if (whole)
        tile<tile_rows, vectors>(rows_at, words, k, panel, c + i * n + j, n, cols);
      else
        tile<tile_rows, 1>(rows_at, words, k, panel, c + i * n + j, n, cols);
    }
    for (; i < i1; ++i) {
      rows_at[0] = a + i * words;
      if (whole)
        tile<1, vectors>(rows_at, words, k, panel, c + i * n + j, n, cols);
      else
        tile<1, 1>(rows_at, words, k, panel, c + i * n + j, n, cols);
    }
  }
}

}  // namespace avx512_binary
XQ_ISA_REGION_END
#endif

}  // namespace detail

XQ_DECL kernels::cpu_isa binary_gemm_isa() noexcept {
  using kernels::cpu_isa;
  using kernels::isa_usable;
  if (XQ_ISA_COMPILED(avx512_vpopcntdq) && isa_usable(cpu_isa::avx512_vpopcntdq)) return cpu_isa::avx512_vpopcntdq;
  if (XQ_ISA_COMPILED(avx2) && isa_usable(cpu_isa::avx2)) return cpu_isa::avx2;
  return cpu_isa::portable;
}

XQ_DECL void binary_gemm(std::size_t m, std::size_t n, std::size_t words, std::int32_t k, const std::uint64_t* a,
                         const std::uint64_t* b, std::int32_t* c) {
  if (m == 0 || n == 0) return;
  // Threads over fixed blocks of rows for enough work; each entry is computed the same
  // way whatever the split (and integers are exact anyway).
  constexpr std::size_t block = 64;
  const std::size_t blocks = (m + block - 1) / block;
  const bool worth_it = double(m) * double(n) * double(words) >= double(XQ_BINARY_GEMM_PARALLEL_THRESHOLD);
  const int threads = worth_it && blocks > 1 ? kernels::max_threads() : 1;
  const kernels::cpu_isa isa = binary_gemm_isa();
#if XQ_ISA_COMPILED(avx512_vpopcntdq)
  if (isa == kernels::cpu_isa::avx512_vpopcntdq) {
    const std::vector<std::uint64_t> packed = detail::avx512_binary::pack_columns(b, n, words);
    kernels::parallel_chunks(threads, blocks, 1, [&](std::size_t b0, std::size_t b1) {
      detail::avx512_binary::rows(b0 * block, std::min(m, b1 * block), n, words, k, a, packed.data(), c);
    });
    return;
  }
#endif
#if XQ_ISA_COMPILED(avx2)
  if (isa == kernels::cpu_isa::avx2) {
    const std::vector<std::uint64_t> packed = detail::avx2_binary::pack_binary_columns(b, n, words);
    kernels::parallel_chunks(threads, blocks, 1, [&](std::size_t b0, std::size_t b1) {
      detail::avx2_binary::binary_gemm_rows_avx2(b0 * block, std::min(m, b1 * block), n, words, k, a, packed.data(), c);
    });
    return;
  }
#endif
  (void)isa;
  kernels::parallel_chunks(threads, blocks, 1, [&](std::size_t b0, std::size_t b1) {
    detail::binary_gemm_rows_popcnt(b0 * block, std::min(m, b1 * block), n, words, k, a, b, c);
  });
}

}  // namespace xq::kernels
