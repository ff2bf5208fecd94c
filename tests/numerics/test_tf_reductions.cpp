// TensorFlow's CPU summation orders (numerics/tf_cpu_reductions.hpp) and the outputs that
// depend on them: larq's MagnitudeAwareSign scales and SteTern's TWN threshold, and
// FakeQuant's d_min / d_max (issue 14, finding 14). Golden sums from TF 2.21 and larq
// 0.14 (tools/gen_golden_tf_reductions.py); the inputs are rebuilt here from its hash.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include <xquant/numerics/tf_cpu_reductions.hpp>
#include <xquant/numerics/tf_fake_quant.hpp>
#include <xquant/quantizers/magnitude_aware_sign.hpp>
#include <xquant/quantizers/ste_tern.hpp>

#include "../golden.hpp"
#include "../index_hash.hpp"
#include "../quantizers/quantizer_run.hpp"

namespace {

/// The generator's inputs: element i of seed s, exact in float32.
xq::tensor hashed(const std::vector<std::size_t>& shape, std::uint32_t seed) {
  xq::tensor x = xt::empty<float>(shape);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::uint32_t h = golden::index_hash(i, seed);
    const double mantissa = double(h >> 8) * std::ldexp(1.0, -23) - 1.0;
    x.data()[i] = float(std::ldexp(mantissa, int(h & 7u) - 3));
  }
  return x;
}

std::vector<std::size_t> shape_of(const golden::json& c) { return c.at("shape").get<std::vector<std::size_t>>(); }

/// The old order (a double sum rounded once), which TF does not use: the goldens must
/// tell it apart from TF's, or they test nothing.
float double_sum(const float* x, std::size_t n, std::size_t stride = 1) {
  double s = 0.0;
  for (std::size_t i = 0; i < n; ++i) s += x[i * stride];
  return float(s);
}

}  // namespace

TEST_CASE("tf cpu reductions: full sums match TensorFlow's reduce_sum bit for bit", "[tf][reduction][golden]") {
  const auto data = golden::load("tf_reductions");
  std::size_t differs_from_double = 0;
  for (const auto& c : data.at("sum")) {
    const std::size_t n = c.at("n");
    xq::tensor x = hashed({n}, c.at("seed").get<std::uint32_t>());
    if (c.at("abs").get<bool>()) x = xt::abs(x);
    INFO("n = " << n << ", abs = " << c.at("abs").get<bool>());
    const float want = golden::from_bits(c.at("want").get<std::uint32_t>());
    CHECK(golden::to_bits(xq::tf::cpu::sum(x.data(), n)) == golden::to_bits(want));
    differs_from_double += double_sum(x.data(), n) != want;
  }
  CHECK(differs_from_double >= 10);
}

TEST_CASE("tf cpu reductions: sums over rows match reduce_sum(axis=0) bit for bit", "[tf][reduction][golden]") {
  const auto data = golden::load("tf_reductions");
  std::size_t differs_from_double = 0;
  for (const auto& c : data.at("sum_rows")) {
    const std::size_t rows = c.at("rows"), cols = c.at("cols");
    const xq::tensor a = xt::abs(hashed({rows, cols}, c.at("seed").get<std::uint32_t>()));
    std::vector<float> got(cols);
    xq::tf::cpu::sum_rows(a.data(), rows, cols, got.data());
    const auto& want = c.at("want");
    REQUIRE(want.size() == cols);
    for (std::size_t k = 0; k < cols; ++k) {
      INFO(rows << " x " << cols << ", column " << k);
      CHECK(golden::to_bits(got[k]) == want[k].get<std::uint32_t>());
      differs_from_double += golden::to_bits(double_sum(a.data() + k, rows, cols)) != want[k].get<std::uint32_t>();
    }
  }
  CHECK(differs_from_double >= 100);
}

TEST_CASE("tf cpu reductions: a column (stride) sums as a full reduction", "[tf][reduction]") {
  const xq::tensor a = hashed({5000, 3}, 7);
  const xq::tensor column = xt::eval(xt::view(a, xt::all(), 1));
  CHECK(golden::to_bits(xq::tf::cpu::sum(a.data() + 1, 5000, 3)) ==
        golden::to_bits(xq::tf::cpu::sum(column.data(), 5000)));
  CHECK(xq::tf::cpu::sum(a.data(), 0) == 0.0f);
}

