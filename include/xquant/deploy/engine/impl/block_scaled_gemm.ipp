#pragma once
/// \file block_scaled_gemm.ipp
/// The integer engine's block-scaled product (deploy/engine/block_scaled_gemm.hpp).
///
/// The packed layout: N cut into panels of 16 columns (the last one padded with zero
/// columns), K padded with zero rows to whole groups; panel after panel, and in a panel,
/// for each group of 4 consecutive k, the 16 columns' 4 values side by side:
///
///   int8:   data[panel * panel_bytes + g * 64 + 4 * j + r]       = w[4g + r][16 panel + j]
///   4-bit:  data[panel * panel_bytes + h * 64 + 4 * j + r]       low nibble:  code of w[8h + r][16 panel + j]
///                                                                high nibble: code of w[8h + 4 + r][16 panel + j]
///
/// so one 32-bit broadcast of a[i][4g..4g+3] and the group's 64 bytes give VPDPBUSD the
/// four products of each of 16 columns, summed into that column's int32 lane. The 4-bit
/// kinds put two groups in the two nibbles of the same 64 bytes rather than adjacent k in
/// one byte (the order of torchao's files, which from_nibbles reads): then decoding is an
/// AND, a shift and two table lookups (VPSHUFB) per 128 values, with no interleaving
/// across lanes. The table maps a nibble to the integer it codes (int4: two's complement;
/// E2M1: 2 x its value), which is how int4 and FP4 share one kernel.
///
/// A tile keeps Rows x 16 int32 accumulators for one block of K, then folds them into Rows
/// x 16 float accumulators in the header's order (D = S - za * colsum; s = sa * sb; acc =
/// fma(s, float(D), acc)) and starts the next block from zero. Every block's integers are
/// exact (|D| < 2^24), so every path's int32 are the oracle's, and every path does the same
/// float operations in the same order: the same bits.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "../../../kernels/isa_region.hpp"
#include "../../../kernels/parallel.hpp"
#include "../../../kernels/unrolled.hpp"
#include "../block_scaled_gemm.hpp"

