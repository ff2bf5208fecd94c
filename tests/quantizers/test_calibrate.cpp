// Post-training calibration (quantizers/calibrate.hpp): every method sets the ranges of the
// quantizers that are on from the float activations, and the calibrated twin deploys.

#include <cmath>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/quantizers/calibrate.hpp>
#include <xquant/xquant.hpp>

namespace {

xq::tensor images(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f);
  xq::tensor x = xq::tensor::from_shape({n, 8, 8, 2});
  for (float& v : x) v = g(rng);
  return x;
}

auto small_model() {
  xq::set_seed(3);
  auto model = xq::sequential(xq::conv2d(4, 3).padding(xq::padding::same), xq::relu(), xq::flatten(), xq::dense(3));
  xq::build(model, {1, 8, 8, 2});
  return model;
}

}  // namespace

TEST_CASE("calibrate: the max method gives max |x| of each quantizer's float input", "[calibrate]") {
  auto model = small_model();
  auto ptq = xq::quantize_model(model, xq::quantize_options{}, {1, 8, 8, 2});
  const xq::tensor x = images(40, 1);
  xq::calibration_options o;
  o.method = xq::calibration_method::max;
  o.batch_size = 16;  // three batches
  const auto r = xq::calibrate(ptq, x, o);
  CHECK(r.samples == 40);
  REQUIRE(r.ranges.size() == 4);  // conv input and kernel, dense input and kernel
  const float amax = xt::amax(xt::abs(x))();
  const auto& conv_in = ptq.get<0>().input_quantizer().site();
  CHECK(conv_in.max()(0) == amax);
  CHECK(conv_in.min()(0) == -amax);
  // The dense layer sees the float model's activations, not ones quantized with initial ranges.
  xq::tensor hidden;
  {
    const xq::no_grad nothing;
    hidden = xq::ops::relu(model.get<0>()(xq::var(x))).value();
  }
  CHECK(ptq.get<3>().input_quantizer().site().max()(0) == xt::amax(xt::abs(hidden))());
  // Kernels: per output channel.
  const auto& kq = ptq.get<0>().weight_quantizer();
  REQUIRE(kq.max().size() == 4);
  const xq::tensor k = model.get<0>().kernel()->value;
  for (std::size_t f = 0; f < 4; ++f) {
    float m = 0;
    for (std::size_t i = f; i < k.size(); i += 4) m = std::max(m, std::fabs(k.data()[i]));
    CHECK(kq.max()(f) == m);
  }
  // Nothing trained: no batch counted, weights as they were.
  CHECK(conv_in.batches_seen() == 0);
}

TEST_CASE("calibrate: every method calibrates a model that then lowers to integers", "[calibrate]") {
  auto model = small_model();
  const xq::tensor x = images(64, 2), test = images(32, 3);
  xq::tensor reference;
  {
    const xq::no_grad nothing;
    reference = model(xq::var(test)).value();
  }
  for (auto m : {xq::calibration_method::max, xq::calibration_method::nvidia_entropy, xq::calibration_method::nvidia_mse,
                 xq::calibration_method::nvidia_percentile, xq::calibration_method::torch_histogram,
                 xq::calibration_method::ort_percentile}) {
    CAPTURE(xq::to_string(m));
    auto ptq = xq::quantize_model(model, xq::quantize_options{}, {1, 8, 8, 2});
    xq::calibration_options o;
    o.method = m;
    xq::calibrate(ptq, x, o);
    const float lo = ptq.get<3>().input_quantizer().site().min()(0), hi = ptq.get<3>().input_quantizer().site().max()(0);
    CHECK(lo <= 0.0f);
    CHECK(hi > 0.0f);
    xq::tensor y;
    {
      const xq::no_grad nothing;
      y = ptq(xq::var(test)).value();
    }
    // 8-bit PTQ of a 2-layer model: logits within a few percent of the float model's range.
    const float scale = xt::amax(xt::abs(reference))();
    CHECK(xt::amax(xt::abs(y - reference))() <= 0.1f * scale);
    const auto engine = xq::deploy::lower(ptq, {8, 8, 2});
    const auto report = xq::deploy::parity(ptq, engine, test);
    CHECK(report.same_top1_share() >= 0.9);
  }
}

TEST_CASE("calibrate: bad calibration data is refused, naming the quantizer", "[calibrate]") {
  auto model = small_model();
  auto ptq = xq::quantize_model(model, xq::quantize_options{}, {1, 8, 8, 2});
  CHECK_THROWS_WITH(xq::calibrate(ptq, xq::tensor::from_shape({0, 8, 8, 2})), Catch::Contains("calibration sample"));
  xq::tensor x = images(4, 5);
  x(1, 2, 3, 0) = std::nanf("");
  CHECK_THROWS_WITH(xq::calibrate(ptq, x), Catch::Contains("input_quantizer") && Catch::Contains("finite"));
}
