// The integer engine's fast kernels (include/xquant/deploy/integer_gemm.hpp, binary_gemm.hpp,
// engine_kernels.hpp) against their scalar references and against the straightforward loops
// of integer_model.ipp they replace: the same integers, and for the float kernels the same
// bits, on random data, ragged shapes and the extreme operands the lowering admits.

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <xquant/deploy/binary_gemm.hpp>
#include <xquant/deploy/engine_kernels.hpp>
#include <xquant/deploy/integer_gemm.hpp>
#include <xquant/deploy/integer_model.hpp>
#include "engine_checks.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using xq::deploy::window_geometry;

std::vector<std::int16_t> random_s16(std::size_t n, int lo, int hi, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<std::int16_t> v(n);
  for (auto& x : v) x = static_cast<std::int16_t>(d(rng));
  return v;
}

/// Runs f with 1 thread and with 2 (where OpenMP is on): the kernels' results must not
/// depend on it.
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

window_geometry geometry(std::size_t kh, std::size_t kw, std::size_t stride, std::size_t dilation,
                         std::array<std::size_t, 4> pads) {
  window_geometry g;
  g.window = {kh, kw};
  g.strides = {stride, stride};
  g.dilation = {dilation, dilation};
  g.pads = pads;
  return g;
}

/// The plain im2col (integer_model.ipp's detail::im2col_s16, on raw pointers).
template <class T>
std::vector<T> plain_im2col(const std::vector<T>& x, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                            const window_geometry& g, std::size_t lda) {
  const std::size_t oh = g.output_extent(h, 0), ow = g.output_extent(w, 1);
  std::vector<T> cols(n * oh * ow * lda, T(0));
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j)
        for (std::size_t u = 0; u < g.window[0]; ++u)
          for (std::size_t v = 0; v < g.window[1]; ++v) {
            const long y = long(i * g.strides[0] + u * g.dilation[0]) - long(g.pads[0]);
            const long xx = long(j * g.strides[1] + v * g.dilation[1]) - long(g.pads[1]);
            if (y < 0 || y >= long(h) || xx < 0 || xx >= long(w)) continue;
            for (std::size_t ch = 0; ch < c; ++ch)
              cols[((b * oh + i) * ow + j) * lda + (u * g.window[1] + v) * c + ch] =
                  x[((b * h + std::size_t(y)) * w + std::size_t(xx)) * c + ch];
          }
  return cols;
}

/// integer_model.ipp's float-bias epilogue loop.
std::vector<std::int16_t> plain_float_bias(const std::vector<std::int32_t>& acc, std::size_t rows, std::size_t f,
                                           const std::vector<float>& scale, const std::vector<float>& bias,
                                           float out_scale, std::int32_t zp, std::int32_t qmin, std::int32_t qmax) {
  std::vector<std::int16_t> out(rows * f);
  const float inverse = 1.0f / out_scale;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t q = 0; q < f; ++q) {
      const float v = (float(acc[r * f + q]) * scale[q] + bias[q]) * inverse;
      const long z = std::lrint(std::max(-1e9f, std::min(1e9f, v))) + zp;
      out[r * f + q] = static_cast<std::int16_t>(std::max<long>(qmin, std::min<long>(qmax, z)) - zp);
    }
  return out;
}

/// The plain max pool (integer_model.ipp's detail::max_pool_nhwc).
template <class T>
std::vector<T> plain_max_pool(const std::vector<T>& in, std::size_t n, std::size_t h, std::size_t w, std::size_t c,
                              const window_geometry& g) {
  const std::size_t oh = g.output_extent(h, 0), ow = g.output_extent(w, 1);
  std::vector<T> out(n * oh * ow * c, std::numeric_limits<T>::lowest());
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < oh; ++i)
      for (std::size_t j = 0; j < ow; ++j) {
        T* o = out.data() + ((b * oh + i) * ow + j) * c;
        for (std::size_t u = 0; u < g.window[0]; ++u) {
          const long y = long(i * g.strides[0] + u) - long(g.pads[0]);
          if (y < 0 || y >= long(h)) continue;
          for (std::size_t v = 0; v < g.window[1]; ++v) {
            const long xx = long(j * g.strides[1] + v) - long(g.pads[1]);
            if (xx < 0 || xx >= long(w)) continue;
            const T* p = in.data() + ((b * h + std::size_t(y)) * w + std::size_t(xx)) * c;
            for (std::size_t q = 0; q < c; ++q) o[q] = std::max(o[q], p[q]);
          }
        }
      }
  return out;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace

TEST_CASE("gemm_s16: every kernel equals the int32 reference on ragged shapes", "[deploy][kernels]") {
  using xq::kernels::cpu_isa;
  std::mt19937 rng(11);
  struct shape {
    std::size_t m, n, k, lda;
  };
  struct range {
    int lo, hi;
  };
  // m, n off the tiles (4, 6 and 8 rows; 16 and 32 columns); K odd and even, 1, and long;
  // lda > K. A's values: centred uint8 and int8 grids (VPDPBUSD's shift by min(A)), a grid
  // after a ReLU, and a span of 511 (VPMADDWD even where VNNI is there).
  for (range r : {range{-255, 255}, range{-128, 127}, range{0, 255}, range{-3, 200}}) {
    for (shape s : {shape{1, 1, 1, 1}, {1, 1, 2, 2}, {5, 3, 7, 7}, {6, 16, 8, 8}, {7, 17, 9, 9}, {13, 31, 33, 40},
                    {9, 33, 5, 6}, {37, 33, 288, 288}, {64, 10, 128, 128}, {19, 128, 3136, 3137}, {1000, 64, 288, 288}}) {
      CAPTURE(r.lo, r.hi, s.m, s.n, s.k, s.lda);
      const auto a = random_s16(s.m * s.lda, r.lo, r.hi, rng);
      const auto b = random_s16(s.k * s.n, -128, 127, rng);
      std::vector<std::int32_t> bias(s.n);
      for (auto& v : bias) v = std::int32_t(rng() % 200001) - 100000;
      std::vector<std::int32_t> ref(s.m * s.n), fast(s.m * s.n);
      const xq::deploy::packed_s16_matrix packed(b.data(), s.k, s.n);
      CHECK(packed.rows() == s.k);
      CHECK(packed.cols() == s.n);
      for (const bool with_bias : {true, false}) {
        const std::int32_t* bp = with_bias ? bias.data() : nullptr;
        xq::deploy::gemm_s16_reference(s.m, s.n, s.k, a.data(), s.lda, b.data(), bp, ref.data());
        deploy_test::on_every_isa([&](cpu_isa isa) {
          // Under each cap the kernel of that instruction set runs (VNNI: int8 weights).
          if (isa != cpu_isa::avx512_vpopcntdq) CHECK(xq::deploy::integer_product_isa(true) == isa);
          on_one_and_two_threads([&] {
            std::fill(fast.begin(), fast.end(), -1);
            xq::deploy::gemm_s16(s.m, a.data(), s.lda, packed, bp, fast.data());
            CHECK(ref == fast);
          });
        });
      }
    }
  }
}

TEST_CASE("integer_product refuses a kernel this CPU does not run and operands of the wrong kind",
          "[deploy][kernels]") {
  using xq::kernels::cpu_isa;
  const std::vector<std::int16_t> b(8 * 3, 1), a(2 * 8, 1);
  const xq::deploy::packed_s16_matrix packed(b.data(), 8, 3);
  const std::int16_t* rows16[2] = {a.data(), a.data() + 8};
  xq::deploy::integer_operand op;
  op.s16 = rows16;
  op.rows = 2;
  op.groups = packed.pairs();
  std::vector<std::int32_t> c(2 * 3);
  // An instruction set this CPU lacks (where it lacks one): an error naming it, no SIGILL.
  for (cpu_isa isa : {cpu_isa::avx_vnni, cpu_isa::avx512_vnni, cpu_isa::avx512bw, cpu_isa::avx2})
    if (!xq::kernels::cpu().has(isa))
      CHECK_THROWS_WITH(xq::deploy::integer_product(isa, op, packed, nullptr, c.data()),
                        Catch::Contains("integer_product") && Catch::Contains(xq::kernels::isa_name(isa)) &&
                            Catch::Contains("an instruction set this CPU runs"));
  // int16 rows for a VPDPBUSD kernel (it takes u8 quads).
  for (cpu_isa isa : {cpu_isa::avx_vnni, cpu_isa::avx512_vnni})
    if (xq::kernels::cpu().has(isa))
      CHECK_THROWS_WITH(xq::deploy::integer_product(isa, op, packed, nullptr, c.data()),
                        Catch::Contains("u8 operands") && Catch::Contains("int16 rows"));
  // The portable kernel runs everywhere: the sums of eight 1 x 1 products.
  xq::deploy::integer_product(cpu_isa::portable, op, packed, nullptr, c.data());
  CHECK(c == std::vector<std::int32_t>(6, 8));
}