namespace xq::deploy {

namespace detail {

/// The integer each 4-bit code stands for: int4 two's complement, and E2M1 times two
/// (codes 0..7: 0, 0.5, 1, 1.5, 2, 3, 4, 6; bit 3 the sign; -0 is 0).
alignas(16) inline constexpr std::int8_t int4_table[16] = {0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1};
alignas(16) inline constexpr std::int8_t e2m1_x2_table[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

inline const std::int8_t* block_element_table(block_element kind) noexcept {
  return kind == block_element::fp4_e2m1 ? e2m1_x2_table : int4_table;
}

inline const char* block_element_name(block_element kind) noexcept {
  switch (kind) {
    case block_element::int4: return "int4";
    case block_element::fp4_e2m1: return "fp4_e2m1";
    default: return "int8";
  }
}

/// The 4-bit code of v, or -1 when the kind has none.
inline int block_element_code(block_element kind, int v) noexcept {
  if (v == 0) return 0;
  const std::int8_t* table = block_element_table(kind);
  for (int c = 1; c < 16; ++c)
    if (table[c] == v) return c;
  return -1;
}


/// a[0..count) (count < 4 at the end of K) as the low bytes of an int32, the rest zero:
/// the padded rows of W are zero, but a must not be read past its end.
XQ_ALWAYS_INLINE std::int32_t load_codes4(const std::uint8_t* a, std::size_t count) {
  std::int32_t v = 0;
  std::memcpy(&v, a, count);
  return v;
}
XQ_ALWAYS_INLINE std::int32_t load_codes4(const std::uint8_t* a) {
  std::int32_t v;
  std::memcpy(&v, a, 4);
  return v;
}

// ---- one policy per mechanism: accumulate 16 columns x 4 k, fold a block into floats ----
// Each in its own namespace and ISA region with the tile (block_scaled_tile.ipp); the
// kernel is chosen at run time (block_scaled_gemm_isa). A policy has tile_rows, acc_type,
// weights_type, decoder, zero(), load_s8(), load_s4(), dot() and fold().

/// Rows per block of the threaded split: a block's rows of A are read once per panel, so
/// they should stay in L1/L2 (64 rows of K = 512 codes: 32 KiB).
constexpr std::size_t block_scaled_block_rows = 64;

#if XQ_ISA_COMPILED(avx512_vnni)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx512_vnni)
namespace block_scaled_avx512_vnni {
/// AVX-512 VNNI: one zmm of 16 int32 per row; VPDPBUSD (u8 x s8, four products per lane,
/// added without saturation: VPDPBUSDS is the saturating one).
struct policy {
  static constexpr std::size_t tile_rows = 8;
  using acc_type = __m512i;
  using weights_type = __m512i;
  struct decoder {
    __m512i table, low;
    explicit decoder(const std::int8_t* t)
        : table(_mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t)))),
          low(_mm512_set1_epi8(0x0F)) {}
  };
  static XQ_ALWAYS_INLINE acc_type zero() { return _mm512_setzero_si512(); }
  static XQ_ALWAYS_INLINE weights_type load_s8(const std::uint8_t* p) { return _mm512_loadu_si512(p); }
  static XQ_ALWAYS_INLINE void load_s4(const decoder& d, const std::uint8_t* p, weights_type& lo, weights_type& hi) {
    const __m512i x = _mm512_loadu_si512(p);
    lo = _mm512_shuffle_epi8(d.table, _mm512_and_si512(x, d.low));
    hi = _mm512_shuffle_epi8(d.table, _mm512_and_si512(_mm512_srli_epi16(x, 4), d.low));
  }
  static XQ_ALWAYS_INLINE void dot(acc_type& s, std::int32_t a4, const weights_type& w) {
    s = _mm512_dpbusd_epi32(s, _mm512_set1_epi32(a4), w);
  }
  static XQ_ALWAYS_INLINE void fold(const acc_type& s, std::int32_t za, const std::int32_t* colsum, float sa,
                                    const float* sb, float* acc) {
    const __m512i d = _mm512_sub_epi32(s, _mm512_mullo_epi32(_mm512_set1_epi32(za), _mm512_loadu_si512(colsum)));
    const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(sa), _mm512_loadu_ps(sb));
    _mm512_storeu_ps(acc, _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(d), _mm512_loadu_ps(acc)));
  }
};
#include "block_scaled_tile.ipp"
}  // namespace block_scaled_avx512_vnni
XQ_ISA_REGION_END
#endif

#if XQ_ISA_COMPILED(avx_vnni)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx_vnni)
namespace block_scaled_avx_vnni {
/// AVX-VNNI: two ymm of 8 int32 per row; the VEX VPDPBUSD.
struct policy {
  static constexpr std::size_t tile_rows = 4;
  struct acc_type { __m256i v[2]; };
  struct weights_type { __m256i v[2]; };
  struct decoder {
    __m256i table, low;
    explicit decoder(const std::int8_t* t)
        : table(_mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t)))),
          low(_mm256_set1_epi8(0x0F)) {}
  };
  static XQ_ALWAYS_INLINE acc_type zero() { return {{_mm256_setzero_si256(), _mm256_setzero_si256()}}; }
  static XQ_ALWAYS_INLINE weights_type load_s8(const std::uint8_t* p) {
    return {{_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32))}};
  }
  static XQ_ALWAYS_INLINE void load_s4(const decoder& d, const std::uint8_t* p, weights_type& lo, weights_type& hi) {
    for (int q = 0; q < 2; ++q) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * q));
      lo.v[q] = _mm256_shuffle_epi8(d.table, _mm256_and_si256(x, d.low));
      hi.v[q] = _mm256_shuffle_epi8(d.table, _mm256_and_si256(_mm256_srli_epi16(x, 4), d.low));
    }
  }
  static XQ_ALWAYS_INLINE void dot(acc_type& s, std::int32_t a4, const weights_type& w) {
    const __m256i x = _mm256_set1_epi32(a4);
    s.v[0] = _mm256_dpbusd_avx_epi32(s.v[0], x, w.v[0]);
    s.v[1] = _mm256_dpbusd_avx_epi32(s.v[1], x, w.v[1]);
  }
  static XQ_ALWAYS_INLINE void fold(const acc_type& s, std::int32_t za, const std::int32_t* colsum, float sa,
                                    const float* sb, float* acc) {
    const __m256i z = _mm256_set1_epi32(za);
    const __m256 a = _mm256_set1_ps(sa);
    for (int q = 0; q < 2; ++q) {
      const __m256i cs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(colsum + 8 * q));
      const __m256i d = _mm256_sub_epi32(s.v[q], _mm256_mullo_epi32(z, cs));
      const __m256 scale = _mm256_mul_ps(a, _mm256_loadu_ps(sb + 8 * q));
      _mm256_storeu_ps(acc + 8 * q, _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(d), _mm256_loadu_ps(acc + 8 * q)));
    }
  }
};
#include "block_scaled_tile.ipp"
}  // namespace block_scaled_avx_vnni
XQ_ISA_REGION_END
#endif

