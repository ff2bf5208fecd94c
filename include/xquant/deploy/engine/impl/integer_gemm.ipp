#pragma once
/// \file integer_gemm.ipp
/// The integer engine's matrix products (deploy/engine/integer_gemm.hpp): the packing, one
/// tile body (integer_tile.ipp) compiled per instruction set, and the run-time choice.
///
/// Two packed forms of B, both panels of 16 columns cut into 64-byte blocks per group of K:
///
///   int16 pairs  data[(panel * pairs + p) * 32 + 2 * j + r] = B[2p + r][16 * panel + j]
///   int8 quads   quads[(panel * quads + q) * 64 + 4 * j + r] = B[4q + r][16 * panel + j]
///
/// (K padded with zero rows to a whole group). A broadcast of A's pair (int16) or quad (u8)
/// against a block gives VPMADDWD or VPDPBUSD every column's products of the group, exact in
/// int32: VPMADDWD sums two int16 products, VPDPBUSD four u8 x s8 products, both into int32
/// lanes modulo 2^32 (never the saturating VPMADDUBSW / VPDPBUSDS).
///
/// VPDPBUSD multiplies unsigned bytes by signed ones, and A holds centred values q - z in a
/// window of 256 (an 8-bit grid's): the kernel takes u = A - min(A) (in [0, 255]) and
/// corrects with the weights' column sums, sum_k A[k] B[k][j] = sum_k u[k] B[k][j] +
/// min(A) * colsum_j, exact modulo 2^32 and so exact, as the true sum fits int32 (lower()
/// checks it). Where B does not fit int8 or A's values span more than 256, the int16 kernels run.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "../../../core/error.hpp"
#include "../../../kernels/isa_region.hpp"
#include "../../../kernels/parallel.hpp"
#include "../../../kernels/unrolled.hpp"
#include "../integer_gemm.hpp"
#include "../requantize.hpp"  // requantizer::round_float, the fused epilogue's scalar lanes

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
  bool fits_s8 = true;
  for (std::size_t p = 0; p < k; ++p)
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t panel = j / panel_width, jj = j % panel_width;
      data_[(panel * pairs_ + p / 2) * 2 * panel_width + 2 * jj + p % 2] = b[p * n + j];
      fits_s8 = fits_s8 && b[p * n + j] >= -128 && b[p * n + j] <= 127;
    }
  // The int8 form only where a VPDPBUSD kernel can run here (it doubles the weights' memory).
  if (!fits_s8 || !(kernels::cpu().has(kernels::cpu_isa::avx512_vnni) || kernels::cpu().has(kernels::cpu_isa::avx_vnni)))
    return;
  const std::size_t quads_ = quads();
  quads_data_.assign(panels() * quads_ * 4 * panel_width, 0);
  column_sums_.assign(n, 0);
  for (std::size_t p = 0; p < k; ++p)
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t panel = j / panel_width, jj = j % panel_width;
      quads_data_[(panel * quads_ + p / 4) * 4 * panel_width + 4 * jj + p % 4] = std::int8_t(b[p * n + j]);
      column_sums_[j] += b[p * n + j];
    }
}

