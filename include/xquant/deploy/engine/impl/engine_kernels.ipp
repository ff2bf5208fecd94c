#pragma once
/// \file engine_kernels.ipp
/// The integer engine's kernels around its GEMMs (deploy/engine/engine_kernels.hpp).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <type_traits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "../../../core/error.hpp"
#include "../../../kernels/cpu_features.hpp"
#include "../../../kernels/isa_region.hpp"
#include "../../../kernels/parallel.hpp"
#include "../../../kernels/threads.hpp"
#include "../../../kernels/unrolled.hpp"
#include "../engine_kernels.hpp"
#include "../window_geometry.hpp"
#include "integer_gemm.ipp"  // integer_product, the kernels conv2d_nhwc_s16 runs

namespace xq::deploy {

namespace detail {

/// Whether `elements` of per-item work are worth threads (the library's threshold for
/// per-image loops, config.hpp; never next to a BLAS with a pthreads pool of its own, as
/// kernels/im2col.hpp explains).
inline bool engine_threads(std::size_t elements) {
  return elements >= XQ_PARALLEL_ITEMS_THRESHOLD && !kernels::blas_has_thread_pool();
}

/// Calls body(begin, end) over [0, count) items: one call, or one per thread in fixed
/// contiguous chunks (what each item computes never depends on the split).
template <class Body>
void for_item_chunks(std::size_t count, bool worth_it, Body&& body) {
  kernels::parallel_chunks(worth_it ? kernels::max_threads() : 1, count, 1, body);
}

template <class T>
XQ_ALWAYS_INLINE void copy_values(T* dst, const T* src, std::size_t n) {
  XQ_OMP_SIMD
  for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
}
template <class T>
XQ_ALWAYS_INLINE void zero_values(T* dst, std::size_t n) {
  XQ_OMP_SIMD
  for (std::size_t i = 0; i < n; ++i) dst[i] = T(0);
}

/// Rows [first, last) of im2col, for int16 values or 64-bit words (`c` per pixel). `Run`
/// is kw * c when the caller knows it at compile time (0: read it from g): a 3x3 window on
/// one channel copies runs of 3 values, where a loop with a run-time count costs more than
/// the copy.
template <std::size_t Run, class T>
void im2col_range(const T* x, std::size_t h, std::size_t w, std::size_t c, const window_geometry& g,
                  std::size_t first, std::size_t last, std::size_t lda, T* cols, std::size_t run_stride = 0) {
  const std::size_t oh = g.output_extent(h, 0), ow = g.output_extent(w, 1);
  const std::size_t kh = g.window[0], kw = g.window[1], sh = g.strides[0], sw = g.strides[1];
  const std::size_t dh = g.dilation[0], dw = g.dilation[1];
  const std::size_t run = Run ? Run : kw * c, stride = run_stride ? run_stride : run, k = kh * stride;
  const auto lh = static_cast<std::ptrdiff_t>(h), lw = static_cast<std::ptrdiff_t>(w);
  if (first >= last || oh == 0 || ow == 0) return;
  std::size_t b = first / (oh * ow), i = first % (oh * ow) / ow, j = first % ow;
  for (std::size_t r = first; r < last; ++r) {
    T* row = cols + (r - first) * lda;
    const T* image = x + b * h * w * c;
    const std::ptrdiff_t x0 = std::ptrdiff_t(j * sw) - std::ptrdiff_t(g.pads[1]);
    // The window's taps along w all inside the image, and adjacent: one copy per kh.
    const bool contiguous = dw == 1 && x0 >= 0 && x0 + std::ptrdiff_t(kw) <= lw;
    for (std::size_t u = 0; u < kh; ++u) {
      const std::ptrdiff_t y = std::ptrdiff_t(i * sh + u * dh) - std::ptrdiff_t(g.pads[0]);
      T* dst = row + u * stride;
      zero_values(dst + run, stride - run);  // the conv layout's zero after an odd run
      if (y < 0 || y >= lh) {
        zero_values(dst, run);
        continue;
      }
      const T* src = image + std::size_t(y) * w * c;
      if (contiguous) {
        copy_values(dst, src + std::size_t(x0) * c, run);
        continue;
      }
      for (std::size_t v = 0; v < kw; ++v) {
        const std::ptrdiff_t xx = x0 + std::ptrdiff_t(v * dw);
        if (xx < 0 || xx >= lw)
          zero_values(dst + v * c, c);
        else
          copy_values(dst + v * c, src + std::size_t(xx) * c, c);
      }
    }
    zero_values(row + k, lda - k);
    if (++j == ow) {
      j = 0;
      if (++i == oh) {
        i = 0;
        ++b;
      }
    }
  }
}

/// im2col_range with the window row's run length as a constant for the common small ones.
template <class T>
void im2col_rows(const T* x, std::size_t h, std::size_t w, std::size_t c, const window_geometry& g,
                 std::size_t first, std::size_t last, std::size_t lda, T* cols, std::size_t run_stride = 0) {
  switch (g.window[1] * c) {
    case 3: im2col_range<3>(x, h, w, c, g, first, last, lda, cols, run_stride); break;
    case 6: im2col_range<6>(x, h, w, c, g, first, last, lda, cols, run_stride); break;
    case 9: im2col_range<9>(x, h, w, c, g, first, last, lda, cols, run_stride); break;
    default: im2col_range<0>(x, h, w, c, g, first, last, lda, cols, run_stride); break;
  }
}

}  // namespace detail

XQ_DECL void im2col_nhwc_s16_rows(const std::int16_t* x, std::size_t h, std::size_t w, std::size_t c,
                                  const window_geometry& g, std::size_t first, std::size_t last, std::size_t lda,
                                  std::int16_t* cols) {
  detail::im2col_rows(x, h, w, c, g, first, last, lda, cols);
}

XQ_DECL void im2col_nhwc_bits_rows(const std::uint64_t* x, std::size_t h, std::size_t w, std::size_t words,
                                   const window_geometry& g, std::size_t first, std::size_t last,
                                   std::uint64_t* cols) {
  detail::im2col_rows(x, h, w, words, g, first, last, g.window[0] * g.window[1] * words, cols);
}

XQ_DECL void im2col_nhwc_s16(const std::int16_t* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                             const window_geometry& g, std::size_t lda, std::int16_t* cols) {
  const std::size_t pixels = g.output_extent(h, 0) * g.output_extent(w, 1);
  detail::for_item_chunks(n, detail::engine_threads(n * pixels * lda), [&](std::size_t b0, std::size_t b1) {
    detail::im2col_rows(x, h, w, c, g, b0 * pixels, b1 * pixels, lda, cols + b0 * pixels * lda);
  });
}

XQ_DECL void im2col_nhwc_bits(const std::uint64_t* x, std::size_t n, std::size_t h, std::size_t w,
                              std::size_t words, const window_geometry& g, std::uint64_t* cols) {
  const std::size_t pixels = g.output_extent(h, 0) * g.output_extent(w, 1);
  const std::size_t row = g.window[0] * g.window[1] * words;
  detail::for_item_chunks(n, detail::engine_threads(2 * n * pixels * row), [&](std::size_t b0, std::size_t b1) {
    detail::im2col_rows(x, h, w, words, g, b0 * pixels, b1 * pixels, row, cols + b0 * pixels * row);
  });
}

// --- requantization ----------------------------------------------------------------------

namespace detail {

/// [lo, hi] = [qmin - zp, qmax - zp] as int32 (the centred output range).
struct centred_range {
  std::int32_t lo, hi;
  centred_range(std::int32_t zero_point, std::int32_t qmin, std::int32_t qmax) {
    constexpr std::int64_t low = std::numeric_limits<std::int32_t>::min(), high = std::numeric_limits<std::int32_t>::max();
    lo = std::int32_t(std::clamp<std::int64_t>(std::int64_t(qmin) - zero_point, low, high));
    hi = std::int32_t(std::clamp<std::int64_t>(std::int64_t(qmax) - zero_point, low, high));
  }
  /// clamp(q + zp, qmin, qmax) - zp, which is clamp(q, qmin - zp, qmax - zp).
  std::int16_t operator()(std::int64_t q) const noexcept { return std::int16_t(std::clamp<std::int64_t>(q, lo, hi)); }
};

#if defined(__AVX2__)
/// 16 int32 (in range for int16) to 16 int16, in order.
XQ_ALWAYS_INLINE void store_s16x16(std::int16_t* out, __m256i a, __m256i b) {
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), packed);
}
XQ_ALWAYS_INLINE void store_s16x8(std::int16_t* out, __m256i a) {
  const __m128i packed = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), packed);
}
#endif

