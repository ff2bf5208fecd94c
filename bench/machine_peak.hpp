#pragma once
// This core's measured peak, for the benchmarks' "share of peak" counters: a tight loop of
// independent fused multiply-adds (fp32) and of VPDPBUSD (u8 x s8 into int32), timed in the
// benchmark's own process, so a kernel's share is against what this machine did in the same
// run (clock, turbo and the VM's neighbours included), not a data sheet's figure.
//
// Both loops keep 12 accumulators (more than latency x pipes on current x86 cores: 4 x 2 on
// Zen 4, 4 x 2 on Intel) in registers of the widest width the CPU runs, and report
// multiply-adds per second: an fp32 FMA is one multiply-add per lane, a VPDPBUSD four per
// int32 lane. The loops are in ISA regions (xquant's kernels/isa_region.hpp), so a build for
// a generic x86-64 measures the same instructions the engine's kernels run.

#include <chrono>
#include <cstdint>

#include <xquant/kernels/cpu_features.hpp>
#include <xquant/kernels/isa_region.hpp>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace bench_peak {

/// Multiply-adds per second of `run(iterations)` (which does `macs_per_iteration` each), the
/// best of five runs of at least 20 ms.
template <class Run>
double best_rate(Run run, double macs_per_iteration) {
  std::uint64_t iterations = 1 << 16;
  double best = 0;
  for (int trial = 0; trial < 5;) {
    const auto t0 = std::chrono::steady_clock::now();
    run(iterations);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < 0.02) {
      iterations *= 2;
      continue;
    }
    best = std::max(best, double(iterations) * macs_per_iteration / s);
    ++trial;
  }
  return best;
}

#if XQ_ISA_COMPILED(avx512_vnni)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx512_vnni)
namespace zmm {
// `volatile` seeds keep the compiler from folding the loop; the sums escape through `sink`.
inline void fma_loop(std::uint64_t n, float* sink) {
  volatile float seed = 1.0f;
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(seed * 1e-7f);
  __m512 acc[12];
  for (auto& v : acc) v = _mm512_set1_ps(seed);
  for (std::uint64_t i = 0; i < n; ++i)
    for (auto& v : acc) v = _mm512_fmadd_ps(v, m, a);
  __m512 s = acc[0];
  for (int r = 1; r < 12; ++r) s = _mm512_add_ps(s, acc[r]);
  *sink = _mm512_reduce_add_ps(s);
}
inline void dpbusd_loop(std::uint64_t n, std::int32_t* sink) {
  volatile int seed = 3;
  const __m512i a = _mm512_set1_epi32(seed), b = _mm512_set1_epi32(seed * 5);
  __m512i acc[12];
  for (auto& v : acc) v = _mm512_setzero_si512();
  for (std::uint64_t i = 0; i < n; ++i)
    for (auto& v : acc) v = _mm512_dpbusd_epi32(v, a, b);
  __m512i s = acc[0];
  for (int r = 1; r < 12; ++r) s = _mm512_add_epi32(s, acc[r]);
  *sink = _mm512_reduce_add_epi32(s);
}
}  // namespace zmm
XQ_ISA_REGION_END
#endif

#if XQ_ISA_COMPILED(avx2)
XQ_ISA_REGION_BEGIN(XQ_ISA_TARGET_avx2)
namespace ymm {
inline void fma_loop(std::uint64_t n, float* sink) {
  volatile float seed = 1.0f;
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(seed * 1e-7f);
  __m256 acc[12];
  for (auto& v : acc) v = _mm256_set1_ps(seed);
  for (std::uint64_t i = 0; i < n; ++i)
    for (auto& v : acc) v = _mm256_fmadd_ps(v, m, a);
  alignas(32) float out[8];
  __m256 s = acc[0];
  for (int r = 1; r < 12; ++r) s = _mm256_add_ps(s, acc[r]);
  _mm256_store_ps(out, s);
  *sink = out[0];
}
}  // namespace ymm
XQ_ISA_REGION_END
#endif

/// fp32 multiply-adds per second at the widest vector this CPU runs (0 where none).
inline double fp32_fma_peak() {
  static const double peak = [] {
    float sink = 0;
#if XQ_ISA_COMPILED(avx512_vnni)
    if (xq::kernels::cpu().has(xq::kernels::cpu_isa::avx512bw))
      return best_rate([&](std::uint64_t n) { zmm::fma_loop(n, &sink); }, 12.0 * 16);
#endif
#if XQ_ISA_COMPILED(avx2)
    if (xq::kernels::cpu().has(xq::kernels::cpu_isa::avx2))
      return best_rate([&](std::uint64_t n) { ymm::fma_loop(n, &sink); }, 12.0 * 8);
#endif
    return 0.0;
  }();
  return peak;
}

/// u8 x s8 multiply-adds per second by VPDPBUSD on 512-bit vectors (0 without AVX-512 VNNI).
inline double vnni_peak() {
  static const double peak = [] {
    std::int32_t sink = 0;
#if XQ_ISA_COMPILED(avx512_vnni)
    if (xq::kernels::cpu().has(xq::kernels::cpu_isa::avx512_vnni))
      return best_rate([&](std::uint64_t n) { zmm::dpbusd_loop(n, &sink); }, 12.0 * 64);
#endif
    return 0.0;
  }();
  return peak;
}

}  // namespace bench_peak
