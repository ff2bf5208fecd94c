// conv2d and depthwise_conv2d: TF's padding rules, forward against a naive loop
// (exact: integer-valued data makes every summation order give the same float),
// gradients by central differences for many geometries, shape errors naming the
// layer path, and TensorFlow's own outputs and gradients (golden vectors).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <xquant/core/children.hpp>
#include <xquant/core/model.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/depthwise_conv2d.hpp>
#include <xquant/kernels/padding.hpp>

#include "../golden.hpp"
#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {

using shape_t = xq::tensor::shape_type;

// TF's output size and padding before, written out again (not through padding.hpp).
struct axis_ref {
  std::size_t out;
  long pad;
};
axis_ref tf_axis(std::size_t in, std::size_t k, std::size_t s, std::size_t d, xq::padding p) {
  const long extent = long((k - 1) * d + 1);
  if (p == xq::padding::valid) return {std::size_t((long(in) - extent + long(s)) / long(s)), 0};
  const std::size_t out = (in + s - 1) / s;
  const long total = std::max(0L, long(out - 1) * long(s) + extent - long(in));
  return {out, total / 2};
}

struct geo {
  std::size_t sh = 1, sw = 1;
  xq::padding pad = xq::padding::valid;
  std::size_t dh = 1, dw = 1;
  xq::conv2d_geometry get() const {
    xq::conv2d_geometry g;
    g.strides = {sh, sw};
    g.padding = pad;
    g.dilation = {dh, dw};
    return g;
  }
};

// y[n, oh, ow, f] = b[f] + sum x[n, oh*s - pad + kh*d, ow*s - pad + kw*d, c] * w[kh, kw, c, f], in double.
xq::tensor naive_conv(const xq::tensor& x, const xq::tensor& w, const xq::tensor* b, const geo& g) {
  const std::size_t n = x.shape()[0], h = x.shape()[1], wd = x.shape()[2], c = x.shape()[3];
  const std::size_t kh = w.shape()[0], kw = w.shape()[1], f = w.shape()[3];
  const axis_ref ah = tf_axis(h, kh, g.sh, g.dh, g.pad), aw = tf_axis(wd, kw, g.sw, g.dw, g.pad);
  xq::tensor y = xt::zeros<float>({n, ah.out, aw.out, f});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t oh = 0; oh < ah.out; ++oh)
      for (std::size_t ow = 0; ow < aw.out; ++ow)
        for (std::size_t o = 0; o < f; ++o) {
          double s = b ? (*b)(o) : 0.0;
          for (std::size_t a = 0; a < kh; ++a)
            for (std::size_t e = 0; e < kw; ++e) {
              const long ih = long(oh * g.sh) - ah.pad + long(a * g.dh);
              const long iw = long(ow * g.sw) - aw.pad + long(e * g.dw);
              if (ih < 0 || iw < 0 || ih >= long(h) || iw >= long(wd)) continue;
              for (std::size_t ch = 0; ch < c; ++ch) s += double(x(i, ih, iw, ch)) * double(w(a, e, ch, o));
            }
          y(i, oh, ow, o) = float(s);
        }
  return y;
}

// y[n, oh, ow, c*M + m] = b[c*M + m] + sum x[n, ih, iw, c] * w[kh, kw, c, m].
xq::tensor naive_depthwise(const xq::tensor& x, const xq::tensor& w, const xq::tensor* b, const geo& g) {
  const std::size_t n = x.shape()[0], h = x.shape()[1], wd = x.shape()[2], c = x.shape()[3];
  const std::size_t kh = w.shape()[0], kw = w.shape()[1], mult = w.shape()[3];
  const axis_ref ah = tf_axis(h, kh, g.sh, g.dh, g.pad), aw = tf_axis(wd, kw, g.sw, g.dw, g.pad);
  xq::tensor y = xt::zeros<float>({n, ah.out, aw.out, c * mult});
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t oh = 0; oh < ah.out; ++oh)
      for (std::size_t ow = 0; ow < aw.out; ++ow)
        for (std::size_t ch = 0; ch < c; ++ch)
          for (std::size_t m = 0; m < mult; ++m) {
            double s = b ? (*b)(ch * mult + m) : 0.0;
            for (std::size_t a = 0; a < kh; ++a)
              for (std::size_t e = 0; e < kw; ++e) {
                const long ih = long(oh * g.sh) - ah.pad + long(a * g.dh);
                const long iw = long(ow * g.sw) - aw.pad + long(e * g.dw);
                if (ih < 0 || iw < 0 || ih >= long(h) || iw >= long(wd)) continue;
                s += double(x(i, ih, iw, ch)) * double(w(a, e, ch, m));
              }
            y(i, oh, ow, ch * mult + m) = float(s);
          }
  return y;
}

