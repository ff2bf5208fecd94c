// The integer engine's block-scaled product (include/xquant/deploy/engine/block_scaled_gemm.hpp):
// the packing round trip for int4, FP4 (E2M1 x 2) and int8 weights; the kernel of this build
// (AVX-512 VNNI, AVX-VNNI, AVX2 or portable) against the scalar oracle bit for bit on ragged
// shapes, block sizes and zero points, on 1 and 2 threads; the extreme operands at the
// largest block (no overflow, exact integers); and the oracle against a double-precision sum
// within the float rounding its order allows.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include <xquant/deploy/engine/block_scaled_gemm.hpp>

#include "engine_checks.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using xq::deploy::block_element;
using xq::deploy::block_scaled_activations;
using xq::deploy::packed_block_scaled_matrix;

/// Runs f with 1 thread and with 2 (where OpenMP is on).
template <class F>
void on_one_and_two_threads(F&& f) {
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  for (int t : {1, 2}) {
    omp_set_num_threads(t);
    f();
  }
  omp_set_num_threads(saved);
#else
  f();
#endif
}

/// Random integers of the kind: int4 -8..7, E2M1 x 2, int8 -128..127.
std::vector<std::int8_t> random_weights(std::size_t count, block_element kind, std::mt19937& rng) {
  static constexpr int fp4[] = {0, 1, 2, 3, 4, 6, 8, 12, -1, -2, -3, -4, -6, -8, -12};
  std::vector<std::int8_t> w(count);
  for (auto& v : w) {
    switch (kind) {
      case block_element::int4: v = std::int8_t(int(rng() % 16) - 8); break;
      case block_element::fp4_e2m1: v = std::int8_t(fp4[rng() % 15]); break;
      default: v = std::int8_t(int(rng() % 256) - 128); break;
    }
  }
  return w;
}

std::vector<float> random_scales(std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> e(-8.0f, 2.0f);
  std::vector<float> s(count);
  for (auto& v : s) v = std::exp2(e(rng)) * (rng() % 7 == 0 ? -1.0f : 1.0f);
  return s;
}

/// One random problem: codes, zero points, scales (per token or per block) and weights.
struct problem {
  std::size_t m, n, k, block, blocks;
  block_element kind;
  std::vector<std::uint8_t> codes;
  std::vector<std::int32_t> za;
  std::vector<float> sa, sb;
  std::vector<std::int8_t> w;
  bool per_token;

