// Every SIMD architecture this build can run gives bit-identical results to
// scalar_policy: every kernel, every walker, per tensor and per channel, on
// random data seeded with ties, range ends, -0.0 and large values; also above
// the threading threshold.

#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include <xquant/numerics/tf_fake_quant.hpp>
#include <xquant/numerics/tf_quantize_and_dequantize.hpp>
#include <xquant/numerics/torch_learnable_fake_quant.hpp>

#include "../golden.hpp"

namespace k = xq::kernels;
using xq::scalar_policy;
using xq::simd_policy;

namespace {

template <class F>
void for_each_arch(F&& f) {
#if XSIMD_WITH_SSE2
  f(xsimd::sse2{});
#endif
#if XSIMD_WITH_SSE4_1
  f(xsimd::sse4_1{});
#endif
#if XSIMD_WITH_AVX
  f(xsimd::avx{});
#endif
#if XSIMD_WITH_AVX2
  f(xsimd::avx2{});
#endif
#if XSIMD_WITH_FMA3_AVX2
  f(xsimd::fma3<xsimd::avx2>{});
#endif
#if XSIMD_WITH_AVX512F
  f(xsimd::avx512f{});
#endif
#if XSIMD_WITH_AVX512BW
  f(xsimd::avx512bw{});
#endif
}

/// Values on and around the grid of step `step`: ties, ends, specials.
std::vector<float> test_values(std::size_t n, float step, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(lo * 1.5f - step, hi * 1.5f + step);
  std::uniform_int_distribution<int> grid(int(lo / step) - 3, int(hi / step) + 3);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (i % 8) {
      case 0: v[i] = (float(grid(rng)) + 0.5f) * step; break;  // a tie
      case 1: v[i] = std::nextafter((float(grid(rng)) + 0.5f) * step, 1e30f); break;
      case 2: v[i] = std::nextafter((float(grid(rng)) + 0.5f) * step, -1e30f); break;
      case 3: v[i] = (i % 16 == 3) ? lo : hi; break;
      case 4: v[i] = (i % 32 == 4) ? -0.0f : (i % 32 == 12 ? 1e30f : -1e30f); break;
      default: v[i] = uni(rng);
    }
  }
  return v;
}

std::vector<float> random_grads(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-8, 8);  // dyadic values: sums are exact
  std::vector<float> v(n);
  for (auto& x : v) x = float(d(rng)) * 0.25f;
  return v;
}

template <class K, class = void>
struct has_param_grads : std::false_type {};
template <class K>
struct has_param_grads<K, std::void_t<decltype(K::param_grad_count)>> : std::true_type {};

template <class V>
void require_same(const V& a, const V& b, const char* what) {
  INFO(what);
  REQUIRE(golden::bit_difference(a, b) == "");
}

template <class Arch, class K>
void check_kernel(const K& kern, float step, float lo, float hi) {
  for (std::size_t n : {std::size_t(1), std::size_t(37), std::size_t(1000), std::size_t(1) << 19}) {
    CAPTURE(n);
    const auto x = test_values(n, step, lo, hi, unsigned(n));
    const auto dy = random_grads(n, unsigned(n) + 1);
    std::vector<float> ys(n), yv(n), dxs(n), dxv(n);
    std::vector<char> ms(n), mv(n);
    k::forward(scalar_policy{}, kern, x.data(), ys.data(), n);
    k::forward(simd_policy<Arch>{}, kern, x.data(), yv.data(), n);
    require_same(ys, yv, "forward");
    std::fill(yv.begin(), yv.end(), 0.0f);
    k::forward_with_mask(scalar_policy{}, kern, x.data(), ys.data(), reinterpret_cast<bool*>(ms.data()), n);
    k::forward_with_mask(simd_policy<Arch>{}, kern, x.data(), yv.data(), reinterpret_cast<bool*>(mv.data()), n);
    require_same(ys, yv, "forward_with_mask: y");
    REQUIRE(ms == mv);
    k::backward(scalar_policy{}, kern, x.data(), dy.data(), dxs.data(), n);
    k::backward(simd_policy<Arch>{}, kern, x.data(), dy.data(), dxv.data(), n);
    require_same(dxs, dxv, "backward");
    k::apply_mask(simd_policy<Arch>{}, reinterpret_cast<const bool*>(mv.data()), dy.data(), dxv.data(), n);
    require_same(dxs, dxv, "apply_mask");
  }
}