// Small integers as floats: every partial sum is exact, so any order gives the same result.
xq::tensor ints(const shape_t& shape, int lo, int hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  xq::tensor t = xq::tensor::from_shape(shape);
  for (auto& v : t) v = float(d(rng));
  return t;
}

struct conv_config {
  const char* name;
  shape_t x;
  std::size_t kh, kw, out;  // out: filters or depth multiplier
  geo g;
};

const std::vector<conv_config>& configs() {
  using P = xq::padding;
  static const std::vector<conv_config> all = {
      {"3x3 valid", {2, 7, 9, 3}, 3, 3, 4, {1, 1, P::valid, 1, 1}},
      {"3x3 same stride 2 (odd sizes)", {2, 7, 9, 3}, 3, 3, 4, {2, 2, P::same, 1, 1}},
      {"3x3 valid stride 2", {1, 9, 8, 2}, 3, 3, 3, {2, 2, P::valid, 1, 1}},
      {"3x2 same strides 2x1", {2, 8, 7, 3}, 3, 2, 2, {2, 1, P::same, 1, 1}},
      {"4x4 same stride 3", {1, 10, 11, 2}, 4, 4, 3, {3, 3, P::same, 1, 1}},
      {"2x2 same (pad after)", {1, 5, 6, 2}, 2, 2, 2, {1, 1, P::same, 1, 1}},
      {"3x3 dilation 2 same", {2, 9, 7, 3}, 3, 3, 2, {1, 1, P::same, 2, 2}},
      {"3x3 dilation 2 valid", {1, 9, 10, 2}, 3, 3, 3, {1, 1, P::valid, 2, 2}},
      {"3x3 dilation 2x3 same", {1, 8, 11, 2}, 3, 3, 2, {1, 1, P::same, 2, 3}},
      {"3x3 stride 2 dilation 2 same", {1, 11, 9, 2}, 3, 3, 2, {2, 2, P::same, 2, 2}},
      {"1x1 valid (no im2col)", {3, 5, 4, 6}, 1, 1, 4, {1, 1, P::valid, 1, 1}},
      {"1x1 stride 2 same", {1, 5, 7, 3}, 1, 1, 2, {2, 2, P::same, 1, 1}},
      {"5x5 same larger than the input", {1, 3, 4, 2}, 5, 5, 2, {1, 1, P::same, 1, 1}},
      {"3x3 batch 4", {4, 6, 5, 2}, 3, 3, 3, {1, 1, P::same, 1, 1}},
      // 1.2 MB of columns per image: conv2d runs its GEMMs one image at a time.
      {"3x3 same, blocks of one image", {3, 32, 32, 32}, 3, 3, 4, {1, 1, P::same, 1, 1}},
  };
  return all;
}

template <class T>
std::string message_of(T&& f) {
  try {
    f();
  } catch (const xq::shape_error& e) {
    return e.what();
  }
  return "(no shape_error)";
}

// |got - want| <= 1e-5 * max(1, max |want|): TF and xquant add in different orders.
void check_close(const xq::tensor& got, const xq::tensor& want, const std::string& what) {
  golden::check_close_scaled(got, want, what);
}

}  // namespace

