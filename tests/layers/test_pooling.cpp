// Pooling: average (TF's division by the non-padded count), max (padding never wins,
// the gradient goes to the first maximum), global average and max (TF splits a global
// max's gradient among ties); naive loops, gradients, shape errors, TF golden vectors,
// and a small CNN checked end to end.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/layers/average_pool2d.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/global_average_pool2d.hpp>
#include <xquant/layers/global_max_pool2d.hpp>
#include <xquant/layers/max_pool2d.hpp>
#include <xquant/layers/sequential.hpp>

#include "../golden.hpp"
#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {

using shape_t = xq::tensor::shape_type;
using P = xq::padding;

struct pool_config {
  const char* name;
  shape_t x;
  std::size_t ph, pw, sh, sw;
  P pad;
};

const std::vector<pool_config>& configs() {
  static const std::vector<pool_config> all = {
      {"2x2 valid", {2, 6, 7, 3}, 2, 2, 2, 2, P::valid},
      {"2x2 same odd", {2, 5, 7, 3}, 2, 2, 2, 2, P::same},
      {"3x3 stride 2 same", {2, 7, 8, 2}, 3, 3, 2, 2, P::same},
      {"3x3 stride 2 valid", {1, 7, 8, 2}, 3, 3, 2, 2, P::valid},
      {"3x3 stride 1 same", {1, 5, 5, 2}, 3, 3, 1, 1, P::same},
      {"3x2 strides 1x2 same", {2, 5, 6, 2}, 3, 2, 1, 2, P::same},
      {"4x4 stride 3 same", {1, 10, 11, 2}, 4, 4, 3, 3, P::same},
      {"2x2 stride 1 valid batch 3", {3, 4, 5, 4}, 2, 2, 1, 1, P::valid},
      {"2x2 stride 3 valid, pixels in no window", {2, 8, 9, 3}, 2, 2, 3, 3, P::valid},
      {"3x2 strides 3x2 same, 9 channels", {2, 7, 5, 9}, 3, 2, 3, 2, P::same},
  };
  return all;
}

// The windows of output (oh, ow) as in TF: start oh*s - pad_before, padding elements skipped.
struct window_ref {
  std::size_t out_h, out_w;
  long pad_h, pad_w;
};
window_ref tf_windows(const pool_config& c) {
  auto axis = [](std::size_t in, std::size_t k, std::size_t s, P p, std::size_t& out, long& pad) {
    if (p == P::valid) {
      out = (in - k) / s + 1;
      pad = 0;
    } else {
      out = (in + s - 1) / s;
      pad = std::max(0L, long((out - 1) * s + k) - long(in)) / 2;
    }
  };
  window_ref r{};
  axis(c.x[1], c.ph, c.sh, c.pad, r.out_h, r.pad_h);
  axis(c.x[2], c.pw, c.sw, c.pad, r.out_w, r.pad_w);
  return r;
}

// avg: float sum in window order, divided by the count of real elements. max: the largest.
xq::tensor naive_pool(const xq::tensor& x, const pool_config& c, bool average) {
  const window_ref r = tf_windows(c);
  const std::size_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], ch = x.shape()[3];
  xq::tensor y = xt::zeros<float>({n, r.out_h, r.out_w, ch});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t oh = 0; oh < r.out_h; ++oh)
      for (std::size_t ow = 0; ow < r.out_w; ++ow)
        for (std::size_t k = 0; k < ch; ++k) {
          float acc = average ? 0.0f : -std::numeric_limits<float>::infinity();
          int count = 0;
          for (std::size_t a = 0; a < c.ph; ++a)
            for (std::size_t b = 0; b < c.pw; ++b) {
              const long ih = long(oh * c.sh) - r.pad_h + long(a), iw = long(ow * c.sw) - r.pad_w + long(b);
              if (ih < 0 || iw < 0 || ih >= long(h) || iw >= long(w)) continue;
              const float v = x(i, ih, iw, k);
              acc = average ? acc + v : std::max(acc, v);
              ++count;
            }
          y(i, oh, ow, k) = average ? acc / float(count) : acc;
        }
  return y;
}