/// One row of the float multiplier scheme: round_float(acc, m[c]) clamped.
inline void requantize_float_row(const std::int32_t* acc, const float* m, std::size_t channels,
                                 const centred_range& range, std::int16_t* out) {
  std::size_t c = 0;
#if defined(__AVX2__)
  const __m256 limit = _mm256_set1_ps(2147483520.0f), neg_limit = _mm256_set1_ps(-2147483520.0f);
  const __m256i lo = _mm256_set1_epi32(range.lo), hi = _mm256_set1_epi32(range.hi);
  auto eight = [&](std::size_t at) {
    // float(acc) * m, clamped to +-2147483520, converted in the current rounding mode
    // (round_float: std::nearbyint, then an exact conversion).
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + at))),
                             _mm256_loadu_ps(m + at));
    v = _mm256_max_ps(_mm256_min_ps(v, limit), neg_limit);
    return _mm256_max_epi32(_mm256_min_epi32(_mm256_cvtps_epi32(v), hi), lo);
  };
  for (; c + 16 <= channels; c += 16) store_s16x16(out + c, eight(c), eight(c + 8));
  for (; c + 8 <= channels; c += 8) store_s16x8(out + c, eight(c));
#endif
  for (; c < channels; ++c) out[c] = range(requantizer::round_float(acc[c], m[c]));
}

inline void requantize_float_bias_row(const std::int32_t* acc, const float* scale, const float* bias, float inverse,
                                      std::size_t channels, const centred_range& range, std::int16_t* out) {
  std::size_t c = 0;
#if defined(__AVX2__)
  const __m256 limit = _mm256_set1_ps(1e9f), neg_limit = _mm256_set1_ps(-1e9f), inv = _mm256_set1_ps(inverse);
  const __m256i lo = _mm256_set1_epi32(range.lo), hi = _mm256_set1_epi32(range.hi);
  auto eight = [&](std::size_t at) {
    const __m256 a = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + at)));
    __m256 v = _mm256_mul_ps(_mm256_add_ps(_mm256_mul_ps(a, _mm256_loadu_ps(scale + at)), _mm256_loadu_ps(bias + at)), inv);
    v = _mm256_max_ps(_mm256_min_ps(v, limit), neg_limit);  // NaN -> 1e9, as std::min(1e9f, NaN)
    return _mm256_max_epi32(_mm256_min_epi32(_mm256_cvtps_epi32(v), hi), lo);  // lrint: the current mode
  };
  for (; c + 16 <= channels; c += 16) store_s16x16(out + c, eight(c), eight(c + 8));
  for (; c + 8 <= channels; c += 8) store_s16x8(out + c, eight(c));
#endif
  for (; c < channels; ++c) {
    const float v = (float(acc[c]) * scale[c] + bias[c]) * inverse;
    out[c] = range(std::lrint(std::max(-1e9f, std::min(1e9f, v))));
  }
}

}  // namespace detail

XQ_DECL void requantize_s16(const requantizer& r, const std::int32_t* acc, std::size_t rows,
                            std::int32_t zero_point, std::int32_t qmin, std::int32_t qmax, std::int16_t* out) {
  const std::size_t n = r.channels();
  const detail::centred_range range(zero_point, qmin, qmax);
  const bool worth_it = detail::engine_threads(rows * n);
  detail::for_item_chunks(rows, worth_it, [&](std::size_t r0, std::size_t r1) {
    if (r.scheme() == requantization::float_multiplier) {
      const float* m = r.float_multipliers().data();
      for (std::size_t i = r0; i < r1; ++i) detail::requantize_float_row(acc + i * n, m, n, range, out + i * n);
      return;
    }
    for (std::size_t i = r0; i < r1; ++i)
      for (std::size_t c = 0; c < n; ++c) out[i * n + c] = range(r(acc[i * n + c], c));
  });
}

XQ_DECL void requantize_float_bias_s16(const std::int32_t* acc, std::size_t rows, std::size_t channels,
                                       const float* real_scale, const float* real_bias, float out_scale,
                                       std::int32_t zero_point, std::int32_t qmin, std::int32_t qmax,
                                       std::int16_t* out) {
  const detail::centred_range range(zero_point, qmin, qmax);
  const float inverse = 1.0f / out_scale;
  detail::for_item_chunks(rows, detail::engine_threads(rows * channels), [&](std::size_t r0, std::size_t r1) {
    for (std::size_t i = r0; i < r1; ++i)
      detail::requantize_float_bias_row(acc + i * channels, real_scale, real_bias, inverse, channels, range,
                                        out + i * channels);
  });
}

// --- epilogues and whole convolutions ---------------------------------------------------

namespace detail {

inline void real_output_row(const std::int32_t* acc, const float* scale, const float* bias, std::size_t channels,
                            float* out) {
  std::size_t c = 0;
#if defined(__AVX2__)
  for (; c + 8 <= channels; c += 8) {
    const __m256 a = _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + c)));
    _mm256_storeu_ps(out + c, _mm256_add_ps(_mm256_mul_ps(a, _mm256_loadu_ps(scale + c)), _mm256_loadu_ps(bias + c)));
  }