  problem(std::size_t m_, std::size_t n_, std::size_t k_, std::size_t block_, block_element kind_, bool per_token_,
          std::mt19937& rng)
      : m(m_), n(n_), k(k_), block(block_), blocks((k_ + block_ - 1) / block_), kind(kind_), per_token(per_token_) {
    codes.resize(m * k);
    for (auto& v : codes) v = std::uint8_t(rng() % 256);
    za.resize(m);
    for (auto& v : za) v = std::int32_t(rng() % 256);
    sa = random_scales(per_token ? m : m * blocks, rng);
    sb = random_scales(blocks * n, rng);
    w = random_weights(k * n, kind, rng);
  }
  block_scaled_activations activations() const {
    block_scaled_activations a;
    a.codes = codes.data();
    a.ld = k;
    a.zero_points = za.data();
    a.scales = sa.data();
    a.scale_row_stride = per_token ? 1 : blocks;
    a.scale_block_stride = per_token ? 0 : 1;
    return a;
  }
  packed_block_scaled_matrix packed() const { return packed_block_scaled_matrix(w.data(), k, n, kind, block, sb.data()); }
  std::vector<float> oracle() const {
    std::vector<float> c(m * n, -1.0f);
    xq::deploy::block_scaled_gemm_reference(m, n, k, block, activations(), w.data(), sb.data(), c.data());
    return c;
  }
  std::vector<float> kernel(const packed_block_scaled_matrix& p) const {
    std::vector<float> c(m * n, -1.0f);
    xq::deploy::block_scaled_gemm(m, activations(), p, c.data());
    return c;
  }
};

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("block_scaled_gemm: packing round trip and storage", "[deploy][block_scaled_gemm]") {
  std::mt19937 rng(11);
  for (block_element kind : {block_element::int4, block_element::fp4_e2m1, block_element::int8})
    for (std::size_t k : {1u, 7u, 8u, 33u, 100u})
      for (std::size_t n : {1u, 15u, 16u, 37u}) {
        const std::vector<std::int8_t> w = random_weights(k * n, kind, rng);
        const std::size_t block = 16, blocks = (k + block - 1) / block;
        const std::vector<float> sb = random_scales(blocks * n, rng);
        const packed_block_scaled_matrix p(w.data(), k, n, kind, block, sb.data());
        CHECK(p.unpack() == w);
        CHECK(p.blocks() == blocks);
        for (std::size_t b = 0; b < blocks; ++b)
          for (std::size_t j = 0; j < n; ++j) {
            std::int32_t sum = 0;
            for (std::size_t kk = b * block; kk < std::min(k, b * block + block); ++kk) sum += w[kk * n + j];
            CHECK(p.column_sum(b, j) == sum);
            CHECK(p.scale(b, j) == sb[b * n + j]);
          }
        // 4-bit: the codes really are two per byte, in panels of 16 columns and 8 k.
        if (kind != block_element::int8) {
          CHECK(p.data().size() == p.panels() * ((k + 7) / 8 * 8) * 16 / 2);
          // The same matrix from torchao's order (N rows of K/2 bytes, low nibble = even k).
          std::vector<std::uint8_t> nibbles(n * ((k + 1) / 2), 0);
          for (std::size_t kk = 0; kk < k; ++kk)
            for (std::size_t j = 0; j < n; ++j) {
              const int v = w[kk * n + j];
              int code = v & 0x0F;
              if (kind == block_element::fp4_e2m1) {
                static constexpr int mag[] = {0, 1, 2, 3, 4, 6, 8, 12};
                code = 0;
                for (int c = 0; c < 8; ++c)
                  if (mag[c] == std::abs(v)) code = c;
                if (v < 0) code |= 8;
              }
              nibbles[j * ((k + 1) / 2) + kk / 2] |= std::uint8_t(code << (kk % 2 ? 4 : 0));
            }
          const packed_block_scaled_matrix q =
              packed_block_scaled_matrix::from_nibbles(nibbles.data(), k, n, kind, block, sb.data());
          CHECK(q.data() == p.data());
        }
      }

  // What a file stores: codes at their width plus scales at the caller's width.
  const std::size_t k = 256, n = 64;
  std::vector<std::int8_t> w(k * n, 1);
  std::vector<float> sb(k * n, 1.0f);
  CHECK(packed_block_scaled_matrix(w.data(), k, n, block_element::int4, 32, sb.data()).bits_per_value() == 5.0);
  CHECK(packed_block_scaled_matrix(w.data(), k, n, block_element::fp4_e2m1, 32, sb.data(), 8).bits_per_value() ==
        4.25);
  CHECK(packed_block_scaled_matrix(w.data(), k, n, block_element::fp4_e2m1, 16, sb.data(), 8).bits_per_value() ==
        4.5);
  CHECK(packed_block_scaled_matrix(w.data(), k, n, block_element::int8, 32, sb.data()).storage_bytes() ==
        k * n + (k / 32) * n * 4);

  // What the kinds cannot hold, and blocks the layout cannot take.
  std::vector<std::int8_t> bad(k * n, 8);
  CHECK_THROWS_AS(packed_block_scaled_matrix(bad.data(), k, n, block_element::int4, 32, sb.data()),
                  std::invalid_argument);
  std::fill(bad.begin(), bad.end(), std::int8_t(5));  // 2.5 is not an E2M1 value
  CHECK_THROWS_AS(packed_block_scaled_matrix(bad.data(), k, n, block_element::fp4_e2m1, 32, sb.data()),
                  std::invalid_argument);
  CHECK_THROWS_AS(packed_block_scaled_matrix(w.data(), k, n, block_element::int4, 12, sb.data()),
                  std::invalid_argument);
  CHECK_THROWS_AS(packed_block_scaled_matrix(w.data(), k, n, block_element::int8, 6, sb.data()),
                  std::invalid_argument);
  CHECK_THROWS_AS(packed_block_scaled_matrix(w.data(), k, n, block_element::int8, 1024, sb.data()),
                  std::invalid_argument);
  CHECK_NOTHROW(packed_block_scaled_matrix(w.data(), k, n, block_element::int8, 4, sb.data()));
}