// A shuffled ramp in [-1, 1): no ties, no near-ties, so max pooling's central
// differences never cross a switch of the maximum.
xq::tensor distinct(const shape_t& shape, unsigned seed) {
  xq::tensor t = xq::tensor::from_shape(shape);
  std::vector<std::size_t> order(t.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = float(order[i]) / float(t.size()) * 2.0f - 1.0f;
  return t;
}

xq::tensor ints(const shape_t& shape, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  xq::tensor t = xq::tensor::from_shape(shape);
  for (auto& v : t) v = float(d(rng));
  return t;
}

xq::tensor values(const shape_t& shape, std::vector<float> v) {
  xq::tensor t = xq::tensor::from_shape(shape);
  REQUIRE(v.size() == t.size());
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const xq::shape_error& e) {
    return e.what();
  }
  return "(no shape_error)";
}

void check_close(const xq::tensor& got, const xq::tensor& want, const std::string& what) {
  golden::check_close_scaled(got, want, what);
}

}  // namespace

TEST_CASE("average_pool2d and max_pool2d forward equal a naive loop", "[layers][pooling]") {
  unsigned seed = 1;
  for (const auto& c : configs()) {
    INFO(c.name);
    const xq::tensor x = ints(c.x, -9, 9, ++seed);
    const xq::var avg = xq::ops::average_pool2d(xq::var(x), {c.ph, c.pw}, {c.sh, c.sw}, c.pad);
    CHECK((avg.value() == naive_pool(x, c, true)));
    const xq::tensor xr = uniform(c.x, -1, 1, ++seed);
    const xq::var mx = xq::ops::max_pool2d(xq::var(xr), {c.ph, c.pw}, {c.sh, c.sw}, c.pad);
    CHECK((mx.value() == naive_pool(xr, c, false)));
  }
}

TEST_CASE("average_pool2d with same padding divides by the non-padded count", "[layers][pooling]") {
  // 3x3 input, 2x2 windows, stride 2, same: one zero row/column of padding after.
  xq::tensor x = xt::zeros<float>({1, 3, 3, 1});
  for (std::size_t i = 0; i < 9; ++i) x.data()[i] = float(i + 1);
  xq::var in(x, true);
  xq::tape t;
  const xq::var y = xq::average_pool2d(2, P::same)(in);
  REQUIRE(y.shape() == shape_t{1, 2, 2, 1});
  CHECK(y.value()(0, 0, 0, 0) == 3.0f);  // (1+2+4+5)/4
  CHECK(y.value()(0, 0, 1, 0) == 4.5f);  // (3+6)/2, not /4
  CHECK(y.value()(0, 1, 0, 0) == 7.5f);  // (7+8)/2
  CHECK(y.value()(0, 1, 1, 0) == 9.0f);  // 9/1
  t.backward(y, xq::tensor(xt::ones<float>({1, 2, 2, 1})));
  const xq::tensor want = values({1, 3, 3, 1}, {0.25f, 0.25f, 0.5f, 0.25f, 0.25f, 0.5f, 0.5f, 0.5f, 1.0f});
  CHECK((in.grad() == want));
}

TEST_CASE("max_pool2d: padding never wins, ties go to the first maximum", "[layers][pooling]") {
  SECTION("all-negative input with same padding") {
    const xq::tensor x = uniform({1, 5, 5, 2}, -3, -1, 4);
    const xq::var y = xq::max_pool2d(3, 1, P::same)(xq::var(x));
    CHECK(xt::all(xt::less(y.value(), -1.0f + 1e-6f)));
  }
  SECTION("equal values: the gradient goes to the first in row-major order") {
    xq::var x(xt::ones<float>({1, 4, 4, 1}), true);
    x.value()(0, 1, 3, 0) = 2.0f;  // the max of window (0, 1)
    xq::tape t;
    const xq::var y = xq::max_pool2d(2)(x);
    t.backward(y, xq::tensor(xt::ones<float>({1, 2, 2, 1})));
    xq::tensor want = xt::zeros<float>({1, 4, 4, 1});
    want(0, 0, 0, 0) = 1;  // window (0, 0): all ones, the first
    want(0, 1, 3, 0) = 1;  // window (0, 1): the single max
    want(0, 2, 0, 0) = 1;
    want(0, 2, 2, 0) = 1;
    CHECK((x.grad() == want));
  }
  SECTION("overlapping windows add their gradients") {
    xq::var x(xt::zeros<float>({1, 3, 3, 1}), true);
    x.value()(0, 1, 1, 0) = 5.0f;  // the max of every 2x2 window, stride 1
    xq::tape t;
    const xq::var y = xq::max_pool2d(2, 1)(x);
    t.backward(y, xq::tensor(xt::ones<float>({1, 2, 2, 1})));
    CHECK(x.grad()(0, 1, 1, 0) == 4.0f);
    CHECK(xt::sum(x.grad())() == 4.0f);
  }
}