#endif
  for (; c < channels; ++c) out[c] = float(acc[c]) * scale[c] + bias[c];
}

/// Rows per chunk of a convolution: its columns and sums (`bytes_per_row`) within about
/// 160 KiB, in L2 beside the packed weights; a multiple of `tile` rows.
inline std::size_t chunk_rows(std::size_t bytes_per_row, std::size_t tile, std::size_t rows) {
  const std::size_t fit = (std::size_t(160) << 10) / std::max<std::size_t>(bytes_per_row, 1);
  return std::max<std::size_t>(1, std::min(rows, std::max(tile, fit / tile * tile)));
}

}  // namespace detail

XQ_DECL void apply_epilogue(const linear_epilogue& e, const std::int32_t* acc, std::size_t rows,
                            std::size_t channels, std::int16_t* integer_out, float* real_out) {
  if (!e.integer_output) {
    detail::for_item_chunks(rows, detail::engine_threads(rows * channels), [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r)
        detail::real_output_row(acc + r * channels, e.real_scale, e.real_bias, channels, real_out + r * channels);
    });
  } else if (e.requant) {
    requantize_s16(*e.requant, acc, rows, e.zero_point, e.qmin, e.qmax, integer_out);
  } else {
    requantize_float_bias_s16(acc, rows, channels, e.real_scale, e.real_bias, e.out_scale, e.zero_point, e.qmin,
                              e.qmax, integer_out);
  }
}

namespace detail {

/// The convolution's order of K (pack_conv2d_weights_s16): window row u's KW * C values
/// at [u * run, u * run + KW * C), then zeros up to run = KW * C rounded up to a multiple
/// of 4, so every window row is a whole number of VPMADDWD pairs and of VPDPBUSD quads.
inline std::size_t conv_run(const window_geometry& g, std::size_t c) {
  const std::size_t r = g.window[1] * c;
  return (r + 3) / 4 * 4;
}

}  // namespace detail

XQ_DECL packed_s16_matrix pack_conv2d_weights_s16(const std::int16_t* kernel, std::size_t kh, std::size_t kw,
                                                  std::size_t c, std::size_t f) {
  const std::size_t run = kw * c, padded = (run + 3) / 4 * 4;
  std::vector<std::int16_t> rows(kh * padded * f, 0);
  for (std::size_t u = 0; u < kh; ++u)
    std::copy(kernel + u * run * f, kernel + (u + 1) * run * f, rows.begin() + std::ptrdiff_t(u * padded * f));
  return packed_s16_matrix(rows.data(), kh * padded, f);
}

XQ_DECL void conv2d_nhwc_s16(const std::int16_t* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                             const window_geometry& g, const packed_s16_matrix& weights, const std::int32_t* bias,
                             const linear_epilogue& e, std::int16_t* integer_out, float* real_out) {
  const std::size_t oh = g.output_extent(h, 0), ow = g.output_extent(w, 1), rows = n * oh * ow;
  const std::size_t run = detail::conv_run(g, c), k = g.window[0] * run, f = weights.cols();
  if (weights.rows() != k)
    throw argument_error("conv2d_nhwc_s16", xq::detail::concat("weights from pack_conv2d_weights_s16 (", k, " rows)"),
                         xq::detail::concat(weights.rows(), " rows"));
  if (rows == 0 || f == 0) return;
  const bool worth_it = double(rows) * double(f) * double(k) >= double(XQ_INTEGER_GEMM_PARALLEL_THRESHOLD);
  const int threads = worth_it ? kernels::max_threads() : 1;

  if (g.dilation[1] != 1) {  // window rows not contiguous in the image: im2col in chunks
    const std::size_t chunk = detail::chunk_rows(2 * k + 4 * f, 6, rows), chunks = (rows + chunk - 1) / chunk;
    kernels::parallel_chunks(chunks > 1 ? threads : 1, chunks, 1, [&](std::size_t c0, std::size_t c1) {
      std::vector<std::int16_t> cols(chunk * k);
      std::vector<std::int32_t> acc(chunk * f);
      for (std::size_t q = c0; q < c1; ++q) {
        const std::size_t first = q * chunk, last = std::min(rows, first + chunk);
        detail::im2col_rows(x, h, w, c, g, first, last, k, cols.data(), run);
        gemm_s16(last - first, cols.data(), k, weights, bias, acc.data());
        apply_epilogue(e, acc.data(), last - first, f, integer_out ? integer_out + first * f : nullptr,
                       real_out ? real_out + first * f : nullptr);
      }
    });
    return;
  }

  // The kernel, and for VPDPBUSD the shift of the image's values (padding included) to u8.
  const std::size_t pt = g.pads[0], pl = g.pads[1];
  const std::size_t hp = h + pt + g.pads[2], wp = w + pl + g.pads[3];
  const bool padding = pt || pl || g.pads[2] || g.pads[3];
  kernels::cpu_isa isa = integer_product_isa(weights.has_int8_form());
  bool vnni = isa == kernels::cpu_isa::avx512_vnni || isa == kernels::cpu_isa::avx_vnni;
  std::int32_t lo = 0;
  if (vnni) {
    const std::size_t values = n * h * w * c;
    std::int32_t hi = padding || !values ? 0 : x[0];
    lo = hi;
    integer_value_range(isa, x, values, lo, hi);
    if (hi - lo > 255) isa = integer_product_isa(false), vnni = false;
  }
  std::vector<std::int32_t> corrected;
  if (vnni) {  // bias + lo * column sums, modulo 2^32 as the kernel's sums
    corrected.resize(f);
    for (std::size_t j = 0; j < f; ++j)
      corrected[j] = std::int32_t(std::uint32_t(bias ? bias[j] : 0) + std::uint32_t(lo) * std::uint32_t(weights.column_sums()[j]));
    bias = corrected.data();
  }

  // The image with its padding, once, and three spare values: a window row's last group
  // may read up to three values past it (their weights are zero).
  const auto padded_image = [&](auto fill, auto copy_row) {
    using T = decltype(fill);
    std::vector<T> image(n * hp * wp * c + 3, fill);
    detail::for_item_chunks(n, detail::engine_threads(n * hp * wp * c), [&](std::size_t b0, std::size_t b1) {
      for (std::size_t b = b0; b < b1; ++b)
        for (std::size_t y = 0; y < h; ++y)
          copy_row(x + (b * h + y) * w * c, w * c, image.data() + ((b * hp + y + pt) * wp + pl) * c);
    });
    return image;
  };
  std::vector<std::uint8_t> image_u8;
  std::vector<std::int16_t> image_s16;
  if (vnni) {
    image_u8 = padded_image(std::uint8_t(-lo), [&](const std::int16_t* src, std::size_t count, std::uint8_t* dst) {
      shift_to_u8(isa, src, count, lo, dst);
    });
  } else if (padding || run != g.window[1] * c) {
    image_s16 = padded_image(std::int16_t(0), [](const std::int16_t* src, std::size_t count, std::int16_t* dst) {
      std::copy(src, src + count, dst);
    });
  }
  const std::int16_t* image16 = image_s16.empty() ? x : image_s16.data();

  // ORT's float-multiplier requantization goes into the tiles (requantize_s16's arithmetic).
  const bool fuse = e.integer_output && e.requant && e.requant->scheme() == requantization::float_multiplier;
  fused_requantization fused;
  if (fuse) {
    const detail::centred_range range(e.zero_point, e.qmin, e.qmax);
    fused.multipliers = e.requant->float_multipliers().data();
    fused.lo = range.lo, fused.hi = range.hi;
  }
  integer_operand shape;
  shape.segments = g.window[0];
  shape.segment_stride = g.dilation[0] * wp * c;
  shape.groups = run / (vnni ? 4 : 2);
  // Chunks of output pixels: their sums (and the A rows a panel re-reads) stay in L2.
  const std::size_t chunk = detail::chunk_rows(4 * f + 2 * k / 4, 24, rows), chunks = (rows + chunk - 1) / chunk;
  kernels::parallel_chunks(chunks > 1 ? threads : 1, chunks, 1, [&](std::size_t c0, std::size_t c1) {
    std::vector<std::int32_t> acc(fuse ? 0 : chunk * f);
    std::vector<const std::uint8_t*> starts_u8(vnni ? chunk : 0);
    std::vector<const std::int16_t*> starts_s16(vnni ? 0 : chunk);
    for (std::size_t q = c0; q < c1; ++q) {
      const std::size_t first = q * chunk, last = std::min(rows, first + chunk);
      for (std::size_t r = first, b = first / (oh * ow), i = first % (oh * ow) / ow, j = first % ow; r < last; ++r) {
        const std::size_t at = ((b * hp + i * g.strides[0]) * wp + j * g.strides[1]) * c;
        if (vnni)
          starts_u8[r - first] = image_u8.data() + at;
        else
          starts_s16[r - first] = image16 + at;
        if (++j == ow) {
          j = 0;
          if (++i == oh) i = 0, ++b;
        }
      }
      integer_operand a = shape;
      a.rows = last - first;
      if (vnni)
        a.u8 = starts_u8.data();
      else
        a.s16 = starts_s16.data();
      if (fuse) {  // requantized in the tiles' registers: no int32 sums written and read back
        fused_requantization rq = fused;
        rq.out = integer_out + first * f;
        integer_product(isa, a, weights, bias, nullptr, &rq);
        continue;
      }
      integer_product(isa, a, weights, bias, acc.data());
      apply_epilogue(e, acc.data(), a.rows, f, integer_out ? integer_out + first * f : nullptr,
                     real_out ? real_out + first * f : nullptr);
    }
  });
}

