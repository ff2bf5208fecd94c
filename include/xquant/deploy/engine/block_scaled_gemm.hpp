#pragma once
/// \file block_scaled_gemm.hpp
/// The integer engine's block-scaled matrix product, for the low-bit formats (torchao's
/// int4 groups under 8da4w, OCP MXFP4, NVFP4): K is cut into blocks of `block` consecutive
/// k (the last one may be short), each block has its own scales, and
///
///   C[i][j] = sum_b  sa[i][b] * sb[b][j] * ( S_b[i][j] - za[i] * colsum_b[j] )
///   S_b[i][j] = sum_{k in b} a[i][k] * w[k][j]        colsum_b[j] = sum_{k in b} w[k][j]
///
/// with S_b, colsum_b and D_b = S_b - za * colsum_b exact int32.
///
/// The operands, chosen so that VNNI's VPDPBUSD (u8 x s8 -> int32, four products summed
/// into an int32 lane, no saturation: the saturating twin is VPDPBUSDS) is exact:
///  - a: uint8 codes. torchao 8da4w's per-token asymmetric int8 q in [-128, 127] with
///    zero point zp is passed as a = q + 128, za = zp + 128 (so a - za = q - zp); a
///    symmetric grid as a = q + 128, za = 128. FP4 (E2M1) activations of NVFP4/MXFP4 W4A4
///    as a = 2 v + 12 (in [0, 24]), za = 12. za[i] must lie in [0, 255].
///  - w: signed integers, one of three element kinds (block_element): int4 (-8..7, two per
///    byte), FP4 E2M1 times two (every E2M1 value times 2 is an integer of {0, ±1, ±2, ±3,
///    ±4, ±6, ±8, ±12}; stored as the 4-bit E2M1 codes, two per byte) and int8. The 4-bit
///    kinds stay 4-bit in memory and are decoded in registers by a 16-entry table lookup
///    (VPSHUFB), so int4 and FP4 run the same kernel with different tables. An FP4 x FP4
///    product is then 4x the true one: the caller folds the 1/4 into sa or sb.
///
/// Exactness and the bound on K: |a - za| <= 255 and |w| <= 128, so |D_b| <= 255 * 128 *
/// block. A block may hold at most 512 k (max_block), so |D_b| <= 16,711,680 < 2^24: every
/// D_b is an exact int32 and converts to float exactly. Nothing bounds K itself: the int32
/// accumulators hold one block at a time and the blocks are summed in float.
///
/// The float order (every path computes exactly this, so all paths give the same bits):
///
///   acc = +0.0f
///   for b = 0, 1, ..., blocks - 1 (ascending):
///     s   = sa[i][b] * sb[b][j]                    one float multiply, rounded
///     acc = fma(s, float(D_b[i][j]), acc)          one fused multiply-add, rounded once
///   C[i][j] = acc
///
/// Why an explicit fma and not acc + s * d: the latter is contracted into an fma or not
/// depending on the compiler's -ffp-contract (GCC contracts under -std=gnu++17, not under
/// -std=c++17), so the scalar oracle's bits would depend on the build flags; an explicit
/// fma is one rounding everywhere (VFMADD on the SIMD paths, std::fma in the scalar ones).
///
/// Paths (chosen at run time, like integer_gemm.hpp: block_scaled_gemm_isa): AVX-512 VNNI
/// /// (`_mm512_dpbusd_epi32`), AVX-VNNI (`_mm256_dpbusd_avx_epi32`), AVX2 (weights
/// sign-extended to int16, VPMADDWD: exact 16-bit products and int32 pair sums; never VPMADDUBSW, whose int16 pair sums saturate at 255 * 128 * 2 > 32767) and a
/// portable loop. Threads (OpenMP) over (block of 64 rows, panel of 16 columns) items when
/// m * n * K >= XQ_INTEGER_GEMM_PARALLEL_THRESHOLD; each entry of C is computed by one tile
/// whatever the split, so the bits do not depend on the thread count.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../../config.hpp"
#include "integer_gemm.hpp"  // XQ_INTEGER_GEMM_PARALLEL_THRESHOLD

namespace xq::deploy {

/// The element kind of a block-scaled weight matrix.
enum class block_element {
  int4,      ///< integers -8..7, two per byte (torchao's int4 groups)
  fp4_e2m1,  ///< FP4 E2M1 values times 2 (integers of {0, ±1, ±2, ±3, ±4, ±6, ±8, ±12}), two E2M1 codes per byte
  int8,      ///< integers -128..127, one per byte (FP4 x 2 stored wide, int8 groups)
};

/// Bits one element of `kind` takes in storage (4 or 8).
inline int element_bits(block_element kind) noexcept { return kind == block_element::int8 ? 8 : 4; }

/// The activations' side: m rows of K uint8 codes, `ld` (>= K) apart; one zero point per row
/// (null: all 0); scale sa[i][b] = scales[i * scale_row_stride + b * scale_block_stride]
/// (per-token activations: row stride 1, block stride 0; per-block: blocks, 1).
struct block_scaled_activations {
  const std::uint8_t* codes = nullptr;
  std::size_t ld = 0;
  const std::int32_t* zero_points = nullptr;
  const float* scales = nullptr;
  std::size_t scale_row_stride = 1;
  std::size_t scale_block_stride = 0;
};

/// A block-scaled weight matrix W (K x N) packed once for the kernel, with its block scales
/// sb[b][j] and column sums colsum_b[j]. The layout (block_scaled_gemm.ipp): panels of 16
/// columns; in a panel, groups of 4 consecutive k, each the 16 columns' 4 values side by
/// side (the operand of VPDPBUSD); 4-bit kinds hold two groups per 64 bytes, group 2h in
/// the low nibbles and group 2h + 1 in the high ones. K is padded with zero rows to a
/// multiple of 4 (int8) or 8 (4-bit), N with zero columns to a multiple of 16.
class packed_block_scaled_matrix {
 public:
  static constexpr std::size_t panel_width = 16;
  /// The largest block: |D_b| <= 255 * 128 * 512 < 2^24 (the header's bound).
  static constexpr std::size_t max_block = 512;

