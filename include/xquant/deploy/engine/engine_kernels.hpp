#pragma once
/// \file engine_kernels.hpp
/// The integer engine's kernels around its GEMMs (the ops of deploy/engine/): im2col of
/// centred int16 and of bit-packed activations, requantization of int32 rows, whole
/// convolutions (the GEMM tiles read the image itself, and a chunk of output pixels is
/// requantized while its sums are in L2), max pooling, batch norm and sign, and fused
/// passes of a binarized network ("max pool, batch norm, sign", and a binary convolution
/// with all of them).
///
/// Each computes exactly what the straightforward loop it replaces computes (the tests
/// compare them element for element, tests/deploy/test_engine_kernels.cpp): the integer
/// ones trivially, the float ones (requantization, batch norm, max pooling of floats) with
/// the same float operations in the same order, one element per SIMD lane, in the
/// caller's rounding mode (as `std::nearbyint` and `std::lrint` use it). Like all of
/// xquant, they assume no floating-point contraction (-ffp-contract=off, which the
/// xquant::xquant target sets): a fused multiply-add would round once where the scalar
/// reference rounds twice.
///
/// With AVX2 the loops are AVX2 intrinsics; without, portable loops. Work is spread over
/// OpenMP threads in fixed blocks above a threshold (convolutions: the GEMMs' thresholds,
/// integer_gemm.hpp and binary_gemm.hpp; the rest: XQ_PARALLEL_ITEMS_THRESHOLD elements,
/// config.hpp): results never depend on the thread count.

#include <cstddef>
#include <cstdint>

#include "../../config.hpp"
#include "binary_gemm.hpp"
#include "integer_gemm.hpp"
#include "requantize.hpp"
#include "window_geometry.hpp"