#if XQ_ISA_COMPILED(avx2)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx2)
namespace block_scaled_avx2 {
/// AVX2 without VNNI: the weights sign-extended to int16 and the codes zero-extended, then
/// VPMADDWD (exact products, exact int32 pair sums). Not VPMADDUBSW: it would take the u8
/// and s8 directly, but its int16 pair sums saturate (2 x 255 x 128 = 65280 > 32767),
/// the error of onnxruntime's and oneDNN's non-VNNI int8 kernels. Each row keeps 4 ymm of
/// half sums (k 0+1 and k 2+3 of each group, per column), added pairwise (VPHADDD, which
/// wraps like every other add here) once per block.
struct policy {
  static constexpr std::size_t tile_rows = 2;
  struct acc_type { __m256i v[4]; };
  struct weights_type { __m256i v[4]; };
  struct decoder {
    __m256i table, low;
    explicit decoder(const std::int8_t* t)
        : table(_mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t)))),
          low(_mm256_set1_epi8(0x0F)) {}
  };
  static XQ_ALWAYS_INLINE acc_type zero() {
    const __m256i z = _mm256_setzero_si256();
    return {{z, z, z, z}};
  }
  /// 64 int8 (16 columns x 4 k) as 4 ymm of int16: columns 4q..4q+3 in v[q].
  static XQ_ALWAYS_INLINE void widen(__m256i x0, __m256i x1, weights_type& w) {
    w.v[0] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(x0));
    w.v[1] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(x0, 1));
    w.v[2] = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(x1));
    w.v[3] = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(x1, 1));
  }
  static XQ_ALWAYS_INLINE weights_type load_s8(const std::uint8_t* p) {
    weights_type w;
    widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)), w);
    return w;
  }
  static XQ_ALWAYS_INLINE void load_s4(const decoder& d, const std::uint8_t* p, weights_type& lo, weights_type& hi) {
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    widen(_mm256_shuffle_epi8(d.table, _mm256_and_si256(x0, d.low)),
          _mm256_shuffle_epi8(d.table, _mm256_and_si256(x1, d.low)), lo);
    widen(_mm256_shuffle_epi8(d.table, _mm256_and_si256(_mm256_srli_epi16(x0, 4), d.low)),
          _mm256_shuffle_epi8(d.table, _mm256_and_si256(_mm256_srli_epi16(x1, 4), d.low)), hi);
  }
  static XQ_ALWAYS_INLINE void dot(acc_type& s, std::int32_t a4, const weights_type& w) {
    // The four codes as int16 a0 a1 a2 a3, repeated: VPMADDWD pairs (a0, a1) with k 0, 1
    // and (a2, a3) with k 2, 3 of each column.
    const std::uint32_t u = std::uint32_t(a4);
    const std::uint64_t a16 = std::uint64_t(u & 0xFF) | (std::uint64_t((u >> 8) & 0xFF) << 16) |
                              (std::uint64_t((u >> 16) & 0xFF) << 32) | (std::uint64_t(u >> 24) << 48);
    const __m256i x = _mm256_set1_epi64x(static_cast<long long>(a16));
    for (int q = 0; q < 4; ++q) s.v[q] = _mm256_add_epi32(s.v[q], _mm256_madd_epi16(x, w.v[q]));
  }
  static XQ_ALWAYS_INLINE void fold(const acc_type& s, std::int32_t za, const std::int32_t* colsum, float sa,
                                    const float* sb, float* acc) {
    const __m256i z = _mm256_set1_epi32(za);
    const __m256 a = _mm256_set1_ps(sa);
    for (int q = 0; q < 2; ++q) {
      // hadd of columns 8q..8q+3 and 8q+4..8q+7 gives c0 c1 c4 c5 | c2 c3 c6 c7.
      const __m256i sums =
          _mm256_permute4x64_epi64(_mm256_hadd_epi32(s.v[2 * q], s.v[2 * q + 1]), _MM_SHUFFLE(3, 1, 2, 0));
      const __m256i cs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(colsum + 8 * q));
      const __m256i d = _mm256_sub_epi32(sums, _mm256_mullo_epi32(z, cs));
      const __m256 scale = _mm256_mul_ps(a, _mm256_loadu_ps(sb + 8 * q));
      _mm256_storeu_ps(acc + 8 * q, _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(d), _mm256_loadu_ps(acc + 8 * q)));
    }
  }
};
#include "block_scaled_tile.ipp"
}  // namespace block_scaled_avx2
XQ_ISA_REGION_END
#endif