TEST_CASE("block_scaled_gemm: every kernel equals the oracle bit for bit", "[deploy][block_scaled_gemm]") {
  std::mt19937 rng(2024);
  int cases = 0;
  for (block_element kind : {block_element::int4, block_element::fp4_e2m1, block_element::int8})
    for (std::size_t block : {16u, 32u, 128u})
      for (int trial = 0; trial < 12; ++trial) {
        // Ragged everything: K under one block, K not a multiple of 4 or 8, m not a whole
        // number of tiles, n not a whole number of panels.
        const std::size_t m = 1 + rng() % 21, n = 1 + rng() % 41;
        const std::size_t k = trial < 3 ? 1 + rng() % block : 1 + rng() % 400;
        const problem pr(m, n, k, block, kind, trial % 2 == 0, rng);
        const packed_block_scaled_matrix p = pr.packed();
        const std::vector<float> want = pr.oracle();
        deploy_test::on_every_isa([&](xq::kernels::cpu_isa isa) {
          // Under each cap the kernel of that instruction set runs (AVX-512BW has none of its own).
          if (isa != xq::kernels::cpu_isa::avx512bw && isa != xq::kernels::cpu_isa::avx512_vpopcntdq)
            CHECK(xq::deploy::block_scaled_gemm_isa() == isa);
          on_one_and_two_threads([&] {
            INFO("kind " << int(kind) << " block " << block << " m " << m << " n " << n << " k " << k);
            CHECK(same_bits(pr.kernel(p), want));
          });
        });
        ++cases;
      }
  // int8 allows blocks of 4, 12, ...: a block shorter than the kernel's 8-k step.
  for (std::size_t block : {4u, 12u}) {
    const problem pr(13, 19, 53, block, block_element::int8, false, rng);
    deploy_test::on_every_isa([&](xq::kernels::cpu_isa) { CHECK(same_bits(pr.kernel(pr.packed()), pr.oracle())); });
  }
  CHECK(cases == 108);
}

TEST_CASE("block_scaled_gemm: threads do not change the bits", "[deploy][block_scaled_gemm]") {
  // m * n * K = 9.8Mi multiply-adds, above XQ_INTEGER_GEMM_PARALLEL_THRESHOLD (8Mi): the
  // split runs on two threads where OpenMP and the idle cores allow it.
  std::mt19937 rng(7);
  for (block_element kind : {block_element::int4, block_element::int8}) {
    const problem pr(203, 161, 317, 32, kind, true, rng);
    REQUIRE(double(pr.m) * double(pr.n) * double(pr.k) >= double(XQ_INTEGER_GEMM_PARALLEL_THRESHOLD));
    const packed_block_scaled_matrix p = pr.packed();
    const std::vector<float> want = pr.oracle();
    std::vector<std::vector<float>> got;
    on_one_and_two_threads([&] { got.push_back(pr.kernel(p)); });
    for (const auto& g : got) CHECK(same_bits(g, want));
  }
}

TEST_CASE("block_scaled_gemm: extreme operands at the largest block", "[deploy][block_scaled_gemm]") {
  // a = 255 with za = 0, and a = 0 with za = 255, against the most negative weight of each
  // kind, block = max_block = 512: |D| = 255 * 128 * 512 = 16,711,680 < 2^24 per block (for
  // int8), exact in int32 and in float. K = 8 * 512 + 300: nine blocks, the last short. With
  // all scales 1 every partial float sum here is exact, so C is known exactly.
  constexpr std::size_t block = packed_block_scaled_matrix::max_block, k = 8 * block + 300, m = 3, n = 21;
  for (block_element kind : {block_element::int4, block_element::fp4_e2m1, block_element::int8}) {
    const int wmin = kind == block_element::int4 ? -8 : kind == block_element::fp4_e2m1 ? -12 : -128;
    for (int flip : {0, 1}) {
      std::vector<std::uint8_t> codes(m * k, std::uint8_t(flip ? 0 : 255));
      std::vector<std::int32_t> za(m, flip ? 255 : 0);
      std::vector<float> sa(m, 1.0f), sb(((k + block - 1) / block) * n, 1.0f);
      std::vector<std::int8_t> w(k * n, std::int8_t(wmin));
      block_scaled_activations a;
      a.codes = codes.data();
      a.ld = k;
      a.zero_points = za.data();
      a.scales = sa.data();
      const packed_block_scaled_matrix p(w.data(), k, n, kind, block, sb.data());
      std::vector<float> fast(m * n), slow(m * n);
      xq::deploy::block_scaled_gemm_reference(m, n, k, block, a, w.data(), sb.data(), slow.data());
      // Every term is 255 * wmin * (block length), with the sign of a - za.
      const double expected = (flip ? -1.0 : 1.0) * 255.0 * double(wmin) * double(k);
      deploy_test::on_every_isa([&](xq::kernels::cpu_isa) {
        std::fill(fast.begin(), fast.end(), -1.0f);
        xq::deploy::block_scaled_gemm(m, a, p, fast.data());
        CHECK(same_bits(fast, slow));
        for (float v : fast) CHECK(double(v) == expected);
      });
    }
  }
}