TEST_CASE("padding: TF's output sizes and pad-before", "[layers][padding]") {
  using P = xq::padding;
  auto a = xq::resolve_axis(7, 3, 2, 1, P::same);  // out 4, total (4-1)*2+3-7 = 2
  CHECK(a.out == 4);
  CHECK(a.pad_before == 1);
  CHECK(a.pad_after == 1);
  a = xq::resolve_axis(10, 4, 3, 1, P::same);  // out 4, total 3: one before, two after
  CHECK(a.out == 4);
  CHECK(a.pad_before == 1);
  CHECK(a.pad_after == 2);
  a = xq::resolve_axis(5, 2, 1, 1, P::same);  // the odd zero goes after
  CHECK(a.out == 5);
  CHECK(a.pad_before == 0);
  CHECK(a.pad_after == 1);
  a = xq::resolve_axis(9, 3, 2, 1, P::valid);
  CHECK(a.out == 4);
  CHECK(a.pad_before == 0);
  a = xq::resolve_axis(9, 3, 1, 2, P::valid);  // dilated extent 5
  CHECK(a.out == 5);
  a = xq::resolve_axis(11, 3, 2, 2, P::same);  // out 6, total 5*2+5-11 = 4
  CHECK(a.out == 6);
  CHECK(a.pad_before == 2);
  CHECK(xq::resolve_axis(4, 3, 1, 2, P::valid).out == 0);  // too small
  CHECK(xq::resolve_axis(3, 5, 1, 1, P::same).out == 3);    // same never is
  for (std::size_t in = 1; in < 13; ++in)
    for (std::size_t k = 1; k < 6; ++k)
      for (std::size_t s = 1; s < 4; ++s)
        for (std::size_t d = 1; d < 3; ++d)
          for (P p : {P::valid, P::same}) {
            const auto got = xq::resolve_axis(in, k, s, d, p);
            const auto want = tf_axis(in, k, s, d, p);
            if (p == P::valid && in < (k - 1) * d + 1) {
              CHECK(got.out == 0);
              continue;
            }
            CHECK(got.out == want.out);
            CHECK(long(got.pad_before) == want.pad);
          }
}

TEST_CASE("conv2d forward equals a naive loop exactly", "[layers][conv2d]") {
  unsigned seed = 10;
  for (const auto& cfg : configs()) {
    for (bool with_bias : {true, false}) {
      INFO(cfg.name << (with_bias ? " with bias" : " without bias"));
      const xq::tensor x = ints(cfg.x, -3, 3, ++seed);
      const xq::tensor w = ints({cfg.kh, cfg.kw, cfg.x[3], cfg.out}, -2, 2, ++seed);
      const xq::tensor b = ints({cfg.out}, -2, 2, ++seed);
      const xq::var bv(b);
      const xq::var y = xq::ops::conv2d(xq::var(x), xq::var(w), with_bias ? &bv : nullptr, cfg.g.get());
      const xq::tensor want = naive_conv(x, w, with_bias ? &b : nullptr, cfg.g);
      CHECK(y.value().shape() == want.shape());
      CHECK((y.value() == want));
    }
  }
}

TEST_CASE("conv2d layer: lazy build, Keras names and initializer, chainable setters", "[layers][conv2d]") {
  xq::set_seed(3);
  auto conv = xq::conv2d(8, {3, 2}).strides(2).padding(xq::padding::same).dilation({1, 1}).name("conv");
  CHECK(conv.name() == "conv");
  CHECK(conv.filters() == 8);
  CHECK(conv.kernel_size() == std::array<std::size_t, 2>{3, 2});
  CHECK(conv.strides() == std::array<std::size_t, 2>{2, 2});
  CHECK(conv.padding() == xq::padding::same);
  CHECK(conv.use_bias());
  CHECK_FALSE(conv.kernel());
  const xq::var y = conv(xq::var(uniform({2, 7, 9, 5})));
  CHECK(y.shape() == shape_t{2, 4, 5, 8});
  REQUIRE(conv.kernel());
  CHECK(conv.kernel()->value.shape() == shape_t{3, 2, 5, 8});
  CHECK(conv.kernel()->name() == "conv/kernel");
  CHECK(conv.bias()->name() == "conv/bias");
  CHECK(conv.bias()->value.shape() == shape_t{8});
  CHECK(xt::all(xt::equal(conv.bias()->value, 0.0f)));
  const float limit = std::sqrt(6.0f / float(3 * 2 * 5 + 3 * 2 * 8));  // Keras fans: kh*kw*cin, kh*kw*filters
  float largest = 0;
  for (float v : conv.kernel()->value) largest = std::max(largest, std::fabs(v));
  CHECK(largest <= limit);
  CHECK(largest > 0.8f * limit);
  CHECK(conv.parameters().size() == 2);

  auto plain = xq::conv2d(4, 3).use_bias(false);
  plain(xq::var(uniform({1, 5, 5, 2})));
  CHECK_FALSE(plain.bias());
  CHECK_THROWS_AS(plain.use_bias(true), xq::argument_error);
  CHECK_THROWS_AS(xq::conv2d(4, 3).strides(0), xq::argument_error);
  CHECK_THROWS_AS(xq::conv2d(4, {3, 0}), xq::argument_error);
  CHECK_THROWS_AS(xq::conv2d(0, 3), xq::argument_error);
}

