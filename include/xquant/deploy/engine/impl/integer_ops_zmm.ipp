// No include guard: the members every 512-bit `ops` of integer_gemm.ipp shares (AVX-512BW's
// and AVX-512 VNNI's), included inside each struct, in its ISA region: a panel of 16 int32
// lanes is one zmm register, partial panels masked.

static XQ_ALWAYS_INLINE reg load_w(const std::int8_t* b, std::size_t) { return _mm512_loadu_si512(b); }
static XQ_ALWAYS_INLINE reg load_bias(const std::int32_t* b, std::size_t) { return _mm512_loadu_si512(b); }
static XQ_ALWAYS_INLINE void store(std::int32_t* c, reg v, std::size_t lanes) {
  _mm512_mask_storeu_epi32(c, __mmask16((1u << lanes) - 1u), v);
}
// requantize_float_row's arithmetic, 16 lanes (integer_ops_ymm.ipp).
static XQ_ALWAYS_INLINE void store_requantized(std::int16_t* out, reg v, const float* m, std::int32_t lo,
                                               std::int32_t hi, std::size_t lanes) {
  const __mmask16 k = __mmask16((1u << lanes) - 1u);
  __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_maskz_loadu_ps(k, m));
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(2147483520.0f)), _mm512_set1_ps(-2147483520.0f));
  const __m512i q = _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(x), _mm512_set1_epi32(hi)), _mm512_set1_epi32(lo));
  _mm256_mask_storeu_epi16(out, k, _mm512_cvtepi32_epi16(q));
}