namespace detail {

XQ_ALWAYS_INLINE std::int32_t load_group(const void* a) {
  std::int32_t v;
  std::memcpy(&v, a, sizeof v);
  return v;
}
XQ_ALWAYS_INLINE std::int32_t load_group(const void* a, std::size_t bytes) {
  std::int32_t v = 0;
  std::memcpy(&v, a, bytes);
  return v;
}

/// The portable kernel: plain int32 arithmetic on the int16 pairs (compilers vectorize the
/// 16 lanes); sums in uint32 wrap as the SIMD kernels' do.
namespace portable_kernels {
struct ops {
  using operand = std::int16_t;
  struct reg {
    std::uint32_t v[16];
  };
  struct areg {
    std::int32_t a0, a1;
  };
  static constexpr std::size_t regs = 1, tile_rows = 4, tile_panels = 1;
  static reg load_w(const std::int8_t* block, std::size_t) {
    reg r;
    for (std::size_t j = 0; j < 16; ++j) {
      std::int16_t w[2];
      std::memcpy(w, block + 4 * j, sizeof w);
      r.v[j] = std::uint32_t(std::uint16_t(w[0])) | (std::uint32_t(std::uint16_t(w[1])) << 16);
    }
    return r;
  }
  static reg load_bias(const std::int32_t* b, std::size_t) {
    reg r;
    for (std::size_t j = 0; j < 16; ++j) r.v[j] = std::uint32_t(b[j]);
    return r;
  }
  static areg broadcast(const operand* a) { return {a[0], a[1]}; }
  static areg broadcast_tail(const operand* a, std::size_t) { return {a[0], 0}; }
  static reg dot(reg acc, areg x, reg w) {
    for (std::size_t j = 0; j < 16; ++j) {
      const std::int32_t w0 = std::int16_t(std::uint16_t(w.v[j] & 0xFFFFu)), w1 = std::int16_t(std::uint16_t(w.v[j] >> 16));
      acc.v[j] += std::uint32_t(x.a0 * w0) + std::uint32_t(x.a1 * w1);
    }
    return acc;
  }
  static void store(std::int32_t* c, const reg& v, std::size_t lanes) {
    for (std::size_t j = 0; j < lanes; ++j) c[j] = std::int32_t(v.v[j]);
  }
  static void store_requantized(std::int16_t* out, const reg& v, const float* m, std::int32_t lo, std::int32_t hi,
                                std::size_t lanes) {
    for (std::size_t j = 0; j < lanes; ++j)
      out[j] = std::int16_t(std::clamp<std::int32_t>(requantizer::round_float(std::int32_t(v.v[j]), m[j]), lo, hi));
  }
};
#include "integer_tile.ipp"
}  // namespace portable_kernels

#if XQ_ISA_COMPILED(avx2)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx2)
/// AVX2: VPMADDWD on int16 pairs, two ymm per panel, 6 x 16 tiles in 12 registers.
namespace avx2_kernels {
struct ops {
  using operand = std::int16_t;
  using reg = __m256i;
  using areg = __m256i;
  static constexpr std::size_t regs = 2, tile_rows = 6, tile_panels = 1;
  static XQ_ALWAYS_INLINE areg broadcast(const operand* a) { return _mm256_set1_epi32(load_group(a)); }
  static XQ_ALWAYS_INLINE areg broadcast_tail(const operand* a, std::size_t n) {
    return _mm256_set1_epi32(load_group(a, 2 * n));
  }
  static XQ_ALWAYS_INLINE reg dot(reg acc, areg x, reg w) { return _mm256_add_epi32(acc, _mm256_madd_epi16(x, w)); }
#include "integer_ops_ymm.ipp"
};
#include "integer_tile.ipp"
}  // namespace avx2_kernels
XQ_ISA_REGION_END
#endif

#if XQ_ISA_COMPILED(avx_vnni)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx_vnni)
/// AVX-VNNI: the VEX VPDPBUSD on u8 quads, two ymm per panel, 6 x 16 tiles.
namespace avx_vnni_kernels {
struct ops {
  using operand = std::uint8_t;
  using reg = __m256i;
  using areg = __m256i;
  static constexpr std::size_t regs = 2, tile_rows = 6, tile_panels = 1;
  static XQ_ALWAYS_INLINE areg broadcast(const operand* a) { return _mm256_set1_epi32(load_group(a)); }
  static XQ_ALWAYS_INLINE areg broadcast_tail(const operand* a, std::size_t n) {
    return _mm256_set1_epi32(load_group(a, n));
  }
  static XQ_ALWAYS_INLINE reg dot(reg acc, areg x, reg w) { return _mm256_dpbusd_avx_epi32(acc, x, w); }
#include "integer_ops_ymm.ipp"
};
/// The smallest and largest of a[0..n) (into lo and hi, which hold a start value).
inline void value_range(const std::int16_t* a, std::size_t n, std::int32_t& lo, std::int32_t& hi) {
  std::size_t i = 0;
  if (n >= 16) {
    __m256i vlo = _mm256_set1_epi16(std::int16_t(lo)), vhi = _mm256_set1_epi16(std::int16_t(hi));
    for (; i + 16 <= n; i += 16) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
      vlo = _mm256_min_epi16(vlo, v), vhi = _mm256_max_epi16(vhi, v);
    }
    alignas(32) std::int16_t l[16], h[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(l), vlo);
    _mm256_store_si256(reinterpret_cast<__m256i*>(h), vhi);
    for (int j = 0; j < 16; ++j) lo = std::min<std::int32_t>(lo, l[j]), hi = std::max<std::int32_t>(hi, h[j]);
  }
  for (; i < n; ++i) lo = std::min<std::int32_t>(lo, a[i]), hi = std::max<std::int32_t>(hi, a[i]);
}
/// out[i] = a[i] - lo, for values in [lo, lo + 255].
inline void shift_to_u8(const std::int16_t* a, std::size_t n, std::int32_t lo, std::uint8_t* out) {
  std::size_t i = 0;
  const __m256i shift = _mm256_set1_epi16(std::int16_t(lo));
  for (; i + 16 <= n; i += 16) {
    const __m256i d = _mm256_sub_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i)), shift);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm_packus_epi16(_mm256_castsi256_si128(d), _mm256_extracti128_si256(d, 1)));
  }
  for (; i < n; ++i) out[i] = std::uint8_t(a[i] - lo);
}
#include "integer_tile.ipp"
}  // namespace avx_vnni_kernels
XQ_ISA_REGION_END
#endif