XQ_DECL void binary_conv2d_nhwc(const std::uint64_t* x, std::size_t n, std::size_t h, std::size_t w,
                                std::size_t words, const window_geometry& g, const std::uint64_t* weights,
                                std::size_t filters, std::int32_t k, std::int32_t* acc) {
  const std::size_t rows = n * g.output_extent(h, 0) * g.output_extent(w, 1);
  const std::size_t row_words = g.window[0] * g.window[1] * words;
  if (rows == 0 || filters == 0) return;
  const std::size_t chunk = detail::chunk_rows(8 * row_words, 4, rows), chunks = (rows + chunk - 1) / chunk;
  const bool worth_it = double(rows) * double(filters) * double(row_words) >= double(XQ_BINARY_GEMM_PARALLEL_THRESHOLD);
  kernels::parallel_chunks(worth_it && chunks > 1 ? kernels::max_threads() : 1, chunks, 1,
                           [&](std::size_t c0, std::size_t c1) {
                             std::vector<std::uint64_t> cols(chunk * row_words);
                             for (std::size_t q = c0; q < c1; ++q) {
                               const std::size_t first = q * chunk, last = std::min(rows, first + chunk);
                               detail::im2col_rows(x, h, w, words, g, first, last, row_words, cols.data());
                               binary_gemm(last - first, filters, row_words, k, cols.data(), weights,
                                           acc + first * filters);
                             }
                           });
}

// --- max pooling -------------------------------------------------------------------------

