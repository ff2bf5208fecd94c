// No include guard: the members every 256-bit `ops` of integer_gemm.ipp shares (AVX2's and
// AVX-VNNI's), included inside each struct, in its ISA region: a panel of 16 int32 lanes
// is two ymm registers.

static XQ_ALWAYS_INLINE reg load_w(const std::int8_t* b, std::size_t i) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b) + i);
}
static XQ_ALWAYS_INLINE reg load_bias(const std::int32_t* b, std::size_t i) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 8 * i));
}
static XQ_ALWAYS_INLINE void store(std::int32_t* c, reg v, std::size_t lanes) {
  if (lanes == 8) return _mm256_storeu_si256(reinterpret_cast<__m256i*>(c), v);
  alignas(32) std::int32_t t[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(t), v);
  std::memcpy(c, t, lanes * sizeof(std::int32_t));
}
// requantize_float_row's arithmetic: float(v) * m, clamped to +-2147483520, converted in the
// current rounding mode (round_float), clamped to [lo, hi]. m is read only for `lanes` lanes.
static XQ_ALWAYS_INLINE void store_requantized(std::int16_t* out, reg v, const float* m, std::int32_t lo,
                                               std::int32_t hi, std::size_t lanes) {
  alignas(32) float mt[8] = {};
  const float* mp = m;
  if (lanes < 8) mp = static_cast<const float*>(std::memcpy(mt, m, lanes * sizeof(float)));
  __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_loadu_ps(mp));
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(2147483520.0f)), _mm256_set1_ps(-2147483520.0f));
  const __m256i q = _mm256_max_epi32(_mm256_min_epi32(_mm256_cvtps_epi32(x), _mm256_set1_epi32(hi)), _mm256_set1_epi32(lo));
  const __m128i packed = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  if (lanes == 8) return _mm_storeu_si128(reinterpret_cast<__m128i*>(out), packed);
  alignas(16) std::int16_t t[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(t), packed);
  std::memcpy(out, t, lanes * sizeof(std::int16_t));
}