TEST_CASE("block_scaled_gemm: the oracle against a double-precision sum", "[deploy][block_scaled_gemm]") {
  // The float order rounds s = sa * sb once and each fma once: over B blocks the error is at
  // most (B + 2) * 2^-24 * sum_b |sa * sb * D_b| (first order).
  std::mt19937 rng(99);
  for (block_element kind : {block_element::int4, block_element::fp4_e2m1, block_element::int8})
    for (std::size_t block : {16u, 32u, 128u}) {
      const problem pr(9, 23, 1 + rng() % 1000, block, kind, false, rng);
      const std::vector<float> c = pr.oracle();
      for (std::size_t i = 0; i < pr.m; ++i)
        for (std::size_t j = 0; j < pr.n; ++j) {
          double sum = 0, magnitude = 0;
          for (std::size_t b = 0; b < pr.blocks; ++b) {
            double d = 0;
            for (std::size_t kk = b * block; kk < std::min(pr.k, b * block + block); ++kk)
              d += (double(pr.codes[i * pr.k + kk]) - double(pr.za[i])) * double(pr.w[kk * pr.n + j]);
            const double t = double(pr.sa[i * pr.blocks + b]) * double(pr.sb[b * pr.n + j]) * d;
            sum += t;
            magnitude += std::abs(t);
          }
          const double tolerance = double(pr.blocks + 2) * std::ldexp(1.0, -24) * magnitude;
          CHECK(std::abs(double(c[i * pr.n + j]) - sum) <= tolerance);
        }
    }
}

TEST_CASE("block_scaled_gemm: FP4 x FP4 as integers (NVFP4's W4A4)", "[deploy][block_scaled_gemm]") {
  // Activations and weights E2M1: a = 2 v + 12 with za = 12, w = 2 u, the 1/4 in the scale.
  static constexpr float e2m1[] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  std::mt19937 rng(5);
  constexpr std::size_t m = 5, n = 18, k = 48, block = 16, blocks = k / block;
  std::vector<float> x(m * k), wf(k * n);
  for (auto& v : x) v = e2m1[rng() % 15];
  for (auto& v : wf) v = e2m1[rng() % 15];
  std::vector<std::uint8_t> codes(m * k);
  for (std::size_t t = 0; t < m * k; ++t) codes[t] = std::uint8_t(2 * x[t] + 12);
  std::vector<std::int8_t> w(k * n);
  for (std::size_t t = 0; t < k * n; ++t) w[t] = std::int8_t(2 * wf[t]);
  std::vector<std::int32_t> za(m, 12);
  std::vector<float> sa(m, 0.25f), sb(blocks * n, 1.0f);  // block scales 1: exact sums
  block_scaled_activations a;
  a.codes = codes.data();
  a.ld = k;
  a.zero_points = za.data();
  a.scales = sa.data();
  const packed_block_scaled_matrix p(w.data(), k, n, block_element::fp4_e2m1, block, sb.data(), 8);
  std::vector<float> c(m * n);
  xq::deploy::block_scaled_gemm(m, a, p, c.data());
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double want = 0;
      for (std::size_t kk = 0; kk < k; ++kk) want += double(x[i * k + kk]) * double(wf[kk * n + j]);
      CHECK(double(c[i * n + j]) == want);
    }
}

TEST_CASE("block_scaled_gemm: bad activations", "[deploy][block_scaled_gemm]") {
  std::mt19937 rng(1);
  problem pr(4, 5, 40, 16, block_element::int4, true, rng);
  const packed_block_scaled_matrix p = pr.packed();
  pr.za[2] = 256;
  std::vector<float> c(pr.m * pr.n);
  CHECK_THROWS_AS(xq::deploy::block_scaled_gemm(pr.m, pr.activations(), p, c.data()), std::invalid_argument);
  pr.za[2] = -1;
  CHECK_THROWS_AS(xq::deploy::block_scaled_gemm(pr.m, pr.activations(), p, c.data()), std::invalid_argument);
  pr.za[2] = 3;
  block_scaled_activations short_rows = pr.activations();
  short_rows.ld = pr.k - 1;
  CHECK_THROWS_AS(xq::deploy::block_scaled_gemm(pr.m, short_rows, p, c.data()), std::invalid_argument);
  CHECK_THROWS_AS(p.value(40, 0), std::out_of_range);
}