namespace detail {

/// The type's lowest value and std::max, lane-wise: 16 int16, 8 int32 or 8 floats per
/// vector. For floats std::max(o, p) = o < p ? p : o = _mm256_max_ps(p, o) (p > o ? p :
/// o, o when unordered): the same choice for signed zeros and NaNs.
#if defined(__AVX2__)
struct max_lanes_s16 {
  using type = std::int16_t;
  static constexpr std::size_t width = 16;
  static __m256i lowest() { return _mm256_set1_epi16(std::numeric_limits<std::int16_t>::lowest()); }
  static __m256i load(const type* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store(type* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static __m256i max(__m256i o, __m256i p) { return _mm256_max_epi16(o, p); }
};
struct max_lanes_s32 {
  using type = std::int32_t;
  static constexpr std::size_t width = 8;
  static __m256i lowest() { return _mm256_set1_epi32(std::numeric_limits<std::int32_t>::lowest()); }
  static __m256i load(const type* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store(type* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static __m256i max(__m256i o, __m256i p) { return _mm256_max_epi32(o, p); }
};
struct max_lanes_f32 {
  using type = float;
  static constexpr std::size_t width = 8;
  static __m256 lowest() { return _mm256_set1_ps(std::numeric_limits<float>::lowest()); }
  static __m256 load(const type* p) { return _mm256_loadu_ps(p); }
  static void store(type* p, __m256 v) { _mm256_storeu_ps(p, v); }
  static __m256 max(__m256 o, __m256 p) { return _mm256_max_ps(p, o); }
};
template <class T> struct max_lanes;
template <> struct max_lanes<std::int16_t> : max_lanes_s16 {};
template <> struct max_lanes<std::int32_t> : max_lanes_s32 {};
template <> struct max_lanes<float> : max_lanes_f32 {};
#endif

/// One output pixel: out[q] = std::max over the taps (pointers, in window order) of
/// tap[q], starting from the lowest value; a vector of channels at a time in registers.
template <class T>
void max_of_taps(const T* const* taps, std::size_t count, std::size_t c, T* out) {
  std::size_t q = 0;
#if defined(__AVX2__)
  using lanes = max_lanes<T>;
  constexpr std::size_t width = lanes::width;
  for (; q + 2 * width <= c; q += 2 * width) {
    auto m0 = lanes::lowest(), m1 = lanes::lowest();
    for (std::size_t t = 0; t < count; ++t) {
      m0 = lanes::max(m0, lanes::load(taps[t] + q));
      m1 = lanes::max(m1, lanes::load(taps[t] + q + width));
    }
    lanes::store(out + q, m0);
    lanes::store(out + q + width, m1);
  }
  for (; q + width <= c; q += width) {
    auto m = lanes::lowest();
    for (std::size_t t = 0; t < count; ++t) m = lanes::max(m, lanes::load(taps[t] + q));
    lanes::store(out + q, m);
  }
#endif
  for (; q < c; ++q) {
    T m = std::numeric_limits<T>::lowest();
    for (std::size_t t = 0; t < count; ++t) m = std::max(m, taps[t][q]);
    out[q] = m;
  }
}

template <class T>
void max_pool_images(const T* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c, const window_geometry& g,
                     T* out) {
  const std::size_t oh = g.output_extent(h, 0), ow = g.output_extent(w, 1);
  const std::size_t taps_max = g.window[0] * g.window[1];
  const auto lh = static_cast<std::ptrdiff_t>(h), lw = static_cast<std::ptrdiff_t>(w);
  // A window inside the image has every tap, at the same offsets from its corner.
  std::vector<std::size_t> offsets;
  for (std::size_t u = 0; u < g.window[0]; ++u)
    for (std::size_t v = 0; v < g.window[1]; ++v) offsets.push_back((u * w + v) * c);
  for_item_chunks(n, engine_threads(n * h * w * c), [&](std::size_t b0, std::size_t b1) {
    std::vector<const T*> taps(taps_max);
    for (std::size_t b = b0; b < b1; ++b)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j) {
          const std::ptrdiff_t top = std::ptrdiff_t(i * g.strides[0]) - std::ptrdiff_t(g.pads[0]);
          const std::ptrdiff_t left = std::ptrdiff_t(j * g.strides[1]) - std::ptrdiff_t(g.pads[1]);
          if (top >= 0 && left >= 0 && top + std::ptrdiff_t(g.window[0]) <= lh && left + std::ptrdiff_t(g.window[1]) <= lw) {
            const T* corner = x + ((b * h + std::size_t(top)) * w + std::size_t(left)) * c;
            for (std::size_t t = 0; t < taps_max; ++t) taps[t] = corner + offsets[t];
            max_of_taps(taps.data(), taps_max, c, out + ((b * oh + i) * ow + j) * c);
            continue;
          }
          std::size_t count = 0;
          for (std::size_t u = 0; u < g.window[0]; ++u) {
            const std::ptrdiff_t y = std::ptrdiff_t(i * g.strides[0] + u) - std::ptrdiff_t(g.pads[0]);
            if (y < 0 || y >= lh) continue;
            for (std::size_t v = 0; v < g.window[1]; ++v) {
              const std::ptrdiff_t xx = std::ptrdiff_t(j * g.strides[1] + v) - std::ptrdiff_t(g.pads[1]);
              if (xx < 0 || xx >= lw) continue;
              taps[count++] = x + ((b * h + std::size_t(y)) * w + std::size_t(xx)) * c;
            }
          }
          max_of_taps(taps.data(), count, c, out + ((b * oh + i) * ow + j) * c);
        }
  });
}

}  // namespace detail

XQ_DECL void max_pool_nhwc_s16(const std::int16_t* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                               const window_geometry& g, std::int16_t* out) {
  detail::max_pool_images(x, n, h, w, c, g, out);
}
XQ_DECL void max_pool_nhwc_s32(const std::int32_t* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                               const window_geometry& g, std::int32_t* out) {
  detail::max_pool_images(x, n, h, w, c, g, out);
}
XQ_DECL void max_pool_nhwc_f32(const float* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                               const window_geometry& g, float* out) {
  detail::max_pool_images(x, n, h, w, c, g, out);
}

// --- batch norm and sign -------------------------------------------------------------------

namespace detail {

XQ_ALWAYS_INLINE float as_float(float v) { return v; }
XQ_ALWAYS_INLINE float as_float(std::int32_t v) { return float(v); }

#if defined(__AVX2__)
XQ_ALWAYS_INLINE __m256 load_float8(const float* x) { return _mm256_loadu_ps(x); }
XQ_ALWAYS_INLINE __m256 load_float8(const std::int32_t* x) {
  return _mm256_cvtepi32_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
}
#endif

/// One row of batch norm + sign (bn_channels = 0: sign alone).
template <class T>
void batch_norm_sign_row(const T* x, std::size_t channels, const float* mean, const float* scale,
                         const float* offset, std::size_t bn_channels, std::uint64_t* bits) {
  const std::size_t words = (channels + 63) / 64;
  std::fill(bits, bits + words, std::uint64_t(0));
  std::size_t e = 0, ch = 0;  // ch = e % bn_channels
#if defined(__AVX2__)
  if (bn_channels == 0 || bn_channels % 8 == 0) {
    const __m256 threshold = _mm256_set1_ps(-FLT_MIN);
    for (; e + 8 <= channels; e += 8) {
      __m256 y = load_float8(x + e);
      if (bn_channels) {
        y = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(y, _mm256_loadu_ps(mean + ch)), _mm256_loadu_ps(scale + ch)),
                          _mm256_loadu_ps(offset + ch));
        ch += 8;
        if (ch == bn_channels) ch = 0;
      }
      const auto negative = std::uint64_t(unsigned(_mm256_movemask_ps(_mm256_cmp_ps(y, threshold, _CMP_LE_OQ))));
      bits[e / 64] |= negative << (e % 64);
    }
  }
#endif
  for (; e < channels; ++e) {
    float y = as_float(x[e]);
    if (bn_channels) {
      y = (y - mean[ch]) * scale[ch] + offset[ch];
      if (++ch == bn_channels) ch = 0;
    }
    if (y <= -FLT_MIN) bits[e / 64] |= std::uint64_t(1) << (e % 64);
  }
}

template <class T>
void batch_norm_sign_rows(const T* x, std::size_t rows, std::size_t channels, const float* mean, const float* scale,
                          const float* offset, std::size_t bn_channels, std::uint64_t* bits) {
  const std::size_t words = (channels + 63) / 64;
  for_item_chunks(rows, engine_threads(rows * channels), [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r)
      batch_norm_sign_row(x + r * channels, channels, mean, scale, offset, bn_channels, bits + r * words);
  });
}

template <class T>
void batch_norm_values(const T* x, std::size_t elements, const float* mean, const float* scale, const float* offset,
                       std::size_t channels, float* y) {
  const std::size_t rows = channels ? elements / channels : 0;
  for_item_chunks(rows, engine_threads(elements), [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const T* xr = x + r * channels;
      float* yr = y + r * channels;
      std::size_t c = 0;
#if defined(__AVX2__)
      for (; c + 8 <= channels; c += 8)
        _mm256_storeu_ps(yr + c, _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(load_float8(xr + c), _mm256_loadu_ps(mean + c)),
                                                             _mm256_loadu_ps(scale + c)),
                                               _mm256_loadu_ps(offset + c)));
#endif
      for (; c < channels; ++c) yr[c] = (as_float(xr[c]) - mean[c]) * scale[c] + offset[c];
    }
  });
}

}  // namespace detail