namespace block_scaled_portable {
/// Portable: plain int32 loops on the packed panel (compilers vectorize the 16 columns).
struct policy {
  static constexpr std::size_t tile_rows = 4;
  struct acc_type { std::int32_t v[16]; };
  struct weights_type { std::int8_t v[64]; };
  struct decoder {
    const std::int8_t* table;
    explicit decoder(const std::int8_t* t) : table(t) {}
  };
  static acc_type zero() { return acc_type{}; }
  static weights_type load_s8(const std::uint8_t* p) {
    weights_type w;
    std::memcpy(w.v, p, 64);
    return w;
  }
  static void load_s4(const decoder& d, const std::uint8_t* p, weights_type& lo, weights_type& hi) {
    for (int t = 0; t < 64; ++t) {
      lo.v[t] = d.table[p[t] & 0x0F];
      hi.v[t] = d.table[p[t] >> 4];
    }
  }
  static void dot(acc_type& s, std::int32_t a4, const weights_type& w) {
    const std::uint32_t u = std::uint32_t(a4);
    const std::int32_t a0 = std::int32_t(u & 0xFF), a1 = std::int32_t((u >> 8) & 0xFF),
                       a2 = std::int32_t((u >> 16) & 0xFF), a3 = std::int32_t(u >> 24);
    for (int j = 0; j < 16; ++j)
      s.v[j] += a0 * w.v[4 * j] + a1 * w.v[4 * j + 1] + a2 * w.v[4 * j + 2] + a3 * w.v[4 * j + 3];
  }
  static void fold(const acc_type& s, std::int32_t za, const std::int32_t* colsum, float sa, const float* sb,
                   float* acc) {
    for (int j = 0; j < 16; ++j) {
      const float scale = sa * sb[j];
      acc[j] = std::fma(scale, static_cast<float>(s.v[j] - za * colsum[j]), acc[j]);
    }
  }
};
#include "block_scaled_tile.ipp"
}  // namespace block_scaled_portable

}  // namespace detail

XQ_DECL packed_block_scaled_matrix::packed_block_scaled_matrix(const std::int8_t* w, std::size_t k, std::size_t n,
                                                               block_element kind, std::size_t block,
                                                               const float* sb, int scale_bits)
    : k_(k), n_(n), block_(block), kind_(kind), scale_bits_(scale_bits) {
  const std::size_t group = kind == block_element::int8 ? 4 : 8;
  if (block == 0 || block % group != 0 || block > max_block)
    throw std::invalid_argument("xquant: packed_block_scaled_matrix: block must be a multiple of " +
                                std::to_string(group) + " (" + detail::block_element_name(kind) + ") in [" +
                                std::to_string(group) + ", " + std::to_string(max_block) + "], got " +
                                std::to_string(block));
  if (scale_bits <= 0)
    throw std::invalid_argument("xquant: packed_block_scaled_matrix: scale_bits must be positive, got " +
                                std::to_string(scale_bits));
  padded_k_ = (k + group - 1) / group * group;
  const std::size_t pn = panels() * panel_width, pb = panel_bytes(), nb = blocks();
  data_.assign(panels() * pb, 0);
  scales_.assign(nb * pn, 0.0f);
  column_sums_.assign(nb * pn, 0);
  for (std::size_t kk = 0; kk < k; ++kk)
    for (std::size_t j = 0; j < n; ++j) {
      const int v = w[kk * n + j];
      const std::size_t panel = j / panel_width, jj = j % panel_width;
      if (kind == block_element::int8) {
        data_[panel * pb + (kk / 4) * 64 + 4 * jj + kk % 4] = static_cast<std::uint8_t>(v);
      } else {
        const int code = detail::block_element_code(kind, v);
        if (code < 0)
          throw std::invalid_argument(std::string("xquant: packed_block_scaled_matrix: w[") + std::to_string(kk) +
                                      "][" + std::to_string(j) + "] = " + std::to_string(v) + " is not a " +
                                      detail::block_element_name(kind) +
                                      (kind == block_element::int4 ? " value (-8..7)"
                                                                   : " value x 2 (0, ±1, ±2, ±3, ±4, ±6, ±8, ±12)"));
        const std::size_t half = (kk % 8) / 4;
        data_[panel * pb + (kk / 8) * 64 + 4 * jj + kk % 4] |= static_cast<std::uint8_t>(code << (4 * half));
      }
      column_sums_[(kk / block) * pn + j] += v;
    }
  for (std::size_t b = 0; b < nb; ++b) std::copy(sb + b * n, sb + b * n + n, scales_.begin() + std::ptrdiff_t(b * pn));
}