template <class Arch, class K>
void check_sums(const K& kern, float step, float lo, float hi) {
  for (std::size_t n : {std::size_t(5), std::size_t(1000), std::size_t(300000)}) {
    CAPTURE(n);
    const auto x = test_values(n, step, lo, hi, 7u + unsigned(n));
    std::vector<float> dy(n);
    std::mt19937 rng(3);
    std::normal_distribution<float> g;
    for (auto& v : dy) v = g(rng);  // inexact sums: the order must match
    std::vector<float> dxs(n), dxv(n);
    float ss[K::param_grad_count], sv[K::param_grad_count];
    k::backward_with_sums(scalar_policy{}, kern, x.data(), dy.data(), dxs.data(), ss, n);
    k::backward_with_sums(simd_policy<Arch>{}, kern, x.data(), dy.data(), dxv.data(), sv, n);
    require_same(dxs, dxv, "backward_with_sums: dx");
    for (std::size_t j = 0; j < K::param_grad_count; ++j) REQUIRE(golden::to_bits(ss[j]) == golden::to_bits(sv[j]));
  }
}

template <class Arch, class T>
void check_table(const T& table, std::size_t channels, float step, float lo, float hi) {
  for (std::size_t inner : {std::size_t(1), std::size_t(3), std::size_t(40)}) {
    for (std::size_t outer : {std::size_t(1), std::size_t(9), std::size_t(3000)}) {
      const k::channel_layout l{outer, channels, inner};
      const std::size_t n = l.size();
      CAPTURE(outer, channels, inner);
      const auto x = test_values(n, step, lo, hi, unsigned(n + inner));
      const auto dy = random_grads(n, 11u);
      std::vector<float> ys(n), yv(n), dxs(n), dxv(n);
      std::vector<char> ms(n), mv(n);
      k::forward_channels(scalar_policy{}, table, l, x.data(), ys.data());
      k::forward_channels(simd_policy<Arch>{}, table, l, x.data(), yv.data());
      require_same(ys, yv, "forward_channels");
      k::forward_channels_with_mask(scalar_policy{}, table, l, x.data(), ys.data(), reinterpret_cast<bool*>(ms.data()));
      k::forward_channels_with_mask(simd_policy<Arch>{}, table, l, x.data(), yv.data(), reinterpret_cast<bool*>(mv.data()));
      require_same(ys, yv, "forward_channels_with_mask");
      REQUIRE(ms == mv);
      k::backward_channels(scalar_policy{}, table, l, x.data(), dy.data(), dxs.data());
      k::backward_channels(simd_policy<Arch>{}, table, l, x.data(), dy.data(), dxv.data());
      require_same(dxs, dxv, "backward_channels");
      using kernel = decltype(table.template at<float>(0));
      if constexpr (has_param_grads<kernel>::value) {
        std::vector<float> ss(2 * channels), sv(2 * channels);
        std::vector<float> g(n);
        std::mt19937 rng(5);
        std::normal_distribution<float> nd;
        for (auto& v : g) v = nd(rng);
        k::backward_channels_with_sums(scalar_policy{}, table, l, x.data(), g.data(), dxs.data(), ss.data());
        k::backward_channels_with_sums(simd_policy<Arch>{}, table, l, x.data(), g.data(), dxv.data(), sv.data());
        require_same(dxs, dxv, "backward_channels_with_sums: dx");
        require_same(ss, sv, "backward_channels_with_sums: sums");
      }
    }
  }
}

}  // namespace

TEST_CASE("simd == scalar: fma rounds once on every architecture", "[kernels][simd]") {
  // c = -(a * b rounded): a fused multiply-add returns the rounding error of
  // the product (rarely 0), an unfused one returns exactly 0.
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using B = xsimd::batch<float, A>;
    INFO("arch " << A::name());
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> d(-3.0f, 3.0f);
    alignas(64) float a[B::size], b[B::size], c[B::size], r[B::size];
    for (int round = 0; round < 64; ++round) {
      for (std::size_t i = 0; i < B::size; ++i) {
        a[i] = d(rng);
        b[i] = d(rng);
        c[i] = -(a[i] * b[i]);
      }
      xq::math::fma(B::load_aligned(a), B::load_aligned(b), B::load_aligned(c)).store_aligned(r);
      for (std::size_t i = 0; i < B::size; ++i)
        REQUIRE(golden::to_bits(r[i]) == golden::to_bits(std::fma(a[i], b[i], c[i])));
    }
  });
}

