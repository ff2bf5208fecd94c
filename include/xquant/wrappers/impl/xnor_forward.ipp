#pragma once
/// \file xnor_forward.ipp
/// xnor_forward.hpp's code.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

#include "../../kernels/binary_gemm.hpp"
#include "../xnor_forward.hpp"

namespace xq::detail {

XQ_DECL bool pack_exact_signs(const float* x, std::size_t rows, std::size_t row_length, std::uint64_t* bits) {
  const std::size_t words = (row_length + 63) / 64;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = x + r * row_length;
    std::uint64_t* out = bits + r * words;
    std::fill(out, out + words, std::uint64_t(0));
    std::size_t e = 0;
    // A whole vector per step: its lanes are one aligned run of bits in one word.
#if defined(__AVX512F__)
    const __m512 plus = _mm512_set1_ps(1.0f), minus = _mm512_set1_ps(-1.0f);
    for (; e + 16 <= row_length; e += 16) {
      const __m512 v = _mm512_loadu_ps(row + e);
      const __mmask16 negative = _mm512_cmp_ps_mask(v, minus, _CMP_EQ_OQ);
      if (__mmask16(negative | _mm512_cmp_ps_mask(v, plus, _CMP_EQ_OQ)) != __mmask16(0xffff)) return false;
      out[e / 64] |= std::uint64_t(negative) << (e % 64);
    }
#elif defined(__AVX__)
    const __m256 plus = _mm256_set1_ps(1.0f), minus = _mm256_set1_ps(-1.0f);
    for (; e + 8 <= row_length; e += 8) {
      const __m256 v = _mm256_loadu_ps(row + e);
      const __m256 negative = _mm256_cmp_ps(v, minus, _CMP_EQ_OQ);
      if (_mm256_movemask_ps(_mm256_or_ps(negative, _mm256_cmp_ps(v, plus, _CMP_EQ_OQ))) != 0xff) return false;
      out[e / 64] |= std::uint64_t(unsigned(_mm256_movemask_ps(negative))) << (e % 64);
    }
#endif
    for (; e < row_length; ++e) {
      if (row[e] == -1.0f) out[e / 64] |= std::uint64_t(1) << (e % 64);
      else if (row[e] != 1.0f) return false;
    }
  }
  return true;
}

/// The ±1 matrix k (rows x columns, row-major: a kernel with its outputs last) packed per
/// column, the binary engine's weight rows: column j's row p = s * segment + i (segment s,
/// a kernel tap, of `segment` rows, its input channels) is bit i % 64 of word
/// s * ceil(segment / 64) + i / 64 of out's row j. False when a value is not ±1. Columns
/// are taken 16 at a time, without branches on the values: the signs of a latent kernel
/// are random, and a branch per value (mispredicted half the time) cost more than the
/// product it feeds (3 ms a step on the BNN's 6272 x 256 dense kernel).
inline bool pack_sign_columns(const float* k, std::size_t rows, std::size_t columns, std::size_t segment,
                              std::uint64_t* out) {
  constexpr std::size_t lanes = 16;
  const std::size_t wps = (segment + 63) / 64, segments = segment ? rows / segment : 0, words = segments * wps;
  bool ok = true;
  for (std::size_t j0 = 0; j0 < columns; j0 += lanes) {
    const std::size_t width = std::min(lanes, columns - j0);
    for (std::size_t s = 0; s < segments; ++s)
      for (std::size_t w = 0; w < wps; ++w) {
        std::uint64_t acc[lanes] = {};
        const std::size_t first = s * segment + w * 64, count = std::min<std::size_t>(64, segment - w * 64);
        std::size_t b = 0;
#if defined(__AVX512F__)
        // One compare per 16 columns, the mask OR-ed into bit b of 8 + 8 u64 lanes.
        if (width == lanes) {
          __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
          const __m512 plus = _mm512_set1_ps(1.0f), minus = _mm512_set1_ps(-1.0f);
          __mmask16 all = 0xffff;
          for (; b < count; ++b) {
            const __m512 v = _mm512_loadu_ps(k + (first + b) * columns + j0);
            const __mmask16 negative = _mm512_cmp_ps_mask(v, minus, _CMP_EQ_OQ);
            all &= __mmask16(negative | _mm512_cmp_ps_mask(v, plus, _CMP_EQ_OQ));
            const __m512i bit = _mm512_set1_epi64(static_cast<long long>(std::uint64_t(1) << b));
            lo = _mm512_mask_or_epi64(lo, __mmask8(negative & 0xff), lo, bit);
            hi = _mm512_mask_or_epi64(hi, __mmask8(negative >> 8), hi, bit);
          }
          ok &= all == __mmask16(0xffff);
          _mm512_storeu_si512(acc, lo);
          _mm512_storeu_si512(acc + 8, hi);
        }
#endif
        for (; b < count; ++b) {
          const float* row = k + (first + b) * columns + j0;
          if (width == lanes) {
            for (std::size_t j = 0; j < lanes; ++j) {
              const bool negative = row[j] == -1.0f;
              ok &= negative | (row[j] == 1.0f);
              acc[j] |= std::uint64_t(negative) << b;
            }
          } else {
            for (std::size_t j = 0; j < width; ++j) {
              const bool negative = row[j] == -1.0f;
              ok &= negative | (row[j] == 1.0f);
              acc[j] |= std::uint64_t(negative) << b;
            }
          }
        }
        if (!ok) return false;
        for (std::size_t j = 0; j < width; ++j) out[(j0 + j) * words + s * wps + w] = acc[j];
      }
  }
  return true;
}