XQ_DECL packed_block_scaled_matrix packed_block_scaled_matrix::from_nibbles(const std::uint8_t* nibbles,
                                                                            std::size_t k, std::size_t n,
                                                                            block_element kind, std::size_t block,
                                                                            const float* sb, int scale_bits) {
  if (kind == block_element::int8)
    throw std::invalid_argument("xquant: packed_block_scaled_matrix::from_nibbles: the kind must be int4 or "
                                "fp4_e2m1, got int8");
  const std::int8_t* table = detail::block_element_table(kind);
  const std::size_t row_bytes = (k + 1) / 2;
  std::vector<std::int8_t> w(k * n);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t kk = 0; kk < k; ++kk) {
      const std::uint8_t byte = nibbles[j * row_bytes + kk / 2];
      w[kk * n + j] = table[kk % 2 ? byte >> 4 : byte & 0x0F];
    }
  return packed_block_scaled_matrix(w.data(), k, n, kind, block, sb, scale_bits);
}

XQ_DECL std::int32_t packed_block_scaled_matrix::value(std::size_t k, std::size_t j) const {
  if (k >= k_ || j >= n_)
    throw std::out_of_range("xquant: packed_block_scaled_matrix::value: (" + std::to_string(k) + ", " +
                            std::to_string(j) + ") is outside " + std::to_string(k_) + " x " + std::to_string(n_));
  const std::size_t panel = j / panel_width, jj = j % panel_width;
  const std::uint8_t* p = data_.data() + panel * panel_bytes();
  if (kind_ == block_element::int8) return static_cast<std::int8_t>(p[(k / 4) * 64 + 4 * jj + k % 4]);
  const std::uint8_t byte = p[(k / 8) * 64 + 4 * jj + k % 4];
  return detail::block_element_table(kind_)[(k % 8) / 4 ? byte >> 4 : byte & 0x0F];
}

XQ_DECL std::vector<std::int8_t> packed_block_scaled_matrix::unpack() const {
  std::vector<std::int8_t> w(k_ * n_);
  for (std::size_t k = 0; k < k_; ++k)
    for (std::size_t j = 0; j < n_; ++j) w[k * n_ + j] = static_cast<std::int8_t>(value(k, j));
  return w;
}

XQ_DECL std::size_t packed_block_scaled_matrix::storage_bytes() const noexcept {
  const std::size_t code_bits = k_ * n_ * std::size_t(element_bits(kind_));
  const std::size_t scale_bits = blocks() * n_ * std::size_t(scale_bits_);
  return (code_bits + 7) / 8 + (scale_bits + 7) / 8;
}

XQ_DECL double packed_block_scaled_matrix::bits_per_value() const noexcept {
  return k_ * n_ != 0 ? 8.0 * double(storage_bytes()) / double(k_ * n_) : 0.0;
}

XQ_DECL std::size_t packed_block_scaled_matrix::resident_bytes() const noexcept {
  return data_.size() + scales_.size() * sizeof(float) + column_sums_.size() * sizeof(std::int32_t);
}