XQ_DECL void batch_norm_sign_bits(const float* x, std::size_t rows, std::size_t row_channels, const float* mean,
                                  const float* scale, const float* offset, std::size_t bn_channels,
                                  std::uint64_t* bits) {
  detail::batch_norm_sign_rows(x, rows, row_channels, mean, scale, offset, bn_channels, bits);
}
XQ_DECL void batch_norm_sign_bits(const std::int32_t* acc, std::size_t rows, std::size_t row_channels,
                                  const float* mean, const float* scale, const float* offset,
                                  std::size_t bn_channels, std::uint64_t* bits) {
  detail::batch_norm_sign_rows(acc, rows, row_channels, mean, scale, offset, bn_channels, bits);
}
XQ_DECL void sign_bits(const float* x, std::size_t rows, std::size_t row_channels, std::uint64_t* bits) {
  detail::batch_norm_sign_rows(x, rows, row_channels, nullptr, nullptr, nullptr, 0, bits);
}

namespace detail {

/// max pool, batch norm and sign of one output pixel (`count` taps, c channels).
template <class T>
void pool_norm_sign_pixel(const T* const* taps, std::size_t count, std::size_t c, const float* mean,
                          const float* scale, const float* offset, std::uint64_t* bits) {
  std::fill(bits, bits + (c + 63) / 64, std::uint64_t(0));
  std::size_t q = 0;
#if defined(__AVX2__)
  using lanes = max_lanes<T>;
  const __m256 threshold = _mm256_set1_ps(-FLT_MIN);
  for (; q + 8 <= c; q += 8) {
    auto m = lanes::lowest();
    for (std::size_t t = 0; t < count; ++t) m = lanes::max(m, lanes::load(taps[t] + q));
    __m256 v;
    if constexpr (std::is_same_v<T, float>)
      v = m;
    else
      v = _mm256_cvtepi32_ps(m);
    v = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(v, _mm256_loadu_ps(mean + q)), _mm256_loadu_ps(scale + q)),
                      _mm256_loadu_ps(offset + q));
    const auto negative = std::uint64_t(unsigned(_mm256_movemask_ps(_mm256_cmp_ps(v, threshold, _CMP_LE_OQ))));
    bits[q / 64] |= negative << (q % 64);
  }
#endif
  for (; q < c; ++q) {
    T m = std::numeric_limits<T>::lowest();
    for (std::size_t t = 0; t < count; ++t) m = std::max(m, taps[t][q]);
    const float y = (as_float(m) - mean[q]) * scale[q] + offset[q];
    if (y <= -FLT_MIN) bits[q / 64] |= std::uint64_t(1) << (q % 64);
  }
}

template <class T>
void pool_norm_sign_images(const T* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                           const window_geometry& g, const float* mean, const float* scale, const float* offset,
                           std::uint64_t* bits) {
  const std::size_t oh = g.output_extent(h, 0), ow = g.output_extent(w, 1), words = (c + 63) / 64;
  const auto lh = static_cast<std::ptrdiff_t>(h), lw = static_cast<std::ptrdiff_t>(w);
  for_item_chunks(n, engine_threads(n * h * w * c), [&](std::size_t b0, std::size_t b1) {
    std::vector<const T*> taps(g.window[0] * g.window[1]);
    for (std::size_t b = b0; b < b1; ++b)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j) {
          std::size_t count = 0;
          for (std::size_t u = 0; u < g.window[0]; ++u) {
            const std::ptrdiff_t y = std::ptrdiff_t(i * g.strides[0] + u) - std::ptrdiff_t(g.pads[0]);
            if (y < 0 || y >= lh) continue;
            for (std::size_t v = 0; v < g.window[1]; ++v) {
              const std::ptrdiff_t xx = std::ptrdiff_t(j * g.strides[1] + v) - std::ptrdiff_t(g.pads[1]);
              if (xx < 0 || xx >= lw) continue;
              taps[count++] = x + ((b * h + std::size_t(y)) * w + std::size_t(xx)) * c;
            }
          }
          pool_norm_sign_pixel(taps.data(), count, c, mean, scale, offset, bits + ((b * oh + i) * ow + j) * words);
        }
  });
}

}  // namespace detail

XQ_DECL void max_pool_batch_norm_sign_bits(const float* x, std::size_t n, std::size_t h, std::size_t w,
                                           std::size_t c, const window_geometry& g, const float* mean,
                                           const float* scale, const float* offset, std::uint64_t* bits) {
  detail::pool_norm_sign_images(x, n, h, w, c, g, mean, scale, offset, bits);
}
XQ_DECL void max_pool_batch_norm_sign_bits(const std::int32_t* acc, std::size_t n, std::size_t h, std::size_t w,
                                           std::size_t c, const window_geometry& g, const float* mean,
                                           const float* scale, const float* offset, std::uint64_t* bits) {
  detail::pool_norm_sign_images(acc, n, h, w, c, g, mean, scale, offset, bits);
}

XQ_DECL void binary_conv2d_pool_norm_sign_bits(const std::uint64_t* x, std::size_t n, std::size_t h, std::size_t w,
                                              std::size_t words, const window_geometry& conv,
                                              const std::uint64_t* weights, std::size_t filters, std::int32_t k,
                                              const window_geometry& pool, const float* mean, const float* scale,
                                              const float* offset, std::uint64_t* bits) {
  const std::size_t oh = conv.output_extent(h, 0), ow = conv.output_extent(w, 1), pixels = oh * ow;
  const std::size_t ph = pool.output_extent(oh, 0), pw = pool.output_extent(ow, 1);
  const std::size_t row_words = conv.window[0] * conv.window[1] * words, out_words = (filters + 63) / 64;
  const bool worth_it =
      double(n * pixels) * double(filters) * double(row_words) >= double(XQ_BINARY_GEMM_PARALLEL_THRESHOLD);
  // Image by image: its sums (pixels x filters int32) stay in L2 for the pooling.
  kernels::parallel_chunks(worth_it && n > 1 ? kernels::max_threads() : 1, n, 1, [&](std::size_t b0, std::size_t b1) {
    std::vector<std::uint64_t> cols(pixels * row_words);
    std::vector<std::int32_t> acc(pixels * filters);
    for (std::size_t b = b0; b < b1; ++b) {
      detail::im2col_rows(x, h, w, words, conv, b * pixels, (b + 1) * pixels, row_words, cols.data());
      binary_gemm(pixels, filters, row_words, k, cols.data(), weights, acc.data());
      detail::pool_norm_sign_images(acc.data(), 1, oh, ow, filters, pool, mean, scale, offset,
                                    bits + b * ph * pw * out_words);
    }
  });
}