TEST_CASE("pooling gradients", "[layers][pooling][gradient]") {
  unsigned seed = 20;
  for (const auto& c : configs()) {
    {
      xq::var x(uniform(c.x, -1, 1, ++seed), true);
      xq::average_pool2d pool({c.ph, c.pw}, {c.sh, c.sw}, c.pad);
      xq::testing::gradient_check_options opt;
      opt.eps = 0.05f;
      check_gradients([&] { return pool(x); }, {x.state()}, opt, std::string("average ") + c.name);
    }
    {
      xq::var x(distinct(c.x, ++seed), true);
      xq::max_pool2d pool({c.ph, c.pw}, {c.sh, c.sw}, c.pad);
      xq::testing::gradient_check_options opt;
      opt.eps = 0.25f / float(x.size());  // an eighth of the gap between two values
      check_gradients([&] { return pool(x); }, {x.state()}, opt, std::string("max ") + c.name);
    }
  }
}

TEST_CASE("global pooling: forward, gradients, ties, keepdims", "[layers][pooling][global]") {
  const xq::tensor x = uniform({3, 5, 6, 4}, -1, 1, 50);
  {
    const xq::var y = xq::global_average_pool2d()(xq::var(x));
    REQUIRE(y.shape() == shape_t{3, 4});
    for (std::size_t n = 0; n < 3; ++n)
      for (std::size_t c = 0; c < 4; ++c) {
        float s = 0;
        for (std::size_t h = 0; h < 5; ++h)
          for (std::size_t w = 0; w < 6; ++w) s += x(n, h, w, c);
        CHECK(y.value()(n, c) == s / 30.0f);
      }
    CHECK(xq::global_average_pool2d(true)(xq::var(x)).shape() == shape_t{3, 1, 1, 4});
  }
  {
    const xq::var y = xq::global_max_pool2d()(xq::var(x));
    REQUIRE(y.shape() == shape_t{3, 4});
    for (std::size_t n = 0; n < 3; ++n)
      for (std::size_t c = 0; c < 4; ++c)
        CHECK(y.value()(n, c) == xt::amax(xt::view(x, n, xt::all(), xt::all(), c))());
    CHECK(xq::global_max_pool2d(true)(xq::var(x)).shape() == shape_t{3, 1, 1, 4});
  }
  xq::var xa(uniform({2, 4, 3, 5}, -1, 1, 51), true);
  xq::testing::gradient_check_options opt;
  opt.eps = 0.05f;
  xq::global_average_pool2d gap;
  check_gradients([&] { return gap(xa); }, {xa.state()}, opt, "global average");
  xq::global_average_pool2d gap_keep(true);
  check_gradients([&] { return gap_keep(xa); }, {xa.state()}, opt, "global average keepdims");
  xq::var xm(distinct({2, 4, 3, 5}, 52), true);
  opt.eps = 0.25f / float(xm.size());
  xq::global_max_pool2d gmp;
  check_gradients([&] { return gmp(xm); }, {xm.state()}, opt, "global max");

  SECTION("global max splits the gradient evenly among tied maxima (TF's reduce_max)") {
    xq::var t(xt::zeros<float>({1, 2, 2, 2}), true);
    t.value()(0, 0, 0, 0) = 1;
    t.value()(0, 1, 1, 0) = 1;  // channel 0: two maxima
    t.value()(0, 0, 1, 1) = 3;  // channel 1: one
    xq::tape tape;
    const xq::var y = xq::global_max_pool2d()(t);
    tape.backward(y, values({1, 2}, {4.0f, 2.0f}));
    const xq::tensor want = values({1, 2, 2, 2}, {2.0f, 0.0f, 0.0f, 2.0f, 0.0f, 0.0f, 2.0f, 0.0f});
    CHECK((t.grad() == want));
  }
}