TEST_CASE("simd == scalar: TF FakeQuant kernels", "[kernels][simd]") {
  using xq::tf::revision;
  using xq::tf::step_form;
  const auto g = xq::tf::fake_quant_grid(8, false, "test");
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    INFO("arch " << A::name());
    const auto kq = xq::tf::detail::make_kernel<revision::current, step_form::quotient>(-1.3f, 2.1f, g, "t");
    check_kernel<A>(kq, kq.scale, -1.3f, 2.1f);
    check_sums<A>(kq, kq.scale, -1.3f, 2.1f);
    check_kernel<A>(xq::tf::detail::make_kernel<revision::current, step_form::product>(-0.7f, 0.9f, g, "t"), 1.6f / 255, -0.7f, 0.9f);
    check_kernel<A>(xq::tf::detail::make_kernel<revision::legacy, step_form::quotient>(-0.7f, 0.9f, g, "t"), 1.6f / 255, -0.7f, 0.9f);
    check_kernel<A>(xq::tf::detail::make_kernel<revision::legacy, step_form::product>(0.1f, 3.0f, g, "t"), 2.9f / 255, 0.1f, 3.0f);
    const std::size_t C = 21;
    xq::vector mn = xq::vector::from_shape({C}), mx = xq::vector::from_shape({C});
    for (std::size_t c = 0; c < C; ++c) {
      mn(c) = -0.5f - 0.1f * float(c);
      mx(c) = 0.25f + 0.2f * float(c);
    }
    mn(3) = mx(3) = 0.0f;  // a degenerate channel
    const xq::tf::detail::channel_ranges<revision::current, step_form::product> r(mn, mx, g, "t");
    check_table<A>(r.table(), C, 0.01f, -2.5f, 4.5f);
  });
}

TEST_CASE("simd == scalar: TF QDQ kernels", "[kernels][simd]") {
  using xq::tf::round_mode;
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    INFO("arch " << A::name());
    const auto r = xq::tf::compute_quantization_range(true, 8, true, -1.2f, 0.8f);
    check_kernel<A>(xq::tf::quantize_and_dequantize_kernel<round_mode::half_to_even, true>{r.min, r.max, r.scale, r.inverse_scale, -1.2f, 0.8f},
                    r.inverse_scale, -1.2f, 0.8f);
    check_kernel<A>(xq::tf::quantize_and_dequantize_kernel<round_mode::half_up, false>{r.min, r.max, r.scale, r.inverse_scale, -1.2f, 0.8f},
                    r.inverse_scale, -1.2f, 0.8f);
    xq::tf::qdq_options o;
    o.per_axis = true;
    o.axis = 1;
    o.range_given = true;
    xq::tensor x = xt::zeros<float>({2, 19});
    xq::tensor lo = -xt::linspace<float>(0.1f, 3.0f, 19), hi = xt::linspace<float>(0.2f, 1.0f, 19);
    const xq::tf::detail::qdq_ranges rr(x, lo, hi, o, "t");
    check_table<A>(rr.table<round_mode::half_to_even, true>(), 19, 0.01f, -3.0f, 1.0f);
  });
}

TEST_CASE("simd == scalar: PyTorch affine and LSQ kernels", "[kernels][simd]") {
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    INFO("arch " << A::name());
    const float s = 0.0173f;
    check_kernel<A>(xq::torch::fake_quantize_affine_kernel<false>{s, 1.0f / s, 3.0f, -128.0f, 127.0f}, s, -128 * s, 127 * s);
    check_kernel<A>(xq::torch::fake_quantize_affine_kernel<true>{s, 1.0f / s, 0.0f, 0.0f, 255.0f}, s, 0.0f, 255 * s);
    const xq::torch::learnable_fake_quantize_kernel<float> lsq{s, 1.0f / s, 2.0f, -8.0f, 7.0f, 0.125f};
    check_kernel<A>(lsq, s, -10 * s, 5 * s);
    check_sums<A>(lsq, s, -10 * s, 5 * s);
    const std::size_t C = 13;
    std::vector<float> sc(C), inv(C), zp(C);
    for (std::size_t c = 0; c < C; ++c) {
      sc[c] = 0.01f + 0.003f * float(c);
      inv[c] = 1.0f / sc[c];
      zp[c] = float(int(c) - 6);
    }
    check_table<A>(xq::torch::fake_quantize_affine_channels<true>{sc.data(), inv.data(), zp.data(), -8.0f, 7.0f}, C, 0.01f, -0.5f, 0.5f);
    check_table<A>(xq::torch::learnable_fake_quantize_channels{sc.data(), inv.data(), zp.data(), -8.0f, 7.0f, 0.5f}, C, 0.01f, -0.5f, 0.5f);
  });
}
