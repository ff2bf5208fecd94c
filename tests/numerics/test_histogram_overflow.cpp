// Issue 34, item 4: histograms of values above about FLT_MAX / bins (1.7e35 with 2048 bins).
// The peers' float32 bin position overflows there and was converted to an integer out of
// range (undefined behaviour, reported by -fsanitize=float-cast-overflow; the value landed
// outside its bin and the calibrated range came out far too small). A huge value now lands
// in its bin, the last one for the maximum, and the calibrated range reaches it.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cstdint>
#include <vector>

#include <xquant/numerics/numpy_histogram.hpp>
#include <xquant/numerics/torch_cpu_kernels.hpp>
#include <xquant/numerics/torch_histogram_observer.hpp>

TEST_CASE("torch histc puts a value above FLT_MAX over bins in its bin, not outside the histogram",
          "[calibrator][kernels][issue34]") {
  SECTION("the product of the offset and the bin count overflows") {
    const std::vector<float> x = {0.0f, 1e35f, 3e35f};
    const std::vector<float> h = xq::torch::cpu::histc(x.data(), x.size(), 2048, 0.0, 3e35);
    REQUIRE(h.size() == 2048);
    CHECK(h[0] == 1.0f);
    CHECK(h[682] == 1.0f);  // 1e35 / 3e35 * 2048 = 682.67
    CHECK(h[2047] == 1.0f);
  }
  SECTION("the range itself is wider than FLT_MAX") {
    const std::vector<float> x = {-3e38f, 0.0f, 3e38f};
    const std::vector<float> h = xq::torch::cpu::histc(x.data(), x.size(), 4, -3e38, 3e38);
    CHECK(h == std::vector<float>{1, 0, 1, 1});
  }
  SECTION("below the overflow, the float32 position as before") {
    const std::vector<float> x = {0.0f, 0.5f, 1.0f};
    CHECK(xq::torch::cpu::histc(x.data(), x.size(), 4, 0.0, 1.0) == std::vector<float>{1, 0, 1, 1});
  }
}

TEST_CASE("numpy histogram over a range wider than FLT_MAX bins every value", "[calibrator][kernels][issue34]") {
  const std::vector<float> x = {-3e38f, -1e38f, 0.0f, 3e38f};
  const xq::numpy::histogram_result r = xq::numpy::histogram_uniform(x.data(), x.size(), 4, -3e38f, 3e38f);
  CHECK(r.counts == std::vector<std::int64_t>{1, 1, 1, 1});
}

TEST_CASE("torch histogram observer: a batch with a huge value counts it in the top bin", "[calibrator][issue34]") {
  std::vector<float> x(1000, 0.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 1e33f;  // up to 9.99e35
  xq::torch::histogram_observer obs;
  obs.collect(x.data(), x.size());
  const std::vector<float>& h = obs.histogram();
  float total = 0.0f;
  for (float c : h) total += c;
  CHECK(total == 1000.0f);
  CHECK(h.back() >= 1.0f);
  CHECK(h.front() <= 3.0f);  // 0, 1e33 and 2e33 (each bin is 4.9e32 wide)
}