XQ_DECL std::optional<tensor> xnor_conv2d_sums(const tensor& x, const tensor& kernel, const window2d& g) {
  const std::size_t taps = g.k_h * g.k_w, C = g.channels, F = kernel.shape()[3];
  const std::size_t wpp = (C + 63) / 64, words_per_row = taps * wpp;
  // The kernel first: it is small, and a float kernel is the usual way out.
  std::vector<std::uint64_t> weights(F * words_per_row);
  if (!pack_sign_columns(kernel.data(), taps * C, F, C, weights.data())) return std::nullopt;
  if (g.out_h == 0 || g.out_w == 0 || g.batch == 0) return std::nullopt;
  // Not value-initialized: a float input is found out on its first row.
  const std::size_t pixels = g.batch * g.in_h * g.in_w;
  const std::unique_ptr<std::uint64_t[]> bits(new std::uint64_t[pixels * wpp]);
  if (!pack_exact_signs(x.data(), pixels, C, bits.get())) return std::nullopt;
  // The window's bits per output pixel, (kh, kw, word) order, all-zero words (+1) on the
  // padding; about 1 MiB of them at a time (whole images), still in cache for the product.
  const std::size_t rows_per_image = g.out_h * g.out_w, image_words = rows_per_image * words_per_row;
  const std::size_t images = std::min(g.batch, std::max<std::size_t>(1, (std::size_t(1) << 17) / image_words));
  std::vector<std::uint64_t> cols(images * image_words);
  std::vector<std::int32_t> acc(g.out_pixels() * F);
  for (std::size_t n0 = 0; n0 < g.batch; n0 += images) {
    const std::size_t count = std::min(images, g.batch - n0);
    std::fill(cols.begin(), cols.end(), std::uint64_t(0));
    for (std::size_t n = 0; n < count; ++n)
      for (std::size_t oh = 0; oh < g.out_h; ++oh)
        for (std::size_t ow = 0; ow < g.out_w; ++ow) {
          std::uint64_t* row = cols.data() + ((n * g.out_h + oh) * g.out_w + ow) * words_per_row;
          for (std::size_t u = 0; u < g.k_h; ++u) {
            const auto ih = std::ptrdiff_t(oh * g.stride_h + u * g.dilation_h) - std::ptrdiff_t(g.pad_top);
            if (ih < 0 || ih >= std::ptrdiff_t(g.in_h)) continue;
            for (std::size_t v = 0; v < g.k_w; ++v) {
              const auto iw = std::ptrdiff_t(ow * g.stride_w + v * g.dilation_w) - std::ptrdiff_t(g.pad_left);
              if (iw < 0 || iw >= std::ptrdiff_t(g.in_w)) continue;
              const std::uint64_t* src =
                  bits.get() + (((n0 + n) * g.in_h + std::size_t(ih)) * g.in_w + std::size_t(iw)) * wpp;
              std::copy(src, src + wpp, row + (u * g.k_w + v) * wpp);
            }
          }
        }
    kernels::binary_gemm(count * rows_per_image, F, words_per_row, std::int32_t(taps * C), cols.data(),
                         weights.data(), acc.data() + n0 * rows_per_image * F);
  }
  tensor sums = tensor::from_shape({g.batch, g.out_h, g.out_w, F});
  std::transform(acc.begin(), acc.end(), sums.begin(), [](std::int32_t s) { return float(s); });
  return sums;
}

XQ_DECL std::optional<tensor> xnor_dense_sums(const tensor& x, const tensor& kernel) {
  const std::size_t in = kernel.shape()[0], out = kernel.shape()[1], words = (in + 63) / 64;
  const std::size_t rows = in ? x.size() / in : 0;
  std::vector<std::uint64_t> weights(out * words);  // one row of words per output
  if (!pack_sign_columns(kernel.data(), in, out, in, weights.data())) return std::nullopt;
  const std::unique_ptr<std::uint64_t[]> bits(new std::uint64_t[rows * words]);
  if (!pack_exact_signs(x.data(), rows, in, bits.get())) return std::nullopt;
  std::vector<std::int32_t> acc(rows * out);
  kernels::binary_gemm(rows, out, words, std::int32_t(in), bits.get(), weights.data(), acc.data());
  tensor::shape_type shape = x.shape();
  shape.back() = out;
  tensor sums = tensor::from_shape(shape);
  std::transform(acc.begin(), acc.end(), sums.begin(), [](std::int32_t s) { return float(s); });
  return sums;
}

}  // namespace xq::detail