#if XQ_ISA_COMPILED(avx512bw)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx512bw)
/// AVX-512BW: VPMADDWD on int16 pairs, one zmm per panel, 8 rows x 2 panels in 16 registers.
namespace avx512bw_kernels {
struct ops {
  using operand = std::int16_t;
  using reg = __m512i;
  using areg = __m512i;
  static constexpr std::size_t regs = 1, tile_rows = 8, tile_panels = 2;
  static XQ_ALWAYS_INLINE areg broadcast(const operand* a) { return _mm512_set1_epi32(load_group(a)); }
  static XQ_ALWAYS_INLINE areg broadcast_tail(const operand* a, std::size_t n) {
    return _mm512_set1_epi32(load_group(a, 2 * n));
  }
  static XQ_ALWAYS_INLINE reg dot(reg acc, areg x, reg w) { return _mm512_add_epi32(acc, _mm512_madd_epi16(x, w)); }
#include "integer_ops_zmm.ipp"
};
#include "integer_tile.ipp"
}  // namespace avx512bw_kernels
XQ_ISA_REGION_END
#endif

#if XQ_ISA_COMPILED(avx512_vnni)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx512_vnni)
/// AVX-512 VNNI: VPDPBUSD on u8 quads, one zmm per panel, 8 rows x 2 panels.
namespace avx512_vnni_kernels {
struct ops {
  using operand = std::uint8_t;
  using reg = __m512i;
  using areg = __m512i;
  static constexpr std::size_t regs = 1, tile_rows = 8, tile_panels = 2;
  static XQ_ALWAYS_INLINE areg broadcast(const operand* a) { return _mm512_set1_epi32(load_group(a)); }
  static XQ_ALWAYS_INLINE areg broadcast_tail(const operand* a, std::size_t n) {
    return _mm512_set1_epi32(load_group(a, n));
  }
  static XQ_ALWAYS_INLINE reg dot(reg acc, areg x, reg w) { return _mm512_dpbusd_epi32(acc, x, w); }
#include "integer_ops_zmm.ipp"
};
/// The smallest and largest of a[0..n) (into lo and hi, which hold a start value).
inline void value_range(const std::int16_t* a, std::size_t n, std::int32_t& lo, std::int32_t& hi) {
  std::size_t i = 0;
  if (n >= 32) {
    __m512i vlo = _mm512_set1_epi16(std::int16_t(lo)), vhi = _mm512_set1_epi16(std::int16_t(hi));
    for (; i + 32 <= n; i += 32) {
      const __m512i v = _mm512_loadu_si512(a + i);
      vlo = _mm512_min_epi16(vlo, v), vhi = _mm512_max_epi16(vhi, v);
    }
    const __m512i lo32 = _mm512_min_epi32(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(vlo)),
                                          _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(vlo, 1)));
    const __m512i hi32 = _mm512_max_epi32(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(vhi)),
                                          _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(vhi, 1)));
    lo = std::min<std::int32_t>(lo, _mm512_reduce_min_epi32(lo32)), hi = std::max<std::int32_t>(hi, _mm512_reduce_max_epi32(hi32));
  }
  for (; i < n; ++i) lo = std::min<std::int32_t>(lo, a[i]), hi = std::max<std::int32_t>(hi, a[i]);
}
/// out[i] = a[i] - lo, for values in [lo, lo + 255].
inline void shift_to_u8(const std::int16_t* a, std::size_t n, std::int32_t lo, std::uint8_t* out) {
  std::size_t i = 0;
  const __m512i shift = _mm512_set1_epi16(std::int16_t(lo));
  for (; i + 32 <= n; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtepi16_epi8(_mm512_sub_epi16(_mm512_loadu_si512(a + i), shift)));
  for (; i < n; ++i) out[i] = std::uint8_t(a[i] - lo);
}
#include "integer_tile.ipp"
}  // namespace avx512_vnni_kernels
XQ_ISA_REGION_END
#endif

