// correlation: the optical-flow cost volume, against a direct evaluation of its formula
// (in double, every pixel and displacement, zero outside the image), numerical gradient
// checks for both feature maps, the channel order, errors, the summary's MACs, and the
// twin (inputs quantized when a spec asks).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include <xquant/core/model.hpp>
#include <xquant/layers/correlation.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {

/// y[n, i, j, (dy + d)(2d + 1) + dx + d] = mean_c a[n, i, j, c] b[n, i + dy, j + dx, c], in double.
xq::tensor direct_correlation(const xq::tensor& a, const xq::tensor& b, std::int64_t d) {
  const auto n = std::int64_t(a.shape()[0]), h = std::int64_t(a.shape()[1]), w = std::int64_t(a.shape()[2]),
             c = std::int64_t(a.shape()[3]);
  const std::int64_t span = 2 * d + 1;
  xq::tensor y = xq::tensor::from_shape({std::size_t(n), std::size_t(h), std::size_t(w), std::size_t(span * span)});
  for (std::int64_t b0 = 0; b0 < n; ++b0)
    for (std::int64_t i = 0; i < h; ++i)
      for (std::int64_t j = 0; j < w; ++j)
        for (std::int64_t dy = -d; dy <= d; ++dy)
          for (std::int64_t dx = -d; dx <= d; ++dx) {
            double sum = 0;
            if (i + dy >= 0 && i + dy < h && j + dx >= 0 && j + dx < w)
              for (std::int64_t k = 0; k < c; ++k)
                sum += double(a(b0, i, j, k)) * double(b(b0, i + dy, j + dx, k));
            y(b0, i, j, (dy + d) * span + dx + d) = float(sum / double(c));
          }
  return y;
}

/// Two frames' features through one shared 1x1 conv, then their cost volume.
template <class Conv = xq::conv2d, class Corr = xq::correlation>
struct siamese_cost {
  Conv features;
  Corr cost;
  XQ_CHILDREN(features, cost)
  siamese_cost() : features(xq::conv2d(4, 1)), cost(xq::correlation(1)) {}
  xq::var operator()(const xq::var& a, const xq::var& b) { return cost(features(a), features(b)); }
};

}  // namespace

TEST_CASE("correlation equals the cost-volume formula, zero outside the image", "[layers][correlation]") {
  const xq::tensor a = uniform({2, 5, 6, 3}, -1, 1, 11), b = uniform({2, 5, 6, 3}, -1, 1, 12);
  for (std::size_t d : {0u, 1u, 2u, 6u}) {  // 6: wider than the image, most partners outside
    const xq::var y = xq::ops::correlation(xq::var(a), xq::var(b), d);
    const xq::tensor want = direct_correlation(a, b, std::int64_t(d));
    REQUIRE(y.shape() == want.shape());
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::abs(double(y.value().data()[i]) - double(want.data()[i])));
    INFO("max_displacement " << d);
    CHECK(worst < 1e-6);
  }
  // Channel k = (dy + 1) * 3 + (dx + 1): a map correlated with itself shifted right by one
  // pixel peaks at dx = +1, dy = 0 (k = 5) wherever the partner exists.
  xq::tensor shifted = xq::tensor::from_shape({1, 4, 5, 2});
  const xq::tensor base = uniform({1, 4, 5, 2}, 0.5, 1, 13);
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 5; ++j)
      for (std::size_t c = 0; c < 2; ++c) shifted(0, i, j, c) = j > 0 ? base(0, i, j - 1, c) : 0.0f;
  const xq::var y = xq::correlation(1)(xq::var(base), xq::var(shifted));
  CHECK(y.value()(0, 2, 2, 5) == Approx(0.5 * (base(0, 2, 2, 0) * base(0, 2, 2, 0) + base(0, 2, 2, 1) * base(0, 2, 2, 1))));
  CHECK(y.value()(0, 2, 4, 5) == 0.0f);  // (2, 5) is outside the 5-wide image
}

TEST_CASE("correlation's gradients reach both feature maps", "[layers][correlation]") {
  xq::var a(uniform({2, 4, 5, 3}, -1, 1, 21), true), b(uniform({2, 4, 5, 3}, -1, 1, 22), true);
  check_gradients([&] { return xq::ops::correlation(a, b, 2); }, {a.state(), b.state()}, {}, "correlation");
  // The same map on both sides (a siamese net's shared features): the two gradients add.
  check_gradients([&] { return xq::ops::correlation(a, a, 1); }, {a.state()}, {}, "self-correlation");
}

TEST_CASE("correlation: errors name the layer, what was expected and what was given",
          "[layers][correlation][errors]") {
  xq::correlation cost(2);
  CHECK(cost.displacements() == 25u);
  const xq::var a(uniform({1, 4, 4, 3})), b(uniform({1, 4, 4, 2}));
  CHECK_THROWS_WITH(cost(a, b), "correlation: expected a second feature map of shape (1, 4, 4, 3), given (1, 4, 4, 2)");
  CHECK_THROWS_WITH(cost.call(std::vector<xq::var>{a}), "correlation: expected two feature maps (2 inputs), given 1 inputs");
  CHECK_THROWS_AS(cost(xq::var(uniform({4, 4, 3})), xq::var(uniform({4, 4, 3}))), xq::shape_error);
}

TEST_CASE("correlation in a siamese net: summary MACs, and its twin quantizes both maps when asked",
          "[layers][correlation][quantize]") {
  xq::set_seed(3);
  siamese_cost<> net;
  const xq::input_shapes shapes{{1, 6, 6, 2}, {1, 6, 6, 2}};
  xq::build(net, shapes);
  const auto s = xq::summarize(net, shapes);
  std::uint64_t cost_macs = 0;
  for (const auto& row : s.layers)
    if (row.name == "cost") cost_macs = row.mac_count();
  CHECK(cost_macs == 6u * 6u * 9u * 4u);  // pixels x displacements x channels

  // Default (NVIDIA's matrix): the conv is quantized, the cost volume's inputs are not.
  auto plain = xq::quantize_model(net, xq::quantize_options{}, shapes);
  CHECK(plain.features.input_quantizer().enabled());
  CHECK_FALSE(plain.cost.input_quantizer(0).enabled());
  xq::quantize_options asked;
  asked.spec.add_type("correlation");
  auto q = xq::quantize_model(net, asked, shapes);
  CHECK(q.cost.input_quantizer(0).enabled());
  CHECK(q.cost.input_quantizer(1).enabled());
  CHECK(q.cost.float_layer().max_displacement() == 1u);
  const xq::var x1(uniform({2, 6, 6, 2}, -1, 1, 31)), x2(uniform({2, 6, 6, 2}, -1, 1, 32));
  const xq::no_grad off;
  const xq::var yq = q(x1, x2), yf = net(x1, x2);
  REQUIRE(yq.shape() == yf.shape());
  double worst = 0;
  for (std::size_t i = 0; i < yf.size(); ++i)
    worst = std::max(worst, std::abs(double(yq.value().data()[i]) - double(yf.value().data()[i])));
  CHECK(worst > 0);     // quantized: not the float result...
  CHECK(worst < 0.05);  // ...but close to it
}