TEST_CASE("conv2d gradients: input, kernel and bias, many geometries", "[layers][conv2d][gradient]") {
  xq::testing::gradient_check_options opt;
  opt.eps = 0.05f;  // linear in each input: a large step only reduces rounding error
  unsigned seed = 40;
  for (const auto& cfg : configs()) {
    for (bool with_bias : {true, false}) {
      auto conv = xq::conv2d(cfg.out, {cfg.kh, cfg.kw})
                      .strides({cfg.g.sh, cfg.g.sw})
                      .padding(cfg.g.pad)
                      .dilation({cfg.g.dh, cfg.g.dw})
                      .use_bias(with_bias);
      xq::var x(uniform(cfg.x, -1, 1, ++seed), true);
      conv(x);  // build
      if (with_bias) conv.bias()->value = uniform({cfg.out}, -1, 1, ++seed);
      std::vector<std::shared_ptr<xq::variable_state>> wrt = {x.state(), conv.kernel()};
      if (with_bias) wrt.push_back(conv.bias());
      check_gradients([&] { return conv(x); }, wrt, opt, std::string(cfg.name) + (with_bias ? " +bias" : ""));
    }
  }
}

TEST_CASE("ops::conv2d: a kernel that is not a parameter gets its gradient too", "[layers][conv2d][gradient]") {
  // What a quantized conv does: the kernel var is computed (fake-quantized) from the weight.
  xq::var x(uniform({2, 6, 5, 3}, -1, 1, 5), true);
  xq::var w(uniform({3, 3, 3, 4}, -1, 1, 6), true);
  xq::var b(uniform({4}, -1, 1, 7), true);
  geo g{2, 2, xq::padding::same, 1, 1};
  xq::testing::gradient_check_options opt;
  opt.eps = 0.05f;
  check_gradients([&] { return xq::ops::conv2d(x, w, &b, g.get()); }, {x.state(), w.state(), b.state()}, opt);

  SECTION("only the input wants a gradient: no kernel gradient is computed") {
    xq::var frozen(uniform({3, 3, 3, 4}, -1, 1, 8), false);
    check_gradients([&] { return xq::ops::conv2d(x, frozen, nullptr, g.get()); }, {x.state()}, opt);
    CHECK_FALSE(frozen.state()->has_grad());
  }
  SECTION("only the kernel wants a gradient") {
    xq::var data(uniform({2, 6, 5, 3}, -1, 1, 9), false);
    check_gradients([&] { return xq::ops::conv2d(data, w, nullptr, g.get()); }, {w.state()}, opt);
    CHECK_FALSE(data.state()->has_grad());
  }
}

TEST_CASE("conv2d: empty batch", "[layers][conv2d]") {
  auto conv = xq::conv2d(3, 3).padding(xq::padding::same);
  xq::var x(xt::zeros<float>({0, 5, 5, 2}), true);
  xq::tape t;
  xq::var y = conv(x);
  CHECK(y.shape() == shape_t{0, 5, 5, 3});
  t.backward(y, xq::tensor(xt::zeros<float>({0, 5, 5, 3})));
  CHECK(conv.kernel()->has_grad());
  CHECK(xt::all(xt::equal(conv.kernel()->grad, 0.0f)));
}