/// Rows per block: a block's rows of A are read once per panel pair of B, so they should
/// stay in L2 (at K = 288: 96 rows are 54 KiB), and there should be blocks enough to share
/// among threads. A multiple of every tile's rows (4, 6, 8).
inline std::size_t gemm_s16_block_rows(std::size_t k) {
  const std::size_t bytes_per_row = 2 * std::max<std::size_t>(k, 1);
  const std::size_t rows = (std::size_t(96) << 10) / bytes_per_row;  // 96 KiB of A
  return std::max<std::size_t>(24, std::min<std::size_t>(rows, 96)) / 24 * 24;
}

}  // namespace detail

XQ_DECL kernels::cpu_isa integer_product_isa(bool int8_weights) noexcept {
  using kernels::cpu_isa;
  using kernels::isa_usable;
  if (int8_weights && XQ_ISA_COMPILED(avx512_vnni) && isa_usable(cpu_isa::avx512_vnni)) return cpu_isa::avx512_vnni;
  if (int8_weights && XQ_ISA_COMPILED(avx_vnni) && isa_usable(cpu_isa::avx_vnni)) return cpu_isa::avx_vnni;
  if (XQ_ISA_COMPILED(avx512bw) && isa_usable(cpu_isa::avx512bw)) return cpu_isa::avx512bw;
  if (XQ_ISA_COMPILED(avx2) && isa_usable(cpu_isa::avx2)) return cpu_isa::avx2;
  return cpu_isa::portable;
}

XQ_DECL void integer_product(kernels::cpu_isa isa, const integer_operand& a, const packed_s16_matrix& b,
                             const std::int32_t* bias, std::int32_t* c, const fused_requantization* rq) {
  using kernels::cpu_isa;
  const std::size_t n = b.cols(), panels = b.panels();
  // A kernel this CPU does not run would stop the program (SIGILL): refused instead.
  if (!kernels::cpu().has(isa))
    throw argument_error("integer_product", "an instruction set this CPU runs (" + kernels::cpu().describe() + ")",
                         kernels::isa_name(isa));
  const bool vnni = isa == cpu_isa::avx512_vnni || isa == cpu_isa::avx_vnni;
  if (bool(a.u8) == bool(a.s16) || vnni != bool(a.u8))
    throw argument_error("integer_product", vnni ? "u8 operands (and only them) for a VPDPBUSD kernel"
                                                 : "int16 operands (and only them) for a VPMADDWD or portable kernel",
                         std::string(a.u8 ? "u8" : "no u8") + " and " + (a.s16 ? "int16" : "no int16") + " rows for " +
                             kernels::isa_name(isa));
  if (a.rows == 0 || n == 0) return;
  if (a.u8) {
    if (!b.has_int8_form())
      throw argument_error("integer_product", "weights with an int8 form for u8 operands (all in [-128, 127])",
                           "weights without one");
    const std::uint8_t* const* rows = a.u8;
    const std::int8_t* w = b.quads_data().data();
    const std::size_t groups = a.groups;
#if XQ_ISA_COMPILED(avx512_vnni)
    if (isa == cpu_isa::avx512_vnni)
      return detail::avx512_vnni_kernels::product_rows(rows, a.rows, a.segments, a.segment_stride, groups, a.tail, w,
                                                       panels, bias, n, c, rq);
#endif
#if XQ_ISA_COMPILED(avx_vnni)
    if (isa == cpu_isa::avx_vnni)
      return detail::avx_vnni_kernels::product_rows(rows, a.rows, a.segments, a.segment_stride, groups, a.tail, w,
                                                    panels, bias, n, c, rq);
#endif
    throw argument_error("integer_product", "a VPDPBUSD kernel compiled in this build", kernels::isa_name(isa));
  }
  const std::int16_t* const* rows = a.s16;
  const auto* w = reinterpret_cast<const std::int8_t*>(b.data().data());
  const std::size_t groups = a.groups;
#if XQ_ISA_COMPILED(avx512bw)
  if (isa == cpu_isa::avx512bw)
    return detail::avx512bw_kernels::product_rows(rows, a.rows, a.segments, a.segment_stride, groups, a.tail, w, panels,
                                                  bias, n, c, rq);
#endif
#if XQ_ISA_COMPILED(avx2)
  if (isa == cpu_isa::avx2)
    return detail::avx2_kernels::product_rows(rows, a.rows, a.segments, a.segment_stride, groups, a.tail, w, panels,
                                              bias, n, c, rq);
#endif
  detail::portable_kernels::product_rows(rows, a.rows, a.segments, a.segment_stride, groups, a.tail, w, panels, bias,
                                         n, c, rq);
}

