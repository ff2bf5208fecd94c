#pragma once
/// \file integer_gemm.hpp
/// The integer engine's matrix products, exact in int32:
///
///   C[i][j] = bias[j] + sum_k A[i][k] * B[k][j]      A: int16 (the centred activations
///                                                    q - zero_point), B: int16 weights
///
/// Why int16 operands: the engine keeps activations centred (q - zero_point, in
/// [-255, 255] for 8-bit grids) so no kernel deals with zero points, and on x86 without
/// VNNI the exact instruction is VPMADDWD (int16 x int16 -> int32 pairs). The tempting
/// VPMADDUBSW (u8 x s8 -> saturating int16 pairs) is what makes onnxruntime's and
/// oneDNN's non-VNNI int8 kernels off by tens of steps (research/deployment.md §2.2).
/// Every product of two such operands and every sum the lowering admits fits int32
/// (lower() checks K * max|A| * max|B| < 2^31), so any summation order gives the same
/// integers: the fast kernel must equal the reference bit for bit, and the tests check it.
///
/// The binary product (XNOR-popcount, Larq's compute engine) is in binary_gemm.hpp.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../../config.hpp"
#include "../../kernels/cpu_features.hpp"

// Multiply-adds (m * n * k) from which gemm_s16 and conv2d_nhwc_s16 use more than one
// thread: 8Mi, about 0.1 ms of this kernel on one Zen 3 core (75 GMAC/s), the time of
// XQ_GEMM_PARALLEL_THRESHOLD's float GEMM. BM_gemm_s16_threads in bench/deploy_bench.cpp
// times the region on 1 and 2 threads by size (bench/README.md, "The integer and binary
// engines"). Override with -D.
#ifndef XQ_INTEGER_GEMM_PARALLEL_THRESHOLD
#define XQ_INTEGER_GEMM_PARALLEL_THRESHOLD (std::size_t(1) << 23)
#endif

namespace xq::deploy {

/// The reference: three loops, int32 accumulation. `b` is K x N row-major; `bias` may be null.
XQ_DECL void gemm_s16_reference(std::size_t m, std::size_t n, std::size_t k, const std::int16_t* a, std::size_t lda,
                                const std::int16_t* b, const std::int32_t* bias, std::int32_t* c);

/// B (K x N) rearranged once for the fast kernels: panels of `panel_width` columns (the
/// last one zero padded), in each the pairs of rows k, k+1 interleaved column by column
/// (K padded to even with a zero row), the operand layout of VPMADDWD (integer_gemm.ipp);
/// and where every value fits int8 and this CPU has VNNI, also the quads of rows k..k+3
/// as int8 (VPDPBUSD's layout) with each column's sum.
class packed_s16_matrix {
 public:
  static constexpr std::size_t panel_width = 16;
  packed_s16_matrix() = default;
  XQ_DECL packed_s16_matrix(const std::int16_t* b, std::size_t k, std::size_t n);
  std::size_t rows() const noexcept { return k_; }
  std::size_t cols() const noexcept { return n_; }
  std::size_t panels() const noexcept { return (n_ + panel_width - 1) / panel_width; }
  std::size_t pairs() const noexcept { return (k_ + 1) / 2; }
  std::size_t quads() const noexcept { return (k_ + 3) / 4; }
  const std::vector<std::int16_t>& data() const noexcept { return data_; }
  bool has_int8_form() const noexcept { return !quads_data_.empty() || (k_ == 0 && !column_sums_.empty()); }
  const std::vector<std::int8_t>& quads_data() const noexcept { return quads_data_; }
  const std::vector<std::int32_t>& column_sums() const noexcept { return column_sums_; }

 private:
  std::size_t k_ = 0, n_ = 0;
  std::vector<std::int16_t> data_;
  std::vector<std::int8_t> quads_data_;
  std::vector<std::int32_t> column_sums_;
};

/// The A operand of integer_product: `rows` rows given by their first value's address,
/// each `segments` runs of `groups` groups (pairs of int16, or quads of u8 for VPDPBUSD)
/// `segment_stride` values apart (a GEMM: one segment; a convolution's output pixel: one
/// per window row, read straight from the image). `tail`: the values of each segment's
/// last group when it is partial (0: whole; reading stops there). Exactly one of s16, u8.
struct integer_operand {
  const std::int16_t* const* s16 = nullptr;
  const std::uint8_t* const* u8 = nullptr;
  std::size_t rows = 0, segments = 1, segment_stride = 0, groups = 0, tail = 0;
};

/// An epilogue integer_product may apply in registers (ORT's float-multiplier
/// requantization, requantize_float_row): out[i][j] = clamp(round(float(C[i][j]) *
/// multipliers[j]), lo, hi) as centred int16, instead of writing C.
struct fused_requantization {
  const float* multipliers = nullptr;
  std::int32_t lo = 0, hi = 0;
  std::int16_t* out = nullptr;
};

/// The kernel integer_product would use now: the best this CPU runs within the cap
/// (kernels/cpu_features.hpp); VNNI only for weights with an int8 form.
XQ_DECL kernels::cpu_isa integer_product_isa(bool int8_weights) noexcept;

/// C (a.rows x b.cols(), row-major) = bias (or 0) + A * B with the kernel of `isa` (which
/// the CPU must run; u8 operands need a VNNI kernel and b's int8 form, int16 ones a
/// VPMADDWD or the portable kernel; argument_error otherwise, never an illegal instruction).
/// Every kernel gives the same integers. With `rq`, the sums are requantized into rq->out
/// (a.rows x b.cols()) and c is not written.
XQ_DECL void integer_product(kernels::cpu_isa isa, const integer_operand& a, const packed_s16_matrix& b,
                             const std::int32_t* bias, std::int32_t* c, const fused_requantization* rq = nullptr);

/// VPDPBUSD's operand: lo = min(lo, a[i]), hi = max(hi, a[i]) over a[0..n), then
/// out[i] = a[i] - lo (a[i] - lo must be in [0, 255]); vectorized for `isa` where it has a kernel.
XQ_DECL void integer_value_range(kernels::cpu_isa isa, const std::int16_t* a, std::size_t n, std::int32_t& lo,
                                 std::int32_t& hi);
XQ_DECL void shift_to_u8(kernels::cpu_isa isa, const std::int16_t* a, std::size_t n, std::int32_t lo,
                         std::uint8_t* out);

/// The fast kernel: C = bias + A * B with B packed; the same integers as the reference.
/// A is m rows of K = b.rows() values, `lda` (>= K) apart; C is m x b.cols(). The kernel
/// is chosen at run time (integer_product_isa): VPDPBUSD on A - min(A) when A spans at
/// most 256 values, VPMADDWD otherwise, a portable loop without either. Threads
/// (OpenMP) over blocks of rows when m * n * k >= XQ_INTEGER_GEMM_PARALLEL_THRESHOLD: the
/// integers do not depend on the split.
XQ_DECL void gemm_s16(std::size_t m, const std::int16_t* a, std::size_t lda, const packed_s16_matrix& b,
                      const std::int32_t* bias, std::int32_t* c);

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/integer_gemm.ipp"
#endif