TEST_CASE("tf cpu reductions: the stated bound holds where TF would shard a large sum", "[tf][reduction]") {
  // Above its cost model's threshold TF splits a full sum into one shard per thread: the
  // header bounds the difference of any two such orders by 2 * gamma(300) * sum|x|. Each
  // order is within gamma(300) * sum|x| of the exact sum; check xquant's.
  for (const std::size_t n : {std::size_t(589824), std::size_t(2359296)}) {
    const xq::tensor x = hashed({n}, 11);
    long double exact = 0.0L, magnitude = 0.0L;
    for (float v : x) {
      exact += v;
      magnitude += std::fabs(v);
    }
    const long double u = std::ldexp(1.0L, -24), gamma = 300 * u / (1 - 300 * u);
    INFO("n = " << n);
    CHECK(std::fabs(double(xq::tf::cpu::sum(x.data(), n)) - double(exact)) <= double(gamma * magnitude));
  }
}

TEST_CASE("larq MagnitudeAwareSign: per-channel scales are larq's bit for bit", "[larq][reduction][golden]") {
  const auto data = golden::load("tf_reductions");
  std::size_t differs_from_double = 0;
  for (const auto& c : data.at("magnitude_aware_sign")) {
    const auto shape = shape_of(c);
    const xq::tensor x = hashed(shape, c.at("seed").get<std::uint32_t>());
    const std::vector<float> scales = xq::magnitude_aware_sign::scales(x);
    const auto& want = c.at("scales");
    const std::size_t channels = shape.back(), rows = x.size() / channels;
    REQUIRE(scales.size() == channels);
    xq::magnitude_aware_sign q;
    const auto run = qtest::run_quantizer(q, x, xt::ones_like(x));
    for (std::size_t k = 0; k < channels; ++k) {
      INFO("shape " << c.at("shape").dump() << ", channel " << k);
      CHECK(golden::to_bits(scales[k]) == want[k].get<std::uint32_t>());
      CHECK(golden::to_bits(std::fabs(run.y.data()[k])) == want[k].get<std::uint32_t>());  // the output, row 0
      const xq::tensor ax = xt::abs(x);
      differs_from_double +=
          golden::to_bits(double_sum(ax.data() + k, rows, channels) / float(rows)) != want[k].get<std::uint32_t>();
    }
  }
  CHECK(differs_from_double >= 20);
}

TEST_CASE("larq SteTern: the TWN threshold and the ternary output are larq's", "[larq][reduction][golden]") {
  const auto data = golden::load("tf_reductions");
  std::size_t differs_from_double = 0;
  for (const auto& c : data.at("ste_tern")) {
    const xq::tensor x = hashed(shape_of(c), c.at("seed").get<std::uint32_t>());
    INFO("shape " << c.at("shape").dump());
    xq::ste_tern q(0.05f, true);
    const std::uint32_t want = c.at("threshold");
    CHECK(golden::to_bits(q.threshold(x)) == want);
    const xq::tensor ax = xt::abs(x);
    differs_from_double += golden::to_bits(0.7f * double_sum(ax.data(), ax.size()) / float(x.size())) != want;
    const auto run = qtest::run_quantizer(q, x, xt::ones_like(x));
    std::uint32_t checksum = 0;
    for (std::size_t i = 0; i < run.y.size(); ++i)
      checksum += std::uint32_t(std::int64_t(run.y.data()[i]) + 1) * golden::index_hash(i, 0);
    CHECK(checksum == c.at("checksum").get<std::uint32_t>());
  }
  CHECK(differs_from_double >= 2);
}

TEST_CASE("tf FakeQuant gradients: d_min and d_max are TensorFlow's bit for bit", "[tf][reduction][golden]") {
  const auto data = golden::load("tf_reductions");
  for (const auto& c : data.at("fake_quant")) {
    const auto shape = shape_of(c);
    const xq::tensor x = hashed(shape, c.at("seed").get<std::uint32_t>()) * 4.0f;
    const xq::tensor dy = hashed(shape, c.at("dy_seed").get<std::uint32_t>());
    const float lo = c.at("min"), hi = c.at("max");
    const auto& wmin = c.at("dmin");
    const auto& wmax = c.at("dmax");
    INFO("shape " << c.at("shape").dump());
    if (shape.size() == 1) {
      const auto g = xq::tf::fake_quant_with_min_max_vars_gradient(dy, x, lo, hi);
      CHECK(golden::to_bits(g.dmin) == wmin[0].get<std::uint32_t>());
      CHECK(golden::to_bits(g.dmax) == wmax[0].get<std::uint32_t>());
    } else {
      const std::size_t channels = shape.back();
      const xq::vector vlo = xt::zeros<float>({channels}) + lo, vhi = xt::zeros<float>({channels}) + hi;
      const auto g = xq::tf::fake_quant_with_min_max_vars_per_channel_gradient(dy, x, vlo, vhi);
      for (std::size_t k = 0; k < channels; ++k) {
        INFO("channel " << k);
        CHECK(golden::to_bits(g.dmin(k)) == wmin[k].get<std::uint32_t>());
        CHECK(golden::to_bits(g.dmax(k)) == wmax[k].get<std::uint32_t>());
      }
    }
  }
}