XQ_DECL void batch_norm_f32(const float* x, std::size_t elements, const float* mean, const float* scale,
                            const float* offset, std::size_t channels, float* y) {
  detail::batch_norm_values(x, elements, mean, scale, offset, channels, y);
}
XQ_DECL void batch_norm_f32(const std::int32_t* acc, std::size_t elements, const float* mean, const float* scale,
                            const float* offset, std::size_t channels, float* y) {
  detail::batch_norm_values(acc, elements, mean, scale, offset, channels, y);
}

namespace detail {

/// Output channels [f0, f0 + Block) of one output pixel of unit_kernel_conv2d_f32, the
/// sums in registers when Block is a compile-time width (8, 16, 32 or 64 lanes).
template <std::size_t Block>
XQ_ALWAYS_INLINE void unit_kernel_pixel(const float* x, std::size_t h, std::size_t w, std::size_t c,
                                        const window_geometry& g, std::size_t i, std::size_t j, const float* kernel,
                                        std::size_t f, std::size_t f0, std::size_t width, const float* bias, float* y) {
  float acc[Block == 0 ? 1 : Block];
  const std::size_t lanes = Block ? Block : width;
  float* sum = Block ? acc : y;  // a run-time width accumulates in the output row itself
  for (std::size_t q = 0; q < lanes; ++q) sum[q] = 0.0f;
  for (std::size_t u = 0; u < g.window[0]; ++u) {
    const long row = long(i * g.strides[0] + u * g.dilation[0]) - long(g.pads[0]);
    for (std::size_t v = 0; v < g.window[1]; ++v) {
      const long col = long(j * g.strides[1] + v * g.dilation[1]) - long(g.pads[1]);
      const bool inside = row >= 0 && row < long(h) && col >= 0 && col < long(w);
      const float* px = inside ? x + (std::size_t(row) * w + std::size_t(col)) * c : nullptr;
      const float* wr = kernel + (u * g.window[1] + v) * c * f + f0;
      for (std::size_t ch = 0; ch < c; ++ch, wr += f) {
        const float xv = inside ? px[ch] : 0.0f;  // the padding's products are added too, as im2col's zeros are
        XQ_OMP_SIMD
        for (std::size_t q = 0; q < lanes; ++q) sum[q] += xv * wr[q];
      }
    }
  }
  if (bias)
    for (std::size_t q = 0; q < lanes; ++q) y[q] = sum[q] + bias[f0 + q];
  else if (Block)
    for (std::size_t q = 0; q < lanes; ++q) y[q] = sum[q];
}

#if defined(__AVX2__)
/// acc + x * w for w in {-1, 0, 1}: the product is exact, so a fused multiply-add rounds
/// the sum alone, as the separate add does: the same bits in one instruction.
XQ_ALWAYS_INLINE __m256 unit_product_add(__m256 acc, __m256 x, const float* w) {
#if defined(__FMA__)
  return _mm256_fmadd_ps(x, _mm256_loadu_ps(w), acc);
#else
  return _mm256_add_ps(acc, _mm256_mul_ps(x, _mm256_loadu_ps(w)));
#endif
}

/// unit_kernel_pixel<64> in eight AVX registers: the same products (exact) added in the same
/// order, one output channel per lane, so the same bits.
template <>
XQ_ALWAYS_INLINE void unit_kernel_pixel<64>(const float* x, std::size_t h, std::size_t w, std::size_t c,
                                            const window_geometry& g, std::size_t i, std::size_t j,
                                            const float* kernel, std::size_t f, std::size_t f0, std::size_t,
                                            const float* bias, float* y) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (std::size_t u = 0; u < g.window[0]; ++u) {
    const long row = long(i * g.strides[0] + u * g.dilation[0]) - long(g.pads[0]);
    for (std::size_t v = 0; v < g.window[1]; ++v) {
      const long col = long(j * g.strides[1] + v * g.dilation[1]) - long(g.pads[1]);
      const bool inside = row >= 0 && row < long(h) && col >= 0 && col < long(w);
      const float* px = inside ? x + (std::size_t(row) * w + std::size_t(col)) * c : nullptr;
      const float* wr = kernel + (u * g.window[1] + v) * c * f + f0;
      for (std::size_t ch = 0; ch < c; ++ch, wr += f) {
        const __m256 xv = _mm256_set1_ps(inside ? px[ch] : 0.0f);
        a0 = unit_product_add(a0, xv, wr);
        a1 = unit_product_add(a1, xv, wr + 8);
        a2 = unit_product_add(a2, xv, wr + 16);
        a3 = unit_product_add(a3, xv, wr + 24);
        a4 = unit_product_add(a4, xv, wr + 32);
        a5 = unit_product_add(a5, xv, wr + 40);
        a6 = unit_product_add(a6, xv, wr + 48);
        a7 = unit_product_add(a7, xv, wr + 56);
      }
    }
  }
  const __m256 acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
  for (std::size_t r = 0; r < 8; ++r) {
    const __m256 out = bias ? _mm256_add_ps(acc[r], _mm256_loadu_ps(bias + f0 + 8 * r)) : acc[r];
    _mm256_storeu_ps(y + 8 * r, out);
  }
}
#endif

}  // namespace detail

namespace detail {

/// Every output channel of output pixel (i, j) of one image.
inline void unit_kernel_pixel_all(const float* image, std::size_t h, std::size_t w, std::size_t c,
                                  const window_geometry& g, std::size_t i, std::size_t j, const float* kernel,
                                  std::size_t f, const float* bias, float* out) {
  std::size_t f0 = 0;
  for (; f0 + 64 <= f; f0 += 64) unit_kernel_pixel<64>(image, h, w, c, g, i, j, kernel, f, f0, 64, bias, out + f0);
  for (; f0 + 16 <= f; f0 += 16) unit_kernel_pixel<16>(image, h, w, c, g, i, j, kernel, f, f0, 16, bias, out + f0);
  if (f0 < f) unit_kernel_pixel<0>(image, h, w, c, g, i, j, kernel, f, f0, f - f0, bias, out + f0);
}

}  // namespace detail

XQ_DECL void unit_kernel_conv2d_f32(const float* x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                                    const window_geometry& g, const float* kernel, std::size_t f, const float* bias,
                                    float* y) {
  const std::size_t oh = g.output_extent(h, 0), ow = g.output_extent(w, 1);
  detail::for_item_chunks(n, detail::engine_threads(n * oh * ow * f), [&](std::size_t b0, std::size_t b1) {
    for (std::size_t b = b0; b < b1; ++b)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j)
          detail::unit_kernel_pixel_all(x + b * h * w * c, h, w, c, g, i, j, kernel, f, bias,
                                        y + ((b * oh + i) * ow + j) * f);
  });
}