  packed_block_scaled_matrix() = default;
  /// Packs `w` (K x N row-major, the integers the product uses: -8..7 for int4, E2M1 x 2 for
  /// fp4_e2m1, -128..127 for int8) with scales `sb` (blocks x N row-major). `block`: a
  /// multiple of 4 (int8) or 8 (4-bit kinds), at most max_block. `scale_bits`: the width the
  /// caller's format stores a scale in (32: float32; 8: E8M0 or UE4M3), for storage_bytes()
  /// only (the kernel keeps float scales). Throws std::invalid_argument on a value the kind
  /// cannot hold or a bad block.
  XQ_DECL packed_block_scaled_matrix(const std::int8_t* w, std::size_t k, std::size_t n, block_element kind,
                                     std::size_t block, const float* sb, int scale_bits = 32);
  /// Packs a 4-bit matrix given as torchao stores an int4 weight: N rows (output channels)
  /// of ceil(K / 2) bytes, k even in the low nibble, k odd in the high one; each nibble an
  /// int4 two's-complement value (int4) or an E2M1 code (fp4_e2m1).
  XQ_DECL static packed_block_scaled_matrix from_nibbles(const std::uint8_t* nibbles, std::size_t k, std::size_t n,
                                                         block_element kind, std::size_t block, const float* sb,
                                                         int scale_bits = 32);

  std::size_t rows() const noexcept { return k_; }
  std::size_t cols() const noexcept { return n_; }
  std::size_t block() const noexcept { return block_; }
  std::size_t blocks() const noexcept { return block_ ? (k_ + block_ - 1) / block_ : 0; }
  block_element kind() const noexcept { return kind_; }
  std::size_t panels() const noexcept { return (n_ + panel_width - 1) / panel_width; }
  /// K padded to whole groups (4 for int8, 8 for the 4-bit kinds).
  std::size_t padded_rows() const noexcept { return padded_k_; }
  /// Bytes of one panel (padded_rows() x 16 elements).
  std::size_t panel_bytes() const noexcept { return padded_k_ * panel_width * std::size_t(element_bits(kind_)) / 8; }

  /// The integer w[k][j] as stored (what the kernel multiplies by).
  XQ_DECL std::int32_t value(std::size_t k, std::size_t j) const;
  /// All of W back, K x N row-major: unpack(pack(w)) == w.
  XQ_DECL std::vector<std::int8_t> unpack() const;
  /// sb[b][j] and colsum_b[j].
  float scale(std::size_t b, std::size_t j) const { return scales_[b * padded_n() + j]; }
  std::int32_t column_sum(std::size_t b, std::size_t j) const { return column_sums_[b * padded_n() + j]; }

  /// Bytes a file stores for this matrix: K x N codes of element_bits each (two 4-bit codes
  /// per byte) and blocks x N scales of scale_bits each. int4 groups of 32 with float32
  /// scales: 4 + 32 / 32 = 5 bits per value; MXFP4 (E8M0 scales, blocks of 32): 4.25; NVFP4
  /// (UE4M3, blocks of 16): 4.5 (its one float32 tensor scale is the caller's).
  XQ_DECL std::size_t storage_bytes() const noexcept;
  /// storage_bytes() * 8 / (K * N).
  XQ_DECL double bits_per_value() const noexcept;
  /// Bytes this object holds: the padded panels, float32 scales and int32 column sums.
  XQ_DECL std::size_t resident_bytes() const noexcept;

  const std::vector<std::uint8_t>& data() const noexcept { return data_; }
  const std::vector<float>& scales() const noexcept { return scales_; }
  const std::vector<std::int32_t>& column_sums() const noexcept { return column_sums_; }

 private:
  std::size_t padded_n() const noexcept { return panels() * panel_width; }

  std::size_t k_ = 0, n_ = 0, block_ = 0, padded_k_ = 0;
  block_element kind_ = block_element::int8;
  int scale_bits_ = 32;
  std::vector<std::uint8_t> data_;           // panels, panel_bytes() each
  std::vector<float> scales_;                // blocks x padded N
  std::vector<std::int32_t> column_sums_;    // blocks x padded N
};

/// The oracle: plain loops over the unpacked operands, independent of the packing. `w` is K x
/// N row-major (the integers), `sb` blocks x N row-major, C m x N row-major. The float order
/// is the header's.
XQ_DECL void block_scaled_gemm_reference(std::size_t m, std::size_t n, std::size_t k, std::size_t block,
                                         const block_scaled_activations& a, const std::int8_t* w, const float* sb,
                                         float* c);

/// The kernel block_scaled_gemm uses now: the best this CPU runs within the cap
/// (kernels/cpu_features.hpp): avx512_vnni, avx_vnni, avx2 or portable.
XQ_DECL kernels::cpu_isa block_scaled_gemm_isa() noexcept;

/// The kernel: C (m x w.cols(), row-major) from activations of K = w.rows() codes per row.
/// The same bits as block_scaled_gemm_reference on every path and thread count.
XQ_DECL void block_scaled_gemm(std::size_t m, const block_scaled_activations& a, const packed_block_scaled_matrix& w,
                               float* c);

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/block_scaled_gemm.ipp"
#endif