XQ_DECL void integer_value_range(kernels::cpu_isa isa, const std::int16_t* a, std::size_t n, std::int32_t& lo,
                                 std::int32_t& hi) {
#if XQ_ISA_COMPILED(avx512_vnni)
  if (isa == kernels::cpu_isa::avx512_vnni) return detail::avx512_vnni_kernels::value_range(a, n, lo, hi);
#endif
#if XQ_ISA_COMPILED(avx_vnni)
  if (isa == kernels::cpu_isa::avx_vnni) return detail::avx_vnni_kernels::value_range(a, n, lo, hi);
#endif
  for (std::size_t i = 0; i < n; ++i) lo = std::min<std::int32_t>(lo, a[i]), hi = std::max<std::int32_t>(hi, a[i]);
}

XQ_DECL void shift_to_u8(kernels::cpu_isa isa, const std::int16_t* a, std::size_t n, std::int32_t lo,
                         std::uint8_t* out) {
#if XQ_ISA_COMPILED(avx512_vnni)
  if (isa == kernels::cpu_isa::avx512_vnni) return detail::avx512_vnni_kernels::shift_to_u8(a, n, lo, out);
#endif
#if XQ_ISA_COMPILED(avx_vnni)
  if (isa == kernels::cpu_isa::avx_vnni) return detail::avx_vnni_kernels::shift_to_u8(a, n, lo, out);
#endif
  for (std::size_t i = 0; i < n; ++i) out[i] = std::uint8_t(a[i] - lo);
}

XQ_DECL void gemm_s16(std::size_t m, const std::int16_t* a, std::size_t lda, const packed_s16_matrix& b,
                      const std::int32_t* bias, std::int32_t* c) {
  const std::size_t n = b.cols(), k = b.rows();
  if (m == 0 || n == 0) return;
  kernels::cpu_isa isa = integer_product_isa(b.has_int8_form());
  const bool vnni = isa == kernels::cpu_isa::avx512_vnni || isa == kernels::cpu_isa::avx_vnni;
  // VPDPBUSD's unsigned operand: A - lo, where A's values span at most 256.
  std::int32_t lo = 0, hi = 0;
  if (vnni && k) {
    lo = hi = a[0];
    if (lda == k)
      integer_value_range(isa, a, m * k, lo, hi);
    else
      for (std::size_t i = 0; i < m; ++i) integer_value_range(isa, a + i * lda, k, lo, hi);
    if (hi - lo > 255) isa = integer_product_isa(false);
  }
  const bool unsigned_a = isa == kernels::cpu_isa::avx512_vnni || isa == kernels::cpu_isa::avx_vnni;
  std::vector<std::int32_t> corrected;
  if (unsigned_a) {  // bias + lo * column sums (modulo 2^32, as the kernel's sums)
    corrected.resize(n);
    for (std::size_t j = 0; j < n; ++j)
      corrected[j] = std::int32_t(std::uint32_t(bias ? bias[j] : 0) + std::uint32_t(lo) * std::uint32_t(b.column_sums()[j]));
    bias = corrected.data();
  }
  // Threads over whole blocks of rows, only for enough work (integer_gemm.hpp's threshold);
  // every entry of C is computed by one tile the same way whatever the split.
  const std::size_t block = detail::gemm_s16_block_rows(k), blocks = (m + block - 1) / block;
  const bool worth_it = double(m) * double(n) * double(k) >= double(XQ_INTEGER_GEMM_PARALLEL_THRESHOLD);
  const int threads = worth_it && blocks > 1 ? kernels::max_threads() : 1;
  kernels::parallel_chunks(threads, blocks, 1, [&](std::size_t b0, std::size_t b1) {
    for (std::size_t blk = b0; blk < b1; ++blk) {
      const std::size_t i0 = blk * block, rows = std::min(m, i0 + block) - i0;
      integer_operand op;
      op.rows = rows;
      std::vector<std::uint8_t> shifted;
      std::vector<const std::uint8_t*> u8_starts;
      std::vector<const std::int16_t*> s16_starts;
      if (unsigned_a) {
        const std::size_t stride = 4 * b.quads();
        shifted.assign(rows * stride, 0);
        u8_starts.resize(rows);
        for (std::size_t r = 0; r < rows; ++r) {
          const std::int16_t* src = a + (i0 + r) * lda;
          std::uint8_t* dst = shifted.data() + r * stride;
          shift_to_u8(isa, src, k, lo, dst);
          u8_starts[r] = dst;
        }
        op.u8 = u8_starts.data();
        op.groups = b.quads();
      } else {
        s16_starts.resize(rows);
        for (std::size_t r = 0; r < rows; ++r) s16_starts[r] = a + (i0 + r) * lda;
        op.s16 = s16_starts.data();
        op.groups = b.pairs();
        op.tail = k % 2;
      }
      integer_product(isa, op, b, bias, c + i0 * n);
    }
  });
}

}  // namespace xq::deploy