TEST_CASE("conv2d shape errors name the layer path, the expected and the given shape", "[layers][conv2d][errors]") {
  auto conv = xq::conv2d(4, 3).name("conv");
  conv(xq::var(xt::zeros<float>({1, 28, 28, 16})));  // built for 16 channels
  CHECK(message_of([&] { conv(xq::var(xt::zeros<float>({64, 28, 28, 8}))); }) ==
        "conv: expected input of shape (N, H, W, 16), given (64, 28, 28, 8)");
  CHECK(message_of([&] { conv(xq::var(xt::zeros<float>({28, 28, 16}))); }) ==
        "conv: expected input of shape (N, H, W, 16), given (28, 28, 16)");

  auto fresh = xq::conv2d(4, 3).name("stem");
  CHECK(message_of([&] { fresh(xq::var(xt::zeros<float>({28, 28}))); }) ==
        "stem: expected input of shape (N, H, W, C), given (28, 28)");

  auto dilated = xq::conv2d(4, 3).dilation(2).name("dilated");
  CHECK(message_of([&] { dilated(xq::var(xt::zeros<float>({1, 4, 9, 3}))); }) ==
        "dilated: expected input of shape (N, H >= 5, W >= 5, C) for a 3x3 window with dilation (2, 2) and valid "
        "padding, given (1, 4, 9, 3)");

  // Inside a composite, the path says where.
  struct block {
    xq::conv2d conv{8, 3};
    XQ_CHILDREN(conv)
    xq::var operator()(const xq::var& x) { return conv(x); }
  } model;
  xq::build(model, {1, 6, 6, 2});
  CHECK(message_of([&] { model(xq::var(xt::zeros<float>({1, 6, 6, 3}))); }) ==
        "conv: expected input of shape (N, H, W, 2), given (1, 6, 6, 3)");
  struct outer {
    block inner;
    XQ_CHILDREN(inner)
    xq::var operator()(const xq::var& x) { return inner(x); }
  } nested;
  xq::build(nested, {1, 6, 6, 2});
  CHECK(message_of([&] { nested(xq::var(xt::zeros<float>({1, 6, 6, 3}))); }) ==
        "inner/conv: expected input of shape (N, H, W, 2), given (1, 6, 6, 3)");

  // ops::conv2d checks its kernel and bias.
  const xq::var x(xt::zeros<float>({1, 5, 5, 2}));
  CHECK(message_of([&] { xq::ops::conv2d(x, xq::var(xt::zeros<float>({3, 3, 2})), nullptr, {}, "op"); }) ==
        "op: expected kernel of rank 4 (KH, KW, C, F), given (3, 3, 2)");
  const xq::var bad_bias(xt::zeros<float>({5}));
  CHECK(message_of([&] { xq::ops::conv2d(x, xq::var(xt::zeros<float>({3, 3, 2, 4})), &bad_bias, {}, "op"); }) ==
        "op: expected bias of shape (4,), given (5,)");
}

TEST_CASE("depthwise_conv2d forward equals a naive loop exactly", "[layers][depthwise_conv2d]") {
  unsigned seed = 70;
  for (const auto& cfg : configs()) {
    for (std::size_t mult : {std::size_t(1), std::size_t(2), std::size_t(3)}) {
      for (bool with_bias : {true, false}) {
        INFO(cfg.name << " multiplier " << mult << (with_bias ? " with bias" : ""));
        const xq::tensor x = ints(cfg.x, -3, 3, ++seed);
        const xq::tensor w = ints({cfg.kh, cfg.kw, cfg.x[3], mult}, -2, 2, ++seed);
        const xq::tensor b = ints({cfg.x[3] * mult}, -2, 2, ++seed);
        const xq::var bv(b);
        const xq::var y =
            xq::ops::depthwise_conv2d(xq::var(x), xq::var(w), with_bias ? &bv : nullptr, cfg.g.get());
        const xq::tensor want = naive_depthwise(x, w, with_bias ? &b : nullptr, cfg.g);
        CHECK(y.value().shape() == want.shape());
        CHECK((y.value() == want));
      }
    }
  }
}