#if XQ_ISA_COMPILED(avx512bw)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx512bw)
namespace detail::stem_avx512 {

XQ_DEFINE_UNROLLED  // this region's own (kernels/unrolled.hpp says why)

/// The conv pixels of one pool window (Taps <= 4 of them, at (rows[t], cols[t])) for the
/// 64 output channels from f0, summed together so that each weight vector is loaded once
/// for every tap: per lane the products unit_kernel_pixel adds (exact: the weights are ±1
/// or 0), in its (kh, kw, c) order from +0, then the bias; then max_of_taps's maximum over
/// the taps in order from the lowest value (VMAXPS(tap, m) is std::max(m, tap), NaN and
/// signed zeros included). The same bits as the two kernels, without the taps' rows.
template <std::size_t Taps>
void pool_window_64(const float* x, std::size_t h, std::size_t w, std::size_t c, const window_geometry& g,
                    const std::size_t* rows, const std::size_t* cols, const float* kernel, std::size_t f,
                    std::size_t f0, const float* bias, float* y) {
  __m512 acc[Taps][4];
  unrolled<Taps>([&](auto t) XQ_INLINE_LAMBDA { unrolled<4>([&](auto k) XQ_INLINE_LAMBDA { acc[t][k] = _mm512_setzero_ps(); }); });
  for (std::size_t u = 0; u < g.window[0]; ++u)
    for (std::size_t v = 0; v < g.window[1]; ++v) {
      const float* px[Taps];
      unrolled<Taps>([&](auto t) XQ_INLINE_LAMBDA {
        const long row = long(rows[t] * g.strides[0] + u * g.dilation[0]) - long(g.pads[0]);
        const long col = long(cols[t] * g.strides[1] + v * g.dilation[1]) - long(g.pads[1]);
        const bool inside = row >= 0 && row < long(h) && col >= 0 && col < long(w);
        px[t] = inside ? x + (std::size_t(row) * w + std::size_t(col)) * c : nullptr;
      });
      const float* wr = kernel + (u * g.window[1] + v) * c * f + f0;
      for (std::size_t ch = 0; ch < c; ++ch, wr += f) {
        __m512 wv[4];
        unrolled<4>([&](auto k) XQ_INLINE_LAMBDA { wv[k] = _mm512_loadu_ps(wr + 16 * k); });
        unrolled<Taps>([&](auto t) XQ_INLINE_LAMBDA {
          const __m512 xv = _mm512_set1_ps(px[t] ? px[t][ch] : 0.0f);  // the padding's products too
          unrolled<4>([&](auto k) XQ_INLINE_LAMBDA { acc[t][k] = _mm512_fmadd_ps(xv, wv[k], acc[t][k]); });
        });
      }
    }
  unrolled<4>([&](auto k) XQ_INLINE_LAMBDA {
    __m512 m = _mm512_set1_ps(std::numeric_limits<float>::lowest());
    const __m512 b = bias ? _mm512_loadu_ps(bias + f0 + 16 * k) : _mm512_setzero_ps();
    unrolled<Taps>([&](auto t) XQ_INLINE_LAMBDA {
      const __m512 tap = bias ? _mm512_add_ps(acc[t][k], b) : acc[t][k];
      m = _mm512_max_ps(tap, m);
    });
    _mm512_storeu_ps(y + 16 * k, m);
  });
}

}  // namespace detail::stem_avx512
XQ_ISA_REGION_END
#endif

XQ_DECL void unit_kernel_conv2d_max_pool_f32(const float* x, std::size_t n, std::size_t h, std::size_t w,
                                             std::size_t c, const window_geometry& conv, const float* kernel,
                                             std::size_t f, const float* bias, const window_geometry& pool, float* y) {
  const std::size_t ch = conv.output_extent(h, 0), cw = conv.output_extent(w, 1);
  const std::size_t ph = pool.output_extent(ch, 0), pw = pool.output_extent(cw, 1);
  const std::size_t taps_max = pool.window[0] * pool.window[1];
  // AVX-512 where the pool window has at most 4 taps and the channels come in blocks of 64.
  const bool wide = taps_max <= 4 && f % 64 == 0 && XQ_ISA_COMPILED(avx512bw) && kernels::isa_usable(kernels::cpu_isa::avx512bw);
  (void)wide;
  detail::for_item_chunks(n, detail::engine_threads(n * ch * cw * f), [&](std::size_t b0, std::size_t b1) {
    std::vector<float> sums(taps_max * f);  // the window's conv pixels, computed where they are needed
    std::vector<const float*> taps(taps_max);
    for (std::size_t b = b0; b < b1; ++b) {
      const float* image = x + b * h * w * c;
      for (std::size_t i = 0; i < ph; ++i)
        for (std::size_t j = 0; j < pw; ++j) {
          std::size_t count = 0;  // max_pool_images's taps, in its order
#if XQ_ISA_COMPILED(avx512bw)
          if (wide) {  // every tap's 64-channel blocks summed together (stem_avx512)
            std::size_t rows[4], cols[4];
            for (std::size_t u = 0; u < pool.window[0]; ++u) {
              const long r = long(i * pool.strides[0] + u) - long(pool.pads[0]);
              if (r < 0 || r >= long(ch)) continue;
              for (std::size_t v = 0; v < pool.window[1]; ++v) {
                const long q = long(j * pool.strides[1] + v) - long(pool.pads[1]);
                if (q < 0 || q >= long(cw)) continue;
                rows[count] = std::size_t(r), cols[count] = std::size_t(q), ++count;
              }
            }
            float* out = y + ((b * ph + i) * pw + j) * f;
            for (std::size_t f0 = 0; f0 < f; f0 += 64) switch (count) {
                case 1: detail::stem_avx512::pool_window_64<1>(image, h, w, c, conv, rows, cols, kernel, f, f0, bias, out + f0); break;
                case 2: detail::stem_avx512::pool_window_64<2>(image, h, w, c, conv, rows, cols, kernel, f, f0, bias, out + f0); break;
                case 3: detail::stem_avx512::pool_window_64<3>(image, h, w, c, conv, rows, cols, kernel, f, f0, bias, out + f0); break;
                case 4: detail::stem_avx512::pool_window_64<4>(image, h, w, c, conv, rows, cols, kernel, f, f0, bias, out + f0); break;
                default: detail::max_of_taps<float>(nullptr, 0, 64, out + f0); break;  // an empty window: the lowest value
              }
            continue;
          }
#endif
          for (std::size_t u = 0; u < pool.window[0]; ++u) {
            const long r = long(i * pool.strides[0] + u) - long(pool.pads[0]);
            if (r < 0 || r >= long(ch)) continue;
            for (std::size_t v = 0; v < pool.window[1]; ++v) {
              const long q = long(j * pool.strides[1] + v) - long(pool.pads[1]);
              if (q < 0 || q >= long(cw)) continue;
              float* at = sums.data() + count * f;
              detail::unit_kernel_pixel_all(image, h, w, c, conv, std::size_t(r), std::size_t(q), kernel, f, bias, at);
              taps[count++] = at;
            }
          }
          detail::max_of_taps(taps.data(), count, f, y + ((b * ph + i) * pw + j) * f);
        }
    }
  });
}

}  // namespace xq::deploy