TEST_CASE("gemm_s16: sums near the int32 limit are exact (no saturation)", "[deploy][kernels]") {
  // -255 * -127 = 32385 per product; 66000 of them are 2,137,410,000 (the lowering admits
  // K * 255 * 127 < 2^31). VPMADDUBSW would saturate every pair at 32767; VPMADDWD does not.
  const std::size_t m = 7, n = 19, k = 66000;
  std::vector<std::int16_t> a(m * k), b(k * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p) a[i * k + p] = std::int16_t(i % 2 ? 255 : -255);
  for (std::size_t p = 0; p < k; ++p)
    for (std::size_t j = 0; j < n; ++j) b[p * n + j] = std::int16_t(j % 3 == 0 ? 127 : -127);
  std::vector<std::int32_t> bias(n, 0);
  bias[1] = 10'000'000;  // up to 2,147,410,000
  bias[2] = -10'000'000;
  std::vector<std::int32_t> ref(m * n), fast(m * n);
  xq::deploy::gemm_s16_reference(m, n, k, a.data(), k, b.data(), bias.data(), ref.data());
  const xq::deploy::packed_s16_matrix packed(b.data(), k, n);
  deploy_test::on_every_isa([&](xq::kernels::cpu_isa) {
    xq::deploy::gemm_s16(m, a.data(), k, packed, bias.data(), fast.data());
    CHECK(ref == fast);
  });
  CHECK(ref[0 * n + 1] == 2'137'410'000 + 10'000'000);   // -255 * -127 * K + bias
  CHECK(ref[1 * n + 2] == -2'137'410'000 - 10'000'000);  // 255 * -127 * K + bias
  CHECK(ref[0 * n + 0] == -2'137'410'000);

  // VPDPBUSD's operands at their extremes: A in {0, 255} (a span of 256 values), B = -128:
  // a lane's four products -130,560, an all-255 row's sum 255 * -128 * 65,000 = -2,121,600,000.
  const std::size_t k8 = 65000;
  std::vector<std::int16_t> a8(m * k8), b8(k8 * n, -128);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k8; ++p) a8[i * k8 + p] = std::int16_t(i % 2 || p % 7 == 0 ? 255 : 0);
  std::vector<std::int32_t> ref8(m * n), fast8(m * n);
  xq::deploy::gemm_s16_reference(m, n, k8, a8.data(), k8, b8.data(), bias.data(), ref8.data());
  const xq::deploy::packed_s16_matrix packed8(b8.data(), k8, n);
  deploy_test::on_every_isa([&](xq::kernels::cpu_isa) {
    xq::deploy::gemm_s16(m, a8.data(), k8, packed8, bias.data(), fast8.data());
    CHECK(ref8 == fast8);
  });
  CHECK(ref8[1 * n + 0] == -2'121'600'000);
}

TEST_CASE("binary_gemm: the nibble-lookup kernel equals XNOR-popcount on ragged shapes", "[deploy][kernels]") {
  std::mt19937_64 rng(5);
  struct shape {
    std::size_t m, n, words;
  };
  // Around the 4 x 8 tile, and words across the 31-word flush of the byte counters.
  for (shape s : {shape{1, 1, 1}, {3, 5, 2}, {4, 8, 9}, {9, 13, 31}, {5, 7, 32}, {17, 10, 63}, {64, 256, 98},
                  {300, 128, 18}}) {
    CAPTURE(s.m, s.n, s.words);
    for (const int fill : {0, 1, 2}) {  // random, all bits differ, none differ
      std::vector<std::uint64_t> a(s.m * s.words), b(s.n * s.words);
      for (auto& v : a) v = fill == 0 ? rng() : fill == 1 ? ~std::uint64_t(0) : 0;
      for (auto& v : b) v = fill == 0 ? rng() : 0;
      const auto k = std::int32_t(64 * s.words);
      std::vector<std::int32_t> ref(s.m * s.n), fast(s.m * s.n, 12345);
      xq::deploy::binary_gemm_reference(s.m, s.n, s.words, k, a.data(), b.data(), ref.data());
      on_one_and_two_threads([&] {
        xq::deploy::binary_gemm(s.m, s.n, s.words, k, a.data(), b.data(), fast.data());
        CHECK(ref == fast);
      });
      if (fill == 1) CHECK(ref[0] == -k);
      if (fill == 2) CHECK(ref[0] == k);
    }
  }
}

TEST_CASE("im2col of int16 and of bits equals the plain loop", "[deploy][kernels]") {
  std::mt19937 rng(7);
  struct input {
    std::size_t n, h, w, c;
  };
  for (input in : {input{2, 9, 7, 1}, {1, 6, 6, 3}, {2, 5, 8, 32}, {1, 4, 4, 5}}) {
    for (const window_geometry& g : {geometry(3, 3, 1, 1, {1, 1, 1, 1}), geometry(3, 3, 2, 1, {0, 1, 1, 0}),
                                     geometry(2, 3, 1, 2, {2, 1, 2, 1}), geometry(1, 1, 1, 1, {0, 0, 0, 0}),
                                     geometry(3, 2, 2, 1, {0, 0, 0, 0})}) {
      CAPTURE(in.n, in.h, in.w, in.c, g.window[0], g.window[1], g.strides[0], g.dilation[0]);
      const std::size_t k = g.window[0] * g.window[1] * in.c;
      const std::size_t rows = in.n * g.output_extent(in.h, 0) * g.output_extent(in.w, 1);
      const auto x = random_s16(in.n * in.h * in.w * in.c, -255, 255, rng);
      for (const std::size_t lda : {k, k + 3}) {
        std::vector<std::int16_t> fast(rows * lda, 77);
        on_one_and_two_threads([&] {
          xq::deploy::im2col_nhwc_s16(x.data(), in.n, in.h, in.w, in.c, g, lda, fast.data());
          CHECK(fast == plain_im2col(x, in.n, in.h, in.w, in.c, g, lda));
        });
      }
      // Bits: `c` words per pixel.
      std::vector<std::uint64_t> bits(x.size());
      for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = std::uint64_t(x[i]) * 0x9E3779B97F4A7C15ull;
      std::vector<std::uint64_t> fast(rows * k, 77);
      xq::deploy::im2col_nhwc_bits(bits.data(), in.n, in.h, in.w, in.c, g, fast.data());
      CHECK(fast == plain_im2col(bits, in.n, in.h, in.w, in.c, g, k));
    }
  }
}

TEST_CASE("requantize_s16 equals requantizer::apply in every scheme", "[deploy][kernels]") {
  using xq::deploy::requantization;
  std::mt19937 rng(13);
  std::uniform_int_distribution<std::int32_t> wide(-3'000'000, 3'000'000);
  for (const std::size_t channels : {1, 8, 10, 16, 13, 64}) {
    std::vector<double> m(channels);
    for (auto& v : m) v = 0.0001 + double(rng() % 100000) * 1e-6;
    const std::size_t rows = 37;
    std::vector<std::int32_t> acc(rows * channels);
    for (auto& v : acc) v = wide(rng);
    acc[0] = std::numeric_limits<std::int32_t>::max();  // clamped, not wrapped
    acc[1 % acc.size()] = std::numeric_limits<std::int32_t>::min();
    for (std::size_t i = 2; i < acc.size() && i < 40; ++i) acc[i] = std::int32_t(i * 7) - 140;  // near 0: ties
    for (requantization scheme : {requantization::float_multiplier, requantization::tflite_double_rounding,
                                  requantization::tflite_single_rounding}) {
      const xq::deploy::requantizer r(scheme, m, "test");
      struct grid {
        std::int32_t zp, qmin, qmax;
      };
      // int8, uint8, a ReLU folded in (qmin raised to the zero point), 4 bits.
      for (grid gr : {grid{0, -127, 127}, {-3, -128, 127}, {128, 0, 255}, {5, 5, 127}, {-8, -8, 7}}) {
        CAPTURE(channels, xq::deploy::to_string(scheme), gr.zp, gr.qmin, gr.qmax);
        std::vector<std::int16_t> ref(acc.size()), fast(acc.size(), 999);
        r.apply(acc.data(), rows, gr.zp, gr.qmin, gr.qmax, ref.data());
        on_one_and_two_threads([&] {
          xq::deploy::requantize_s16(r, acc.data(), rows, gr.zp, gr.qmin, gr.qmax, fast.data());
          CHECK(ref == fast);
        });
      }
    }
    // The float-bias epilogue and the real output.
    std::vector<float> scale(channels), bias(channels);
    for (auto& v : scale) v = 1e-4f * float(1 + rng() % 1000);
    for (auto& v : bias) v = float(int(rng() % 2001) - 1000) * 0.01f;
    const auto ref = plain_float_bias(acc, rows, channels, scale, bias, 0.05f, 3, -128, 127);
    std::vector<std::int16_t> fast(acc.size());
    xq::deploy::requantize_float_bias_s16(acc.data(), rows, channels, scale.data(), bias.data(), 0.05f, 3, -128, 127,
                                          fast.data());
    CHECK(ref == fast);
    xq::deploy::linear_epilogue e;
    e.integer_output = false;
    e.real_scale = scale.data();
    e.real_bias = bias.data();
    std::vector<float> real(acc.size()), plain(acc.size());
    xq::deploy::apply_epilogue(e, acc.data(), rows, channels, nullptr, real.data());
    for (std::size_t i = 0; i < acc.size(); ++i)
      plain[i] = float(acc[i]) * scale[i % channels] + bias[i % channels];
    CHECK(same_bits(real, plain));
  }
}

TEST_CASE("conv2d_nhwc_s16 equals im2col + the reference GEMM + the scalar epilogue", "[deploy][kernels]") {
  using xq::deploy::requantization;
  std::mt19937 rng(17);
  struct input {
    std::size_t n, h, w, c, f;
  };
  for (const int lo : {-255, -128, 0})  // a span of 511 (VPMADDWD), uint8 and ReLU-like grids (VPDPBUSD)
  for (input in : {input{3, 9, 8, 1, 32}, {2, 7, 7, 32, 20}, {2, 6, 5, 3, 17}, {1, 5, 5, 2, 16}}) {
    for (const window_geometry& g : {geometry(3, 3, 1, 1, {1, 1, 1, 1}), geometry(3, 3, 2, 1, {0, 1, 1, 0}),
                                     geometry(3, 2, 1, 2, {2, 1, 2, 1}), geometry(1, 1, 1, 1, {0, 0, 0, 0}),
                                     geometry(2, 2, 1, 1, {0, 0, 0, 0})}) {
      CAPTURE(lo, in.n, in.h, in.w, in.c, in.f, g.window[0], g.window[1], g.strides[0], g.dilation[0]);
      const std::size_t kh = g.window[0], kw = g.window[1], k = kh * kw * in.c;
      const std::size_t rows = in.n * g.output_extent(in.h, 0) * g.output_extent(in.w, 1);
      const auto x = random_s16(in.n * in.h * in.w * in.c, lo, lo == -255 ? 255 : lo + 255, rng);
      const auto kernel = random_s16(k * in.f, -128, 127, rng);
      std::vector<std::int32_t> bias(in.f);
      for (auto& v : bias) v = std::int32_t(rng() % 20001) - 10000;
      std::vector<std::int32_t> acc(rows * in.f);
      const auto cols = plain_im2col(x, in.n, in.h, in.w, in.c, g, k);
      xq::deploy::gemm_s16_reference(rows, in.f, k, cols.data(), k, kernel.data(), bias.data(), acc.data());
      const xq::deploy::packed_s16_matrix packed = xq::deploy::pack_conv2d_weights_s16(kernel.data(), kh, kw, in.c, in.f);

      std::vector<double> m(in.f);
      for (auto& v : m) v = 0.0005 + double(rng() % 1000) * 1e-6;
      const xq::deploy::requantizer r(requantization::float_multiplier, m, "conv");
      xq::deploy::linear_epilogue e;
      e.requant = &r;
      e.zero_point = 2;
      e.qmin = -128;
      e.qmax = 127;
      std::vector<std::int16_t> ref(rows * in.f), fast(rows * in.f, 999);
      r.apply(acc.data(), rows, 2, -128, 127, ref.data());
      deploy_test::on_every_isa([&](xq::kernels::cpu_isa) {
        on_one_and_two_threads([&] {
          std::fill(fast.begin(), fast.end(), 999);
          xq::deploy::conv2d_nhwc_s16(x.data(), in.n, in.h, in.w, in.c, g, packed, bias.data(), e, fast.data(), nullptr);
          CHECK(ref == fast);
        });
      });
      // No bias, real output: the raw sums as floats (scale 1, offset 0).
      std::vector<std::int32_t> raw(rows * in.f);
      xq::deploy::gemm_s16_reference(rows, in.f, k, cols.data(), k, kernel.data(), nullptr, raw.data());
      std::vector<float> ones(in.f, 1.0f), zeros(in.f, 0.0f), real(rows * in.f);
      xq::deploy::linear_epilogue re;
      re.integer_output = false;
      re.real_scale = ones.data();
      re.real_bias = zeros.data();
      deploy_test::on_every_isa([&](xq::kernels::cpu_isa) {
        xq::deploy::conv2d_nhwc_s16(x.data(), in.n, in.h, in.w, in.c, g, packed, nullptr, re, nullptr, real.data());
        bool same = true;
        for (std::size_t i = 0; i < raw.size(); ++i) same = same && real[i] == float(raw[i]);
        CHECK(same);
      });
    }
  }
}

TEST_CASE("binary_conv2d_nhwc equals bit im2col + the XNOR-popcount reference", "[deploy][kernels]") {
  std::mt19937_64 rng(19);
  for (const std::size_t words : {1, 2, 3}) {
    const std::size_t n = 3, h = 9, w = 7, filters = 13;
    const window_geometry g = geometry(3, 3, 1, 1, {1, 1, 1, 1});
    const std::size_t row = 9 * words, rows = n * h * w;
    std::vector<std::uint64_t> x(n * h * w * words), weights(filters * row);
    for (auto& v : x) v = rng();
    for (auto& v : weights) v = rng();
    const auto k = std::int32_t(9 * 64 * words);
    const auto cols = plain_im2col(x, n, h, w, words, g, row);
    std::vector<std::int32_t> ref(rows * filters), fast(rows * filters, 5);
    xq::deploy::binary_gemm_reference(rows, filters, row, k, cols.data(), weights.data(), ref.data());
    on_one_and_two_threads([&] {
      xq::deploy::binary_conv2d_nhwc(x.data(), n, h, w, words, g, weights.data(), filters, k, fast.data());
      CHECK(ref == fast);
    });
  }
}

TEST_CASE("max pooling of int16, int32 and float equals the plain loop, bit for bit", "[deploy][kernels]") {
  std::mt19937 rng(23);
  const std::size_t n = 2, h = 9, w = 8;
  for (const std::size_t c : {1, 7, 16, 40}) {
    for (const window_geometry& g : {geometry(2, 2, 2, 1, {0, 0, 0, 0}), geometry(3, 3, 1, 1, {1, 1, 1, 1}),
                                     geometry(3, 2, 2, 1, {0, 1, 1, 0})}) {
      CAPTURE(c, g.window[0], g.window[1], g.strides[0]);
      const std::size_t oh = g.output_extent(h, 0), ow = g.output_extent(w, 1), out = n * oh * ow * c;
      const auto s16 = random_s16(n * h * w * c, -32768, 32767, rng);
      std::vector<std::int16_t> f16(out);
      xq::deploy::max_pool_nhwc_s16(s16.data(), n, h, w, c, g, f16.data());
      CHECK(f16 == plain_max_pool(s16, n, h, w, c, g));
      std::vector<std::int32_t> s32(s16.size()), f32(out);
      for (std::size_t i = 0; i < s32.size(); ++i) s32[i] = std::int32_t(rng());
      xq::deploy::max_pool_nhwc_s32(s32.data(), n, h, w, c, g, f32.data());
      CHECK(f32 == plain_max_pool(s32, n, h, w, c, g));
      // Floats with signed zeros, NaNs and infinities: std::max's choices, not max's.
      const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                                -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::max(), 1e-40f};
      std::vector<float> real(s16.size()), fr(out);
      for (std::size_t i = 0; i < real.size(); ++i)
        real[i] = rng() % 3 == 0 ? specials[rng() % 7] : float(s16[i]) * 0.01f;
      xq::deploy::max_pool_nhwc_f32(real.data(), n, h, w, c, g, fr.data());
      CHECK(same_bits(fr, plain_max_pool(real, n, h, w, c, g)));
    }
  }
}

TEST_CASE("batch norm, sign and their packing equal batch_norm_op and sign_op", "[deploy][kernels]") {
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (const std::size_t channels : {8, 10, 64, 128}) {
    for (const std::size_t per_row : {std::size_t(1), std::size_t(6)}) {  // the tensor, or flattened 6 pixels per row
      CAPTURE(channels, per_row);
      const std::size_t rows = 11, row_channels = channels * per_row, n = rows * row_channels;
      std::vector<float> mean(channels), scale(channels), offset(channels);
      for (std::size_t c = 0; c < channels; ++c) {
        mean[c] = u(rng);
        scale[c] = c % 5 == 0 ? -u(rng) : u(rng);
        offset[c] = u(rng);
      }
      mean[0] = 0.5f;  // x = 0.5 gives exactly 0: +1
      scale[0] = 1.0f;
      offset[0] = 0.0f;
      std::vector<float> x(n);
      std::vector<std::int32_t> acc(n);
      const float specials[] = {0.5f, -0.0f, -1e-39f, -FLT_MIN, std::numeric_limits<float>::quiet_NaN()};
      for (std::size_t i = 0; i < n; ++i) {
        x[i] = rng() % 4 == 0 ? specials[rng() % 5] : u(rng) * 3.0f;
        acc[i] = std::int32_t(rng() % 201) - 100;
      }
      // The plain loops: batch_norm_op, then sign_op.
      const std::size_t words = (row_channels + 63) / 64;
      auto plain_bits = [&](auto&& value) {
        std::vector<std::uint64_t> bits(rows * words, 0);
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t e = 0; e < row_channels; ++e)
            if (value(r * row_channels + e) <= -FLT_MIN) bits[r * words + e / 64] |= std::uint64_t(1) << (e % 64);
        return bits;
      };
      auto bn = [&](float v, std::size_t i) {
        const std::size_t c = i % channels;
        return (v - mean[c]) * scale[c] + offset[c];
      };
      std::vector<std::uint64_t> fast(rows * words, ~std::uint64_t(0));
      xq::deploy::batch_norm_sign_bits(x.data(), rows, row_channels, mean.data(), scale.data(), offset.data(),
                                       channels, fast.data());
      CHECK(fast == plain_bits([&](std::size_t i) { return bn(x[i], i); }));
      xq::deploy::batch_norm_sign_bits(acc.data(), rows, row_channels, mean.data(), scale.data(), offset.data(),
                                       channels, fast.data());
      CHECK(fast == plain_bits([&](std::size_t i) { return bn(float(acc[i]), i); }));
      xq::deploy::sign_bits(x.data(), rows, row_channels, fast.data());
      CHECK(fast == plain_bits([&](std::size_t i) { return x[i]; }));
      // batch_norm_op alone.
      std::vector<float> y(n), plain(n);
      for (std::size_t i = 0; i < n; ++i) plain[i] = bn(x[i], i);
      xq::deploy::batch_norm_f32(x.data(), n, mean.data(), scale.data(), offset.data(), channels, y.data());
      CHECK(same_bits(y, plain));
      for (std::size_t i = 0; i < n; ++i) plain[i] = bn(float(acc[i]), i);
      xq::deploy::batch_norm_f32(acc.data(), n, mean.data(), scale.data(), offset.data(), channels, y.data());
      CHECK(same_bits(y, plain));
    }
  }
}

TEST_CASE("max pool, batch norm and sign in one pass equal the three ops", "[deploy][kernels]") {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  const std::size_t n = 2, h = 8, w = 9;
  for (const std::size_t c : {8, 10, 64, 128}) {
    for (const window_geometry& g : {geometry(2, 2, 2, 1, {0, 0, 0, 0}), geometry(3, 3, 1, 1, {1, 1, 1, 1})}) {
      CAPTURE(c, g.window[0]);
      std::vector<float> mean(c), scale(c), offset(c);
      for (std::size_t q = 0; q < c; ++q) {
        mean[q] = u(rng) * 20.0f;
        scale[q] = q % 3 == 0 ? -u(rng) : u(rng);
        offset[q] = u(rng);
      }
      std::vector<float> real(n * h * w * c);
      std::vector<std::int32_t> acc(real.size());
      for (std::size_t i = 0; i < real.size(); ++i) {
        real[i] = rng() % 8 == 0 ? -0.0f : u(rng) * 10.0f;
        acc[i] = std::int32_t(rng() % 81) - 40;
      }
      const std::size_t oh = g.output_extent(h, 0), ow = g.output_extent(w, 1), pixels = n * oh * ow;
      const std::size_t words = (c + 63) / 64;
      auto plain = [&](const auto& pooled) {  // batch_norm_op then sign_op on the pooled tensor
        std::vector<std::uint64_t> bits(pixels * words, 0);
        for (std::size_t p = 0; p < pixels; ++p)
          for (std::size_t q = 0; q < c; ++q) {
            const float y = (float(pooled[p * c + q]) - mean[q]) * scale[q] + offset[q];
            if (y <= -FLT_MIN) bits[p * words + q / 64] |= std::uint64_t(1) << (q % 64);
          }
        return bits;
      };
      std::vector<std::uint64_t> fast(pixels * words, ~std::uint64_t(0));
      xq::deploy::max_pool_batch_norm_sign_bits(real.data(), n, h, w, c, g, mean.data(), scale.data(), offset.data(),
                                                fast.data());
      CHECK(fast == plain(plain_max_pool(real, n, h, w, c, g)));
      xq::deploy::max_pool_batch_norm_sign_bits(acc.data(), n, h, w, c, g, mean.data(), scale.data(), offset.data(),
                                                fast.data());
      CHECK(fast == plain(plain_max_pool(acc, n, h, w, c, g)));
    }
  }
}

TEST_CASE("a binary conv with its pooling, batch norm and sign in one pass equals the four ops", "[deploy][kernels]") {
  std::mt19937_64 rng(37);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  const std::size_t n = 3, h = 8, w = 6;
  for (const std::size_t words : {1, 2}) {
    for (const std::size_t filters : {64, 70, 128}) {
      for (const window_geometry& pool : {geometry(2, 2, 2, 1, {0, 0, 0, 0}), geometry(1, 1, 1, 1, {0, 0, 0, 0})}) {
        CAPTURE(words, filters, pool.window[0]);
        const window_geometry conv = geometry(3, 3, 1, 1, {1, 1, 1, 1});
        const std::size_t row = 9 * words, pixels = n * h * w;
        std::vector<std::uint64_t> x(pixels * words), weights(filters * row);
        for (auto& v : x) v = rng();
        for (auto& v : weights) v = rng();
        std::vector<float> mean(filters), scale(filters), offset(filters);
        for (std::size_t q = 0; q < filters; ++q) {
          mean[q] = u(rng) * 30.0f;
          scale[q] = q % 4 == 0 ? -u(rng) : u(rng);
          offset[q] = u(rng);
        }
        const auto k = std::int32_t(9 * 64 * words);
        // The four ops: binary conv (reference), max pool, batch norm, sign.
        const auto cols = plain_im2col(x, n, h, w, words, conv, row);
        std::vector<std::int32_t> acc(pixels * filters);
        xq::deploy::binary_gemm_reference(pixels, filters, row, k, cols.data(), weights.data(), acc.data());
        const auto pooled = plain_max_pool(acc, n, h, w, filters, pool);
        const std::size_t out_pixels = pooled.size() / filters, out_words = (filters + 63) / 64;
        std::vector<std::uint64_t> ref(out_pixels * out_words, 0);
        for (std::size_t p = 0; p < out_pixels; ++p)
          for (std::size_t q = 0; q < filters; ++q) {
            const float y = (float(pooled[p * filters + q]) - mean[q]) * scale[q] + offset[q];
            if (y <= -FLT_MIN) ref[p * out_words + q / 64] |= std::uint64_t(1) << (q % 64);
          }
        std::vector<std::uint64_t> fast(ref.size(), ~std::uint64_t(0));
        on_one_and_two_threads([&] {
          xq::deploy::binary_conv2d_pool_norm_sign_bits(x.data(), n, h, w, words, conv, weights.data(), filters, k, pool,
                                                        mean.data(), scale.data(), offset.data(), fast.data());
          CHECK(fast == ref);
        });
      }
    }
  }
}

TEST_CASE("a float convolution with a ±1 kernel: sums in window order, any batch, within rounding of BLAS",
          "[deploy][kernels]") {
  struct shape {
    std::size_t n, h, w, c, k, f, stride;
    bool same, bias;
  };
  std::mt19937 rng(9);
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::uniform_int_distribution<int> tap(0, 9);
  // The examples' stem (28x28, 1 -> 64), ragged filter counts (a 16-wide block and a
  // tail), several input channels, strides, valid padding, a bias.
  for (const shape& s : {shape{3, 28, 28, 1, 3, 64, 1, true, false}, shape{2, 9, 7, 3, 3, 70, 2, true, true},
                         shape{2, 10, 10, 2, 5, 5, 1, false, true}, shape{4, 12, 12, 1, 3, 16, 1, true, true}}) {
    CAPTURE(s.h, s.w, s.c, s.k, s.f, s.stride, s.same, s.bias);
    xq::deploy::real_linear_op op;
    op.path = "stem";
    op.kernel = xq::tensor::from_shape({s.k, s.k, s.c, s.f});
    for (float& v : op.kernel) {
      const int t = tap(rng);
      v = t == 0 ? 0.0f : (t % 2 ? 1.0f : -1.0f);
    }
    op.has_bias = s.bias;
    op.bias = xq::tensor::from_shape({s.f});
    for (float& v : op.bias) v = value(rng);
    op.strides = {s.stride, s.stride};
    op.padding = s.same ? 1 : 0;
    op.inputs = {0};
    op.output = 1;
    REQUIRE(op.unit_kernel());
    CHECK(op.batch_invariant());
    xq::deploy::engine_tensor x;
    x.shape = {s.n, s.h, s.w, s.c};
    x.real.resize(x.elements());
    for (float& v : x.real) v = value(rng);
    x.real[0] = -0.0f;
    std::vector<xq::deploy::engine_tensor> ref = {x, {}};
    xq::deploy::run_options reference;
    reference.reference_kernels = true;
    op.run(ref, reference);  // xq::ops::conv2d: im2col + OpenBLAS
    const auto& y_ref = ref[1];
    REQUIRE(y_ref.shape.size() == 4);
    const std::size_t oh = y_ref.shape[1], ow = y_ref.shape[2];
    // The definition, written out: the window's products in (kh, kw, c) order from +0, the
    // padding as 0, then the bias; and the bound on two orders of the same exact products.
    const long pad_h = s.same ? long(((oh - 1) * s.stride + s.k > s.h ? (oh - 1) * s.stride + s.k - s.h : 0) / 2) : 0;
    const long pad_w = s.same ? long(((ow - 1) * s.stride + s.k > s.w ? (ow - 1) * s.stride + s.k - s.w : 0) / 2) : 0;
    std::vector<float> defined(y_ref.real.size()), bound(y_ref.real.size());
    for (std::size_t b = 0; b < s.n; ++b)
      for (std::size_t i = 0; i < oh; ++i)
        for (std::size_t j = 0; j < ow; ++j)
          for (std::size_t q = 0; q < s.f; ++q) {
            float sum = 0.0f;
            double magnitude = 0.0;
            for (std::size_t u = 0; u < s.k; ++u)
              for (std::size_t v = 0; v < s.k; ++v)
                for (std::size_t ch = 0; ch < s.c; ++ch) {
                  const long r = long(i * s.stride + u) - pad_h, c = long(j * s.stride + v) - pad_w;
                  const bool inside = r >= 0 && c >= 0 && r < long(s.h) && c < long(s.w);
                  const float xv = inside ? x.real[((b * s.h + std::size_t(r)) * s.w + std::size_t(c)) * s.c + ch] : 0.0f;
                  const float p = xv * op.kernel.data()[((u * s.k + v) * s.c + ch) * s.f + q];
                  sum += p;
                  magnitude += std::fabs(double(p));
                }
            const std::size_t e = ((b * oh + i) * ow + j) * s.f + q;
            defined[e] = s.bias ? sum + op.bias.data()[q] : sum;
            bound[e] = float(2.0 * double(s.k * s.k * s.c) * std::ldexp(magnitude, -24) + std::ldexp(std::fabs(double(defined[e])), -23));
          }
    on_one_and_two_threads([&] {
      std::vector<xq::deploy::engine_tensor> fast = {x, {}};
      op.run(fast, {});
      REQUIRE(fast[1].shape == y_ref.shape);
      std::size_t not_defined = 0, beyond = 0, not_blas = 0;
      for (std::size_t e = 0; e < y_ref.real.size(); ++e) {
        not_defined += std::memcmp(&fast[1].real[e], &defined[e], sizeof(float)) != 0;
        beyond += !(std::fabs(fast[1].real[e] - y_ref.real[e]) <= bound[e]);
        not_blas += fast[1].real[e] != y_ref.real[e];
      }
      INFO(not_defined << " outputs differ from the definition's bits, " << beyond << " from BLAS's beyond the bound ("
                       << not_blas << " of " << y_ref.real.size() << " not BLAS's bits: its order depends on the tile)");
      CHECK(not_defined == 0);
      CHECK(beyond == 0);
    });
  }
  // The conv with its max pool in one pass: the two kernels' bits, overlapping and padded
  // windows included, 64-channel blocks (AVX-512's path: up to 4 taps) and a ragged count.
  for (const auto& [k, pool_size, pool_stride, pool_pad, filters] :
       {std::array<std::size_t, 5>{3, 2, 2, 0, 37}, {3, 3, 2, 1, 37}, {5, 2, 1, 0, 37}, {3, 2, 2, 0, 64},
        {3, 2, 2, 1, 128}, {3, 2, 1, 0, 64}, {3, 3, 2, 1, 64}}) {
    CAPTURE(k, pool_size, pool_stride, pool_pad, filters);
    const std::size_t n = 3, h = 13, w = 11, c = 2, f = filters;  // (C++17 lambdas cannot capture a structured binding)
    std::vector<float> x(n * h * w * c), kernel(k * k * c * f), bias(f);
    for (float& v : x) v = value(rng);
    for (float& v : kernel) v = tap(rng) % 2 ? 1.0f : -1.0f;
    for (float& v : bias) v = value(rng);
    window_geometry conv;
    conv.window = {k, k};
    conv.pads = {k / 2, k / 2, k / 2, k / 2};
    window_geometry pool;
    pool.window = {pool_size, pool_size};
    pool.strides = {pool_stride, pool_stride};
    pool.pads = {pool_pad, pool_pad, pool_pad, pool_pad};
    const std::size_t oh = conv.output_extent(h, 0), ow = conv.output_extent(w, 1);
    const std::size_t ph = pool.output_extent(oh, 0), pw = pool.output_extent(ow, 1);
    std::vector<float> full(n * oh * ow * f), pooled(n * ph * pw * f), fused(pooled.size());
    xq::deploy::unit_kernel_conv2d_f32(x.data(), n, h, w, c, conv, kernel.data(), f, bias.data(), full.data());
    xq::deploy::max_pool_nhwc_f32(full.data(), n, oh, ow, f, pool, pooled.data());
    deploy_test::on_every_isa([&](xq::kernels::cpu_isa) {
      on_one_and_two_threads([&] {
        std::fill(fused.begin(), fused.end(), 7.0f);
        xq::deploy::unit_kernel_conv2d_max_pool_f32(x.data(), n, h, w, c, conv, kernel.data(), f, bias.data(), pool,
                                                    fused.data());
        CHECK(std::memcmp(fused.data(), pooled.data(), pooled.size() * sizeof(float)) == 0);
      });
    });
  }
  // Any other weight (a product that rounds) goes through the GEMM.
  xq::deploy::real_linear_op op;
  op.kernel = xq::tensor::from_shape({3, 3, 1, 4});
  for (float& v : op.kernel) v = 1.0f;
  CHECK(op.unit_kernel());
  op.kernel.data()[5] = 0.5f;
  CHECK_FALSE(op.unit_kernel());
  CHECK_FALSE(op.batch_invariant());
}