TEST_CASE("depthwise_conv2d layer: build, Keras names, gradients", "[layers][depthwise_conv2d][gradient]") {
  auto dw = xq::depthwise_conv2d(3, 2).strides(2).padding(xq::padding::same).name("dw");
  xq::var x(uniform({2, 7, 6, 3}, -1, 1, 90), true);
  CHECK(dw(x).shape() == shape_t{2, 4, 3, 6});
  CHECK(dw.kernel()->value.shape() == shape_t{3, 3, 3, 2});
  CHECK(dw.kernel()->name() == "dw/depthwise_kernel");
  CHECK(dw.bias()->name() == "dw/bias");
  CHECK(dw.bias()->value.shape() == shape_t{6});
  const float limit = std::sqrt(6.0f / float(9 * 3 + 9 * 2));
  for (float v : dw.kernel()->value) CHECK(std::fabs(v) <= limit);

  xq::testing::gradient_check_options opt;
  opt.eps = 0.05f;
  unsigned seed = 100;
  for (const auto& cfg : configs()) {
    for (std::size_t mult : {std::size_t(1), std::size_t(2)}) {
      auto layer = xq::depthwise_conv2d({cfg.kh, cfg.kw}, mult)
                       .strides({cfg.g.sh, cfg.g.sw})
                       .padding(cfg.g.pad)
                       .dilation({cfg.g.dh, cfg.g.dw});
      xq::var in(uniform(cfg.x, -1, 1, ++seed), true);
      layer(in);
      layer.bias()->value = uniform(layer.bias()->value.shape(), -1, 1, ++seed);
      check_gradients([&] { return layer(in); }, {in.state(), layer.kernel(), layer.bias()}, opt,
                      std::string(cfg.name) + " multiplier " + std::to_string(mult));
    }
  }
}

TEST_CASE("depthwise_conv2d shape errors", "[layers][depthwise_conv2d][errors]") {
  auto dw = xq::depthwise_conv2d(3).name("dw");
  dw(xq::var(xt::zeros<float>({1, 8, 8, 16})));
  CHECK(message_of([&] { dw(xq::var(xt::zeros<float>({64, 28, 28, 8}))); }) ==
        "dw: expected input of shape (N, H, W, 16), given (64, 28, 28, 8)");
  CHECK(message_of([&] { dw(xq::var(xt::zeros<float>({1, 2, 8, 16}))); }) ==
        "dw: expected input of shape (N, H >= 3, W >= 3, C) for a 3x3 window and valid padding, given "
        "(1, 2, 8, 16)");
  CHECK_THROWS_AS(xq::depthwise_conv2d(3, 0), xq::argument_error);
}

TEST_CASE("conv2d and depthwise_conv2d match TensorFlow (golden vectors)", "[layers][conv2d][golden]") {
  const auto doc = golden::load("layers_conv_pool");
  std::size_t checked = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string op = c.at("op");
    if (op != "conv2d" && op != "depthwise_conv2d") continue;
    const std::string name = op + " " + c.at("name").get<std::string>();
    INFO(name);
    xq::conv2d_geometry g;
    g.strides = {c.at("strides")[0].get<std::size_t>(), c.at("strides")[1].get<std::size_t>()};
    g.padding = c.at("padding") == "same" ? xq::padding::same : xq::padding::valid;
    g.dilation = {c.at("dilation")[0].get<std::size_t>(), c.at("dilation")[1].get<std::size_t>()};
    xq::var x(golden::tensor(c.at("x")), true), w(golden::tensor(c.at("kernel")), true);
    const bool has_bias = c.contains("bias");
    xq::var b(has_bias ? golden::tensor(c.at("bias")) : xq::tensor(), has_bias);
    xq::tape t;
    const xq::var y = op == "conv2d" ? xq::ops::conv2d(x, w, has_bias ? &b : nullptr, g)
                                     : xq::ops::depthwise_conv2d(x, w, has_bias ? &b : nullptr, g);
    check_close(y.value(), golden::tensor(c.at("y")), name + ": y");
    ++checked;
    if (!c.contains("dy")) continue;  // TF has no CPU gradient for strides and dilation together
    t.backward(y, golden::tensor(c.at("dy")));
    check_close(x.grad(), golden::tensor(c.at("dx")), name + ": dx");
    check_close(w.grad(), golden::tensor(c.at("dkernel")), name + ": dkernel");
    if (has_bias) check_close(b.grad(), golden::tensor(c.at("dbias")), name + ": dbias");
  }
  CHECK(checked == 18);
}
