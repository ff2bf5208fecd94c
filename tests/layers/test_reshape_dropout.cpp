// flatten, reshape (one -1, clear size errors) and dropout (inverted, training
// only, reproducible masks replayed for gradient checks).
#include <catch2/catch.hpp>
#include <string>
#include <xquant/layers/dropout.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/reshape.hpp>
#include <xquant/core/mode.hpp>

#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const xq::error& e) {
    return e.what();
  }
  return "no exception";
}
}  // namespace

TEST_CASE("flatten keeps the batch axis and joins the rest row-major", "[layers][reshape]") {
  xq::var x(uniform({2, 3, 4, 5}, -1, 1, 1), true);
  xq::flatten f;
  auto y = f(x);
  CHECK(y.shape() == xq::tensor::shape_type{2, 60});
  CHECK(std::equal(y.value().begin(), y.value().end(), x.value().begin()));
  check_gradients([&] { return f(x); }, {x.state()}, {}, "flatten");
  CHECK(f(xq::var(xt::zeros<float>({7}))).shape() == xq::tensor::shape_type{7, 1});
  CHECK(message_of([&] { f(xq::var(xq::tensor())); }) ==
        "flatten: expected input of shape (N, ...), given ()");
}

TEST_CASE("reshape gives each sample the target shape, inferring one -1", "[layers][reshape]") {
  xq::var x(uniform({2, 784}, -1, 1, 2), true);
  xq::reshape to_image({28, 28, 1});
  auto y = to_image(x);
  CHECK(y.shape() == xq::tensor::shape_type{2, 28, 28, 1});
  CHECK(std::equal(y.value().begin(), y.value().end(), x.value().begin()));
  xq::reshape rows({-1, 16});
  CHECK(rows(y).shape() == xq::tensor::shape_type{2, 49, 16});
  xq::var small(uniform({3, 2, 6}, -1, 1, 3), true);
  xq::reshape r({4, -1});
  CHECK(r(small).shape() == xq::tensor::shape_type{3, 4, 3});
  check_gradients([&] { return r(small); }, {small.state()}, {}, "reshape");
  check_gradients([&] { return xq::ops::reshape(small, {-1, 3}); }, {small.state()}, {}, "ops::reshape");
  CHECK(xq::ops::reshape(small, {-1, 3}).shape() == xq::tensor::shape_type{12, 3});
  CHECK(r.target_shape() == std::vector<std::ptrdiff_t>{4, -1});
}

TEST_CASE("reshape errors name the path, the target and the sizes", "[layers][reshape][errors]") {
  xq::reshape to_image({28, 28, 1});
  to_image.name("decoder/unflatten");
  CHECK(message_of([&] {
          to_image(xq::var(xt::zeros<float>({2, 700})));
        }) ==
        "decoder/unflatten: expected input of shape (N, ...) with 784 values per sample to reshape to (28, "
        "28, 1), "
        "given (2, 700) (700 values per sample)");
  xq::reshape rows({-1, 16});
  CHECK(message_of([&] {
          rows(xq::var(xt::zeros<float>({2, 3, 5})));
        }) ==
        "reshape: expected input of shape (N, ...) with a multiple of 16 values per sample to reshape to "
        "(-1, 16), "
        "given (2, 3, 5) (15 values per sample)");
  CHECK(message_of([&] {
          xq::ops::reshape(xq::var(xt::zeros<float>({2, 3})), {4, 2});
        }) == "reshape: expected input of 8 values to reshape to (4, 2), given (2, 3) (6 values)");
  CHECK(message_of([] {
          xq::reshape({-1, -1});
        }) ==
        "reshape: expected a target shape of sizes >= 0 with at most one -1 (and no 0 beside it), given (-1, "
        "-1)");
  CHECK_THROWS_AS(xq::reshape({3, -2}), xq::argument_error);
  CHECK_THROWS_AS(rows(xq::var(xt::zeros<float>({2, 3, 5}))), xq::shape_error);
}

TEST_CASE("dropout is the identity outside training mode", "[layers][dropout]") {
  xq::dropout d(0.5f, 42);
  xq::var x(uniform({4, 8}, -1, 1, 4), true);
  auto y = d(x);
  CHECK(y.state() == x.state());  // the very same value: nothing copied
  xq::training_mode off(false);
  CHECK(d(x).state() == x.state());
}

TEST_CASE("dropout in training mode drops about `rate` and scales the rest", "[layers][dropout]") {
  const float rate = 0.3f;
  xq::dropout d(rate, 7);
  const xq::tensor x = uniform({100, 100}, 0.5f, 1.5f, 5);
  xq::training_mode on;
  const xq::tensor y = d(xq::var(x)).value();
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (y.data()[i] == 0.0f)
      ++dropped;
    else
      CHECK(y.data()[i] == (x.data()[i] * (1.0f / (1.0f - rate))));
  }
  CHECK(double(dropped) / x.size() == Approx(rate).margin(0.02));
  // The next call draws a new mask; the same seed replays the first.
  const xq::tensor y2 = d(xq::var(x)).value();
  CHECK_FALSE((y2 == y));
  d.reseed();
  CHECK((d(xq::var(x)).value() == y));
  xq::dropout same_seed(rate, 7);
  CHECK((same_seed(xq::var(x)).value() == y));
  d.reseed(8);
  CHECK(d.seed() == 8u);
  CHECK_FALSE((d(xq::var(x)).value() == y));
  // rate 0 passes everything.
  xq::dropout none(0.0f, 1);
  CHECK((none(xq::var(x)).value() == x));
}

TEST_CASE("dropout's gradient uses the forward mask (replayed for the check)",
          "[layers][dropout][gradients]") {
  xq::dropout d(0.4f, 123);
  xq::var x(uniform({6, 7}, -1, 1, 6), true);
  xq::training_mode on;
  check_gradients(
      [&] {
        d.reseed();
        return d(x);
      },
      {x.state()}, {}, "dropout");
  // dx = mask * scale * dy exactly.
  x.state()->zero_grad();
  d.reseed();
  xq::tape t;
  xq::var y = d(x);
  const xq::tensor dy = uniform(x.shape(), -1, 1, 8);
  t.backward(y, dy);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool kept = y.value().data()[i] != 0.0f;
    CHECK(x.grad().data()[i] == (kept ? dy.data()[i] * (1.0f / (1.0f - 0.4f)) : 0.0f));
  }
}

TEST_CASE("dropout rejects a rate outside 0 <= rate < 1 and seeds from xq::set_seed", "[layers][dropout][errors]") {
  CHECK(message_of([] { xq::dropout(1.0f); }) == "dropout: expected a dropout rate in [0, 1), given 1");
  CHECK_THROWS_AS(xq::dropout(-0.1f), xq::argument_error);
  xq::set_seed(5);
  xq::dropout a(0.5f);
  xq::set_seed(5);
  xq::dropout b(0.5f);
  CHECK(a.seed() == b.seed());
  xq::dropout c(0.5f);
  CHECK(c.seed() != a.seed());
}