TEST_CASE("pooling layers: names, setters, shape errors", "[layers][pooling][errors]") {
  CHECK(xq::average_pool2d().name() == "average_pooling2d");
  CHECK(xq::max_pool2d().name() == "max_pooling2d");
  CHECK(xq::global_average_pool2d().name() == "global_average_pooling2d");
  CHECK(xq::global_max_pool2d().name() == "global_max_pooling2d");
  auto pool = xq::max_pool2d(3).strides({2, 1}).padding(P::same).name("pool");
  CHECK(pool.pool_size() == std::array<std::size_t, 2>{3, 3});
  CHECK(pool.strides() == std::array<std::size_t, 2>{2, 1});
  CHECK(pool.padding() == P::same);
  CHECK(pool(xq::var(xt::zeros<float>({1, 5, 5, 2}))).shape() == shape_t{1, 3, 5, 2});
  CHECK(xq::average_pool2d(2).strides() == std::array<std::size_t, 2>{2, 2});  // strides default to pool_size
  CHECK(pool.parameters().empty());

  CHECK(message_of([&] { pool(xq::var(xt::zeros<float>({28, 28}))); }) ==
        "pool: expected input of shape (N, H, W, C), given (28, 28)");
  auto avg = xq::average_pool2d(3).name("avg");
  CHECK(message_of([&] { avg(xq::var(xt::zeros<float>({1, 2, 8, 3}))); }) ==
        "avg: expected input of shape (N, H >= 3, W >= 3, C) for a 3x3 window and valid padding, given (1, 2, 8, 3)");
  auto gap = xq::global_average_pool2d().name("gap");
  CHECK(message_of([&] { gap(xq::var(xt::zeros<float>({4, 10}))); }) ==
        "gap: expected input of shape (N, H, W, C), given (4, 10)");
  auto gmp = xq::global_max_pool2d().name("gmp");
  CHECK(message_of([&] { gmp(xq::var(xt::zeros<float>({4, 0, 3, 2}))); }) ==
        "gmp: expected input with H, W >= 1, given (4, 0, 3, 2)");
  CHECK_THROWS_AS(xq::max_pool2d(0), xq::argument_error);
  CHECK_THROWS_AS(xq::average_pool2d(2).strides({1, 0}), xq::argument_error);
}

TEST_CASE("pooling matches TensorFlow (golden vectors)", "[layers][pooling][golden]") {
  const auto doc = golden::load("layers_conv_pool");
  std::size_t checked = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string op = c.at("op");
    if (op.find("pool") == std::string::npos) continue;
    const std::string name = op + " " + c.at("name").get<std::string>();
    INFO(name);
    xq::var x(golden::tensor(c.at("x")), true);
    xq::tape t;
    xq::var y;
    if (op == "average_pool2d" || op == "max_pool2d") {
      const xq::size2 pool{c.at("pool_size")[0].get<std::size_t>(), c.at("pool_size")[1].get<std::size_t>()};
      const xq::size2 strides{c.at("strides")[0].get<std::size_t>(), c.at("strides")[1].get<std::size_t>()};
      const P pad = c.at("padding") == "same" ? P::same : P::valid;
      y = op == "average_pool2d" ? xq::ops::average_pool2d(x, pool, strides, pad)
                                 : xq::ops::max_pool2d(x, pool, strides, pad);
    } else {
      y = op == "global_average_pool2d" ? xq::ops::global_average_pool2d(x) : xq::ops::global_max_pool2d(x);
    }
    check_close(y.value(), golden::tensor(c.at("y")), name + ": y");
    t.backward(y, golden::tensor(c.at("dy")));
    check_close(x.grad(), golden::tensor(c.at("dx")), name + ": dx");
    ++checked;
  }
  CHECK(checked == 12);
}

TEST_CASE("a small CNN: conv, pools and dense, checked end to end", "[layers][pooling][gradient]") {
  auto model = xq::sequential(xq::conv2d(4, 3).padding(P::same), xq::max_pool2d(2),
                              xq::conv2d(6, 3).padding(P::same).strides(1), xq::average_pool2d(2, P::same),
                              xq::global_average_pool2d(), xq::dense(3));
  xq::set_seed(9);
  xq::build(model, {2, 8, 8, 1});
  CHECK(model.get<0>().kernel()->name() == "conv2d/kernel");
  CHECK(model.get<2>().kernel()->name() == "conv2d_1/kernel");
  xq::var x(distinct({2, 8, 8, 1}, 77), true);
  std::vector<std::shared_ptr<xq::variable_state>> wrt = {x.state()};
  for (const auto& p : xq::parameters(model)) wrt.push_back(p);
  CHECK(wrt.size() == 7);
  xq::testing::gradient_check_options opt;
  opt.eps = 1e-3f;  // small: max pooling must not switch (inputs are 1/64 apart)
  opt.atol = 5e-3;
  check_gradients([&] { return model(x); }, wrt, opt, "cnn");
}