namespace xq::deploy {



/// im2col of a centred int16 NHWC batch `x` (n, h, w, c): one row per output pixel
/// (n, oh, ow) (oh, ow from g.output_extent), K = KH * KW * c values in (kh, kw, c) order,
/// centred zeros (real 0) where the window hangs over the padding; rows `lda` (>= K)
/// apart, columns [K, lda) zero. The same matrix as integer_linear_op.ipp's
/// detail::im2col_s16, without clearing it first and with one copy per window row where
/// the window lies inside the image.
XQ_DECL void im2col_nhwc_s16(const std::int16_t* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                             const window_geometry& g, std::size_t lda, std::int16_t* cols);

/// im2col of a bit-packed NHWC batch (n, h, w) of `words` 64-bit words per pixel: rows of
/// KH * KW * words words in (kh, kw, word) order, all-zero words (+1, Larq's
/// pad_values = 1) over the padding. binary_linear_op's im2col.
XQ_DECL void im2col_nhwc_bits(const std::uint64_t* x, std::size_t n, std::size_t h, std::size_t w, std::size_t words,
                              const window_geometry& g, std::uint64_t* cols);

/// im2col of output pixels [first, last) only (row r = (image * oh + i) * ow + j of the
/// whole matrix), written from `cols` on: the chunks of the convolutions below.
XQ_DECL void im2col_nhwc_s16_rows(const std::int16_t* x, std::size_t h, std::size_t w, std::size_t c,
                                  const window_geometry& g, std::size_t first, std::size_t last, std::size_t lda,
                                  std::int16_t* cols);
XQ_DECL void im2col_nhwc_bits_rows(const std::uint64_t* x, std::size_t h, std::size_t w, std::size_t words,
                                   const window_geometry& g, std::size_t first, std::size_t last,
                                   std::uint64_t* cols);

/// requantizer::apply: `rows` rows of r.channels() accumulators to
/// clamp(r(acc, c) + zero_point, qmin, qmax) - zero_point. The float multiplier scheme
/// runs 8 lanes at a time (float(acc) * m, rounded in the current mode, as
/// round_float); the TFLite schemes call the requantizer per element. A ReLU after the
/// layer is this with qmin raised to max(qmin, zero_point): relu(q - zp) = max(q, zp) - zp.
XQ_DECL void requantize_s16(const requantizer& r, const std::int32_t* acc, std::size_t rows,
                            std::int32_t zero_point, std::int32_t qmin, std::int32_t qmax, std::int16_t* out);

/// The float-bias epilogue of integer_linear_op: per element
/// v = (float(acc) * real_scale[c] + real_bias[c]) * (1 / out_scale), then
/// clamp(lrint(clamp(v, -1e9, 1e9)) + zero_point, qmin, qmax) - zero_point.
XQ_DECL void requantize_float_bias_s16(const std::int32_t* acc, std::size_t rows, std::size_t channels,
                                       const float* real_scale, const float* real_bias, float out_scale,
                                       std::int32_t zero_point, std::int32_t qmin, std::int32_t qmax,
                                       std::int16_t* out);

/// What an integer linear op does with its int32 sums: integer_linear_op's three epilogues.
struct linear_epilogue {
  /// Integer output, int32 bias already in the sums: requantize_s16 with *requant.
  const requantizer* requant = nullptr;
  /// Integer output with requant null: the float-bias epilogue (requantize_float_bias_s16);
  /// real output: float(acc) * real_scale[c] + real_bias[c].
  const float* real_scale = nullptr;
  const float* real_bias = nullptr;
  float out_scale = 1.0f;
  /// The output grid (integer output). A ReLU folded in: qmin = max(qmin, zero_point).
  std::int32_t zero_point = 0, qmin = -128, qmax = 127;
  bool integer_output = true;
};

/// Applies `e` to `rows` rows of `channels` sums: into integer_out (centred int16) for an
/// integer output, into real_out otherwise. Exactly integer_linear_op's loops.
XQ_DECL void apply_epilogue(const linear_epilogue& e, const std::int32_t* acc, std::size_t rows,
                            std::size_t channels, std::int16_t* integer_out, float* real_out);

/// A conv2d kernel (KH, KW, C, F) packed for conv2d_nhwc_s16: K in (kh, kw, c) order with
/// zero rows after each window row up to a multiple of 4 (every window row then a whole
/// number of VPMADDWD pairs and VPDPBUSD quads). For integer_linear_op::prepare's conv2d form.
XQ_DECL packed_s16_matrix pack_conv2d_weights_s16(const std::int16_t* kernel, std::size_t kh, std::size_t kw,
                                                  std::size_t c, std::size_t f);

/// integer_linear_op's conv2d form in one call: for the NHWC batch x (n, h, w, c) of
/// centred int16 and a kernel from pack_conv2d_weights_s16, bias (F int32, or null) + the
/// convolution's sums + the epilogue. No column matrix: the GEMM tiles read each output
/// pixel's window rows from the (zero-padded, once; shifted to u8 for VPDPBUSD) image, with
/// the kernel integer_product_isa picks at run time, a chunk of output pixels at a
/// time so that its sums stay in L2 until the epilogue; chunks over threads for enough
/// work (XQ_INTEGER_GEMM_PARALLEL_THRESHOLD multiply-adds). A dilated window's rows are
/// not contiguous: there, im2col chunk by chunk. Writes n*oh*ow*F values to integer_out
/// (integer epilogue) or real_out. The same integers as im2col + gemm_s16_reference +
/// the epilogue's scalar loop.
XQ_DECL void conv2d_nhwc_s16(const std::int16_t* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                             const window_geometry& g, const packed_s16_matrix& weights, const std::int32_t* bias,
                             const linear_epilogue& e, std::int16_t* integer_out, float* real_out);

/// binary_linear_op's conv form in one call: im2col of the bit-packed NHWC batch (as
/// im2col_nhwc_bits) + binary_gemm against `weights` (`filters` rows of KH * KW * words
/// words), chunk by chunk; acc gets n*oh*ow*filters values k - 2 * popcount, with
/// k = KH * KW * in_channels.
XQ_DECL void binary_conv2d_nhwc(const std::uint64_t* x, std::size_t n, std::size_t h, std::size_t w,
                                std::size_t words, const window_geometry& g, const std::uint64_t* weights,
                                std::size_t filters, std::int32_t k, std::int32_t* acc);

/// Max pooling of an NHWC batch (n, h, w, c) with window, strides and padding of `g`
/// (no dilation, as max_pool_op): out (n, oh, ow, c) starts at the type's lowest value
/// and takes std::max(out, tap) over the taps inside the image in (kh, kw) order — the
/// loop of pooling_ops.ipp's detail::max_pool_nhwc, so the same bits for floats too
/// (signed zeros and NaNs included).
XQ_DECL void max_pool_nhwc_s16(const std::int16_t* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                               const window_geometry& g, std::int16_t* out);
XQ_DECL void max_pool_nhwc_s32(const std::int32_t* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                               const window_geometry& g, std::int32_t* out);
XQ_DECL void max_pool_nhwc_f32(const float* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                               const window_geometry& g, float* out);

/// Batch norm then Larq's sign, packed: for `rows` rows of `row_channels` values (x real or
/// an accumulator), element e of a row has batch-norm channel e % bn_channels and
///   y = (x - mean[ch]) * scale[ch] + offset[ch]          (batch_norm_op's float arithmetic)
/// and sets bit e of the row iff y <= -FLT_MIN (sign_op: -1 for a negative normal number).
/// Rows are ceil(row_channels / 64) words, the bits past row_channels zero. row_channels is
/// a multiple of bn_channels: a batch norm on (N, H, W, C) then sign on the same tensor
/// (row_channels = C), or on it flattened (row_channels = H * W * C) as before a binary dense.
XQ_DECL void batch_norm_sign_bits(const float* x, std::size_t rows, std::size_t row_channels, const float* mean,
                                  const float* scale, const float* offset, std::size_t bn_channels,
                                  std::uint64_t* bits);
XQ_DECL void batch_norm_sign_bits(const std::int32_t* acc, std::size_t rows, std::size_t row_channels,
                                  const float* mean, const float* scale, const float* offset,
                                  std::size_t bn_channels, std::uint64_t* bits);

/// sign_op alone on a real tensor: bit e of a row set iff x <= -FLT_MIN, rows of
/// ceil(row_channels / 64) words.
XQ_DECL void sign_bits(const float* x, std::size_t rows, std::size_t row_channels, std::uint64_t* bits);

/// max_pool_op, batch_norm_op and sign_op in one pass (a binary network's "pool, norm,
/// binarize" between binary layers): for the NHWC batch x (n, h, w, c), real or an
/// accumulator, each output pixel's bits are Larq's sign of (m - mean) * scale + offset
/// where m is the window's max as max_pool_nhwc_* computes it (then float(m) for an
/// accumulator, as batch_norm_op reads it); ceil(c / 64) words per output pixel. The
/// pooled and normalized tensors are never written.
XQ_DECL void max_pool_batch_norm_sign_bits(const float* x, std::size_t n, std::size_t h, std::size_t w,
                                           std::size_t c, const window_geometry& g, const float* mean,
                                           const float* scale, const float* offset, std::uint64_t* bits);
XQ_DECL void max_pool_batch_norm_sign_bits(const std::int32_t* acc, std::size_t n, std::size_t h, std::size_t w,
                                           std::size_t c, const window_geometry& g, const float* mean,
                                           const float* scale, const float* offset, std::uint64_t* bits);

/// A binary convolution and what follows it up to the next binary layer, in one pass per
/// image: binary_conv2d_nhwc, then max_pool_batch_norm_sign_bits over its sums with the
/// window `pool` (a 1x1 window with stride 1: no pooling). The chain binary_conv2d ->
/// max_pool2d -> batch_norm -> sign of a binarized network (or binary_conv2d -> batch_norm
/// [-> flatten] -> sign: with C % 64 == 0 the flattened rows pack into the same words),
/// without writing the int32 sums, the pooled or the normalized tensor: bits gets
/// ceil(filters / 64) words per pooled output pixel.
XQ_DECL void binary_conv2d_pool_norm_sign_bits(const std::uint64_t* x, std::size_t n, std::size_t h, std::size_t w,
                                              std::size_t words, const window_geometry& conv,
                                              const std::uint64_t* weights, std::size_t filters, std::int32_t k,
                                              const window_geometry& pool, const float* mean, const float* scale,
                                              const float* offset, std::uint64_t* bits);

/// A float convolution whose kernel (KH, KW, c, f) holds only +1, -1 and 0 (a binarized
/// network's stem: the image in float, the kernel binarized), computed directly, without
/// im2col or a GEMM: y = sum over the window in (kh, kw, c) order of x * w, from +0, the
/// padding read as 0, then + bias[f] when `bias` is not null. Every product is exact, so
/// only the order of the sum is a choice: this one is fixed, the same bits for any batch
/// size and thread count. im2col + OpenBLAS's GEMM adds the same products in an order that
/// depends on the tile a pixel lands in (measured: even/odd accumulators in 8-row tiles,
/// in order in most others), hence on the batch size: the two agree within the rounding of
/// a K-term sum (tests/deploy/test_engine_kernels.cpp checks both claims).
/// `g`: the window with explicit padding (window_geometry.hpp).
XQ_DECL void unit_kernel_conv2d_f32(const float* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                                    const window_geometry& g, const float* kernel, std::size_t f, const float* bias,
                                    float* y);

/// unit_kernel_conv2d_f32 then max_pool_nhwc_f32 with window `pool` over its output, in one
/// pass: each pooled pixel's conv pixels are summed into a small buffer and maxed as the
/// pool maxes them (the same bits), and the full-size conv output (a stem's 28x28x64 per
/// image) is never written.
XQ_DECL void unit_kernel_conv2d_max_pool_f32(const float* x, std::size_t n, std::size_t h, std::size_t w,
                                             std::size_t c, const window_geometry& conv, const float* kernel,
                                             std::size_t f, const float* bias, const window_geometry& pool, float* y);

/// batch_norm_op alone: y[e] = (float(x[e]) - mean[ch]) * scale[ch] + offset[ch] with
/// ch = e % channels, over `elements` values (a real input: x as it is).
XQ_DECL void batch_norm_f32(const float* x, std::size_t elements, const float* mean, const float* scale,
                            const float* offset, std::size_t channels, float* y);
XQ_DECL void batch_norm_f32(const std::int32_t* acc, std::size_t elements, const float* mean, const float* scale,
                            const float* offset, std::size_t channels, float* y);

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/engine_kernels.ipp"
#endif
