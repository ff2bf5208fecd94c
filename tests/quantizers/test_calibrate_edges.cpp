// Issue 34, item 6: a NaN, negative or too large percentile is refused (it used to fall back
// to the method's default silently), and onnxruntime's percentile calibrator gives a valid
// range (min <= max) when both percentiles fall in one bin (the peer returns min above max).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include <xquant/numerics/ort_percentile_calibrator.hpp>
#include <xquant/quantizers/calibrate.hpp>
#include <xquant/xquant.hpp>

namespace {

auto small_model() {
  xq::set_seed(3);
  auto model = xq::sequential(xq::flatten(), xq::dense(3));
  xq::build(model, {1, 4, 2});
  return model;
}

xq::tensor samples() {
  xq::tensor x = xq::tensor::from_shape({4, 4, 2});
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i % 7) - 3.0f;
  return x;
}

}  // namespace

TEST_CASE("calibrate refuses a NaN, negative or too large percentile, stating the valid range",
          "[calibrate][issue34]") {
  auto model = small_model();
  auto ptq = xq::quantize_model(model, xq::quantize_options{}, {1, 4, 2});
  for (const auto method : {xq::calibration_method::nvidia_percentile, xq::calibration_method::ort_percentile}) {
    for (const double p : {std::numeric_limits<double>::quiet_NaN(), -1.0, 100.5}) {
      xq::calibration_options o;
      o.method = method;
      o.percentile = p;
      INFO(xq::to_string(method) << " percentile " << p);
      CHECK_THROWS_WITH(xq::calibrate(ptq, samples(), o),
                        Catch::Contains("xq::calibrate") && Catch::Contains("a percentile in (0, 100]") &&
                            Catch::Contains("0 for the method's default") && Catch::Contains("percentile = "));
    }
    xq::calibration_options ok;
    ok.method = method;
    ok.percentile = 99.9;
    CHECK_NOTHROW(xq::calibrate(ptq, samples(), ok));
    ok.percentile = 0;  // the peer's default
    CHECK_NOTHROW(xq::calibrate(ptq, samples(), ok));
  }
}

TEST_CASE("ort percentile calibrator: both percentiles in one bin give min <= max", "[calibrator][issue34]") {
  SECTION("one bin over [-3, 3], data in [1, 3]: the peer's (1, -3)") {
    xq::ort::percentile_options o;
    o.num_bins = 1;
    xq::ort::percentile_calibrator calib(o);
    const std::vector<float> x = {1.0f, 2.0f, 3.0f};
    calib.collect(x.data(), x.size());
    const auto [lo, hi] = calib.compute_range();
    CHECK(lo == 1.0f);
    CHECK(hi == 3.0f);
  }
  SECTION("data on one positive value, many bins") {
    xq::ort::percentile_calibrator calib;
    const std::vector<float> x = {5.0f, 5.0f, 5.0f};
    calib.collect(x.data(), x.size());
    const auto [lo, hi] = calib.compute_range();
    CHECK(lo == 5.0f);
    CHECK(hi == 5.0f);
  }
  SECTION("one bin, symmetric") {
    xq::ort::percentile_options o;
    o.num_bins = 1;
    o.symmetric = true;
    xq::ort::percentile_calibrator calib(o);
    const std::vector<float> x = {1.0f, 2.0f, 3.0f};
    calib.collect(x.data(), x.size());
    const auto [lo, hi] = calib.compute_range();
    CHECK(lo <= hi);
  }
  SECTION("many bins, spread data: the peer's range unchanged") {
    xq::ort::percentile_options o;
    o.num_bins = 8;
    o.percentile = 50;
    xq::ort::percentile_calibrator calib(o);
    std::vector<float> x;
    for (int i = -8; i <= 8; ++i) x.push_back(static_cast<float>(i));
    calib.collect(x.data(), x.size());
    const auto [lo, hi] = calib.compute_range();
    // edges -8, -6, ..., 8; cdf 2/17, 4/17, 6/17, 8/17, 10/17, ...: the quartiles' bins'
    // left edges (onnxruntime's rule)
    CHECK(lo == -4.0f);
    CHECK(hi == 4.0f);
  }
}