XQ_DECL void block_scaled_gemm_reference(std::size_t m, std::size_t n, std::size_t k, std::size_t block,
                                         const block_scaled_activations& a, const std::int8_t* w, const float* sb,
                                         float* c) {
  const std::size_t blocks = block ? (k + block - 1) / block : 0;
  for (std::size_t i = 0; i < m; ++i) {
    const std::uint8_t* row = a.codes + i * a.ld;
    const std::int32_t za = a.zero_points ? a.zero_points[i] : 0;
    for (std::size_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t k0 = b * block, k1 = std::min(k, k0 + block);
        std::int32_t s = 0, colsum = 0;
        for (std::size_t kk = k0; kk < k1; ++kk) {
          s += std::int32_t(row[kk]) * std::int32_t(w[kk * n + j]);
          colsum += w[kk * n + j];
        }
        const float scale = a.scales[i * a.scale_row_stride + b * a.scale_block_stride] * sb[b * n + j];
        acc = std::fma(scale, static_cast<float>(s - za * colsum), acc);
      }
      c[i * n + j] = acc;
    }
  }
}

XQ_DECL kernels::cpu_isa block_scaled_gemm_isa() noexcept {
  using kernels::cpu_isa;
  using kernels::isa_usable;
  if (XQ_ISA_COMPILED(avx512_vnni) && isa_usable(cpu_isa::avx512_vnni)) return cpu_isa::avx512_vnni;
  if (XQ_ISA_COMPILED(avx_vnni) && isa_usable(cpu_isa::avx_vnni)) return cpu_isa::avx_vnni;
  if (XQ_ISA_COMPILED(avx2) && isa_usable(cpu_isa::avx2)) return cpu_isa::avx2;
  return cpu_isa::portable;
}

XQ_DECL void block_scaled_gemm(std::size_t m, const block_scaled_activations& a, const packed_block_scaled_matrix& w,
                               float* c) {
  const std::size_t n = w.cols(), k = w.rows();
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, 0.0f);
    return;
  }
  if (!a.codes || !a.scales)
    throw std::invalid_argument("xquant: block_scaled_gemm: the activations need codes and scales, got null");
  if (m > 1 && a.ld < k)
    throw std::invalid_argument("xquant: block_scaled_gemm: the activations' rows must be at least K = " +
                                std::to_string(k) + " codes apart, got ld = " + std::to_string(a.ld));
  if (a.zero_points)
    for (std::size_t i = 0; i < m; ++i)
      if (a.zero_points[i] < 0 || a.zero_points[i] > 255)
        throw std::invalid_argument("xquant: block_scaled_gemm: zero point of row " + std::to_string(i) +
                                    " must be in [0, 255] (a uint8 code), got " +
                                    std::to_string(a.zero_points[i]));
  // Threads over (row block, panel) items, only for enough work (integer_gemm.hpp's
  // threshold); every entry of C is computed by one tile the same way whatever the split.
  const std::size_t row_blocks = (m + detail::block_scaled_block_rows - 1) / detail::block_scaled_block_rows;
  const std::size_t items = row_blocks * w.panels();
  const bool worth_it = double(m) * double(n) * double(k) >= double(XQ_INTEGER_GEMM_PARALLEL_THRESHOLD);
  const int threads = worth_it && items > 1 ? kernels::max_threads() : 1;
  const kernels::cpu_isa isa = block_scaled_gemm_isa();
  kernels::parallel_chunks(threads, items, 1, [&](std::size_t t0, std::size_t t1) {
#if XQ_ISA_COMPILED(avx512_vnni)
    if (isa == kernels::cpu_isa::avx512_vnni) return detail::block_scaled_avx512_vnni::block_scaled_gemm_items(t0, t1, m, a, w, c);
#endif
#if XQ_ISA_COMPILED(avx_vnni)
    if (isa == kernels::cpu_isa::avx_vnni) return detail::block_scaled_avx_vnni::block_scaled_gemm_items(t0, t1, m, a, w, c);
#endif
#if XQ_ISA_COMPILED(avx2)
    if (isa == kernels::cpu_isa::avx2) return detail::block_scaled_avx2::block_scaled_gemm_items(t0, t1, m, a, w, c);
#endif
    (void)isa;
    detail::block_scaled_portable::block_scaled_gemm_items(t0, t1, m, a, w, c);
  });
}

}  // namespace xq::deploy
