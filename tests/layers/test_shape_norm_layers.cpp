// zero_padding2d, cropping2d, upsampling2d (nearest, bilinear), gelu (both forms),
// layer_norm, broadcasting add/subtract/multiply, batched matmul, slice and split,
// conv2d_transpose and separable_conv2d:
// TensorFlow/Keras's outputs and gradients (golden vectors from
// tools/gen_golden_shape_norm_layers.py), numerical gradient checks, errors that name the
// layer, and quantized twins in a model that quantize_model and summarize walk.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <xquant/layers/broadcasting.hpp>
#include <xquant/layers/concatenate.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/conv2d_transpose.hpp>
#include <xquant/layers/cropping2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/gelu.hpp>
#include <xquant/layers/layer_norm.hpp>
#include <xquant/layers/matmul.hpp>
#include <xquant/layers/separable_conv2d.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/layers/slicing.hpp>
#include <xquant/layers/upsampling2d.hpp>
#include <xquant/layers/zero_padding2d.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../golden.hpp"
#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {

/// Within 2e-6 of the largest magnitude of `want` (at least 1): TF and xquant sum in
/// different orders, and TF's erf and tanh are Eigen's polynomials, not the C library's.
void check_close(const xq::tensor& got, const xq::tensor& want, const std::string& what) {
  golden::check_close_scaled(got, want, what, 2e-6f);
}

/// The message of the argument_error `f` throws ("no error" when it throws none).
template <class F>
std::string message(F&& f) {
  try {
    f();
  } catch (const xq::argument_error& e) {
    return e.what();
  }
  return "no error";
}

xq::image_margins margins(const golden::json& m) {
  return {{m[0][0].get<std::size_t>(), m[0][1].get<std::size_t>()},
          {m[1][0].get<std::size_t>(), m[1][1].get<std::size_t>()}};
}

/// The layer a golden case describes, called on x.
xq::var run_case(const golden::json& c, const xq::var& x) {
  const std::string op = c.at("op");
  if (op == "zero_padding2d") return xq::zero_padding2d(margins(c.at("padding")))(x);
  if (op == "cropping2d") return xq::cropping2d(margins(c.at("cropping")))(x);
  if (op == "upsampling2d")
    return xq::upsampling2d(c.at("size")[0], c.at("size")[1],
                            c.at("interpolation") == "bilinear" ? xq::interpolation::bilinear
                                                                : xq::interpolation::nearest)(x);
  if (op == "gelu") return xq::gelu(c.at("approximate").get<bool>())(x);
  FAIL("unknown op " << op);
  return {};
}

}  // namespace

TEST_CASE("padding, cropping, upsampling and gelu match TensorFlow (golden vectors)", "[layers][golden]") {
  const auto doc = golden::load("layers_shape_norm");
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string op = c.at("op");
    if (op != "zero_padding2d" && op != "cropping2d" && op != "upsampling2d" && op != "gelu") continue;
    const std::string name = std::string(c.at("op")) + " " + std::string(c.at("name"));
    xq::var x(golden::tensor(c.at("x")), true);
    xq::tape t;
    xq::var y = run_case(c, x);
    check_close(y.value(), golden::tensor(c.at("y")), name + ": y");
    t.backward(y, golden::tensor(c.at("dy")));
    check_close(x.grad(), golden::tensor(c.at("dx")), name + ": dx");
    ++checked;
  }
  CHECK(checked == 16);
}

TEST_CASE("layer_norm matches Keras LayerNormalization (golden vectors)", "[layers][layer_norm][golden]") {
  const auto doc = golden::load("layers_shape_norm");
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    if (c.at("op") != "layer_norm") continue;
    const std::string name = "layer_norm " + std::string(c.at("name"));
    INFO(name);
    xq::layer_norm norm(c.at("axis").get<std::vector<int>>(), c.at("center").get<bool>(), c.at("scale").get<bool>());
    norm.epsilon(c.at("epsilon").get<float>());
    xq::var x(golden::tensor(c.at("x")), true);
    norm.build(x.shape());
    if (norm.gamma()) norm.gamma()->value = golden::tensor(c.at("gamma"));
    if (norm.beta()) norm.beta()->value = golden::tensor(c.at("beta"));
    xq::tape t;
    xq::var y = norm(x);
    check_close(y.value(), golden::tensor(c.at("y")), name + ": y");
    t.backward(y, golden::tensor(c.at("dy")));
    check_close(x.grad(), golden::tensor(c.at("dx")), name + ": dx");
    if (norm.gamma()) check_close(norm.gamma()->grad, golden::tensor(c.at("dgamma")), name + ": dgamma");
    if (norm.beta()) check_close(norm.beta()->grad, golden::tensor(c.at("dbeta")), name + ": dbeta");
    CHECK(bool(norm.gamma()) == c.at("scale").get<bool>());
    CHECK(bool(norm.beta()) == c.at("center").get<bool>());
    ++checked;
  }
  CHECK(checked == 7);
}

TEST_CASE("padding, cropping and upsampling: gradients", "[layers][gradient]") {
  xq::var x(uniform({2, 5, 4, 3}, -1, 1, 3), true);
  check_gradients([&] { return xq::zero_padding2d({{1, 2}, {0, 3}})(x); }, {x.state()}, {}, "zero_padding2d");
  check_gradients([&] { return xq::cropping2d({{1, 2}, {0, 1}})(x); }, {x.state()}, {}, "cropping2d");
  check_gradients([&] { return xq::upsampling2d(2, 3)(x); }, {x.state()}, {}, "nearest");
  check_gradients([&] { return xq::upsampling2d(3, 2, xq::interpolation::bilinear)(x); }, {x.state()}, {},
                  "bilinear");
}

TEST_CASE("gelu: gradients of both forms, and its shape", "[layers][gelu][gradient]") {
  xq::var x(uniform({4, 9}, -4, 4, 5), true);
  check_gradients([&] { return xq::ops::gelu(x); }, {x.state()}, {}, "erf");
  check_gradients([&] { return xq::ops::gelu(x, true); }, {x.state()}, {}, "tanh");
  const xq::var probe(xq::tensor{{-1.0f, 0.0f, 1.0f, 3.0f}});
  const auto exact = xq::ops::gelu(probe).value(), approx = xq::ops::gelu(probe, true).value();
  CHECK(exact(0, 0) == Approx(-0.158655f).epsilon(1e-5));  // -Phi(-1)
  CHECK(exact(0, 1) == 0.0f);
  CHECK(exact(0, 2) == Approx(0.841345f).epsilon(1e-5));
  CHECK(approx(0, 3) == Approx(2.996363f).epsilon(1e-5));
}

TEST_CASE("layer_norm: gradients over several axis sets, with and without gamma and beta",
          "[layers][layer_norm][gradient]") {
  for (const auto& axes : {std::vector<int>{-1}, std::vector<int>{1, 2}, std::vector<int>{1}, std::vector<int>{0, 2}}) {
    for (bool affine : {true, false}) {
      INFO("axes " << axes.size() << " first " << axes[0] << " affine " << affine);
      xq::layer_norm norm(axes, affine, affine);
      xq::var x(uniform({3, 4, 5}, -2, 2, 9), true);
      norm.build(x.shape());
      std::vector<std::shared_ptr<xq::variable_state>> wrt{x.state()};
      if (affine) {
        norm.gamma()->value = uniform(norm.gamma()->value.shape(), 0.5f, 1.5f, 10);
        norm.beta()->value = uniform(norm.beta()->value.shape(), -0.5f, 0.5f, 11);
        wrt.push_back(norm.gamma());
        wrt.push_back(norm.beta());
      }
      check_gradients([&] { return norm(x); }, wrt, {}, "layer_norm");
    }
  }
}

TEST_CASE("layer_norm: every normalized slice has mean 0 and variance 1 before gamma and beta",
          "[layers][layer_norm]") {
  xq::layer_norm norm({0, 2}, false, false);
  norm.epsilon(0.0f);
  const xq::var y = norm(xq::var(uniform({3, 4, 5}, -3, 7, 2)));
  for (std::size_t j = 0; j < 4; ++j) {
    double sum = 0, squares = 0;
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t k = 0; k < 5; ++k) sum += y.value()(i, j, k);
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t k = 0; k < 5; ++k) squares += std::pow(y.value()(i, j, k) - sum / 15, 2);
    CHECK(std::fabs(sum / 15) < 1e-6);
    CHECK(squares / 15 == Approx(1.0).epsilon(1e-5));
  }
  CHECK_FALSE(norm.gamma());
  CHECK(norm.parameters().size() == 2);
}

TEST_CASE("shape layers and layer_norm: errors name the layer path, the expected and the given",
          "[layers][errors]") {
  const xq::var image(uniform({1, 4, 4, 2}));
  xq::cropping2d crop({{2, 2}, {0, 0}});
  crop.set_path("net/crop");
  const auto m = message([&] { crop(image); });
  CHECK_THAT(m, Catch::Contains("net/crop") && Catch::Contains("more than 4 rows") && Catch::Contains("(1, 4, 4, 2)"));
  CHECK_THAT(message([&] { xq::ops::upsampling2d(image, 0, 2); }), Catch::Contains("at least 1"));
  CHECK_THAT(message([&] { xq::zero_padding2d()(xq::var(uniform({4, 4}))); }), Catch::Contains("zero_padding2d"));
  xq::layer_norm norm({3});
  norm.set_path("block/norm");
  CHECK_THAT(message([&] { norm(xq::var(uniform({2, 3}))); }),
             Catch::Contains("block/norm") && Catch::Contains("axis 3") && Catch::Contains("rank 2"));
  CHECK_THAT(message([&] { xq::layer_norm({1, -1})(xq::var(uniform({2, 3}))); }), Catch::Contains("twice"));
  xq::layer_norm built;
  built(xq::var(uniform({2, 3})));
  CHECK_THAT(message([&] { built(xq::var(uniform({2, 5}))); }),
             Catch::Contains("gamma of shape (5,)") && Catch::Contains("(3,)"));
}

namespace {

using decoder = xq::sequential<xq::zero_padding2d, xq::conv2d, xq::layer_norm, xq::gelu, xq::upsampling2d,
                               xq::cropping2d, xq::flatten, xq::dense>;

decoder make_decoder() {
  return decoder(xq::zero_padding2d(), xq::conv2d(4, 3), xq::layer_norm(), xq::gelu(true),
                 xq::upsampling2d(2, 2, xq::interpolation::bilinear), xq::cropping2d({{1, 1}, {1, 1}}),
                 xq::flatten(), xq::dense(3));
}

}  // namespace

TEST_CASE("the new layers have quantized twins that quantize_model and summarize walk",
          "[layers][quantize][summary]") {
  static_assert(std::is_same_v<xq::quantize_t<xq::gelu>, xq::input_quantized<xq::gelu>>);
  static_assert(std::is_same_v<xq::quantize_t<xq::layer_norm>, xq::input_quantized<xq::layer_norm>>);
  static_assert(std::is_same_v<xq::quantize_t<xq::upsampling2d>, xq::input_quantized<xq::upsampling2d>>);
  auto model = make_decoder();
  xq::build(model, {1, 6, 6, 2});
  const xq::var x(uniform({2, 6, 6, 2}, -1, 1, 4));
  const xq::tensor want = model(x).value();

  // NVIDIA's default matrix quantizes the conv and the dense layer; the spec opts the
  // upsampling and the layer norm in by type, as NVIDIA's toolkit opts pooling layers in.
  xq::quantize_options o;
  o.spec.add_type("upsampling2d");
  o.spec.add_type("layer_norm");
  auto q = xq::quantize_model(model, o, {1, 6, 6, 2});
  CHECK(q.get<1>().input_quantizer().enabled());
  CHECK(q.get<2>().input_quantizer().enabled());
  CHECK(q.get<4>().input_quantizer().enabled());
  CHECK_FALSE(q.get<3>().input_quantizer().enabled());  // gelu: not asked for
  CHECK(q.get<2>().float_layer().gamma() == model.get<2>().gamma());  // one parameter, shared
  const xq::tensor got = q(x).value();
  REQUIRE(got.shape() == want.shape());
  double diff = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    REQUIRE(std::isfinite(got.data()[i]));
    diff = std::max(diff, double(std::fabs(got.data()[i] - want.data()[i])));
  }
  CHECK(diff > 0.0);  // fake quantization changed something

  const auto s = xq::summarize(model, {1, 6, 6, 2});
  REQUIRE(s.layers.size() == 8);
  CHECK(s.layers[0].name == "zero_padding2d");
  CHECK(s.layers[2].name == "layer_normalization");
  CHECK(s.layers[2].weight_count() == 8);  // gamma and beta of 4 channels
  CHECK(s.layers[4].name == "up_sampling2d");
  REQUIRE(s.layers[4].output_shape);
  CHECK(*s.layers[4].output_shape == std::vector<std::ptrdiff_t>{-1, 12, 12, 4});
  CHECK(s.layers[1].mac_count() == 6u * 6u * 3u * 3u * 2u * 4u);
}

TEST_CASE("broadcasting arithmetic and batched matmul match TensorFlow (golden vectors)",
          "[layers][broadcasting][matmul][golden]") {
  const auto doc = golden::load("layers_shape_norm");
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string op = c.at("op");
    if (op != "broadcast_add" && op != "subtract" && op != "broadcast_multiply" && op != "matmul") continue;
    const std::string name = op + " " + std::string(c.at("name"));
    xq::var a(golden::tensor(c.at("a")), true), b(golden::tensor(c.at("b")), true);
    xq::tape t;
    xq::var y = op == "broadcast_add"        ? a + b
                : op == "subtract"           ? a - b
                : op == "broadcast_multiply" ? a * b
                                             : xq::ops::matmul(a, b, c.at("transpose_a"), c.at("transpose_b"));
    check_close(y.value(), golden::tensor(c.at("y")), name + ": y");
    t.backward(y, golden::tensor(c.at("dy")));
    check_close(a.grad(), golden::tensor(c.at("da")), name + ": da");
    check_close(b.grad(), golden::tensor(c.at("db")), name + ": db");
    ++checked;
  }
  CHECK(checked == 18);
}

TEST_CASE("slice and split match TensorFlow (golden vectors)", "[layers][slicing][golden]") {
  const auto doc = golden::load("layers_shape_norm");
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string op = c.at("op");
    if (op != "slice" && op != "split") continue;
    const std::string name = op + " " + std::string(c.at("name"));
    xq::var x(golden::tensor(c.at("x")), true);
    xq::tape t;
    if (op == "slice") {
      xq::var y = xq::slice(c.at("axis"), c.at("begin"), c.at("end"))(x);
      check_close(y.value(), golden::tensor(c.at("y")), name + ": y");
      t.backward(y, golden::tensor(c.at("dy")));
    } else {
      const auto parts = c.at("parts").get<std::vector<std::size_t>>();
      auto ys = parts.size() == 1 ? xq::ops::split(x, c.at("axis"), parts[0]) : xq::ops::split(x, c.at("axis"), parts);
      REQUIRE(ys.size() == c.at("ys").size());
      xq::var loss;  // sum of part * dy_part, so that one backward reaches every part
      for (std::size_t i = 0; i < ys.size(); ++i) {
        check_close(ys[i].value(), golden::tensor(c.at("ys")[i]), name + ": part");
        const xq::var term = ys[i] * xq::var(golden::tensor(c.at("dys")[i]));
        loss = i == 0 ? term : xq::ops::concatenate({xq::ops::flatten(loss), xq::ops::flatten(term)}, 1);
      }
      t.backward(loss, xq::tensor(xt::ones<float>(loss.shape())));
    }
    check_close(x.grad(), golden::tensor(c.at("dx")), name + ": dx");
    ++checked;
  }
  CHECK(checked == 5);
}

TEST_CASE("broadcasting, matmul and slicing: gradients, and errors that name the path",
          "[layers][broadcasting][matmul][slicing][gradient]") {
  xq::var a(uniform({2, 1, 4}, -1, 1, 21), true), b(uniform({3, 1}, -1, 1, 22), true);
  check_gradients([&] { return a * b - a + b; }, {a.state(), b.state()}, {}, "broadcast");
  xq::var q(uniform({2, 3, 5, 4}, -1, 1, 23), true), k(uniform({3, 6, 4}, -1, 1, 24), true);
  check_gradients([&] { return xq::ops::matmul(q, k, false, true); }, {q.state(), k.state()}, {}, "matmul");
  xq::var s(uniform({2, 5, 3}, -1, 1, 25), true);
  check_gradients([&] { return xq::ops::split(s, 1, std::vector<std::size_t>{1, 4})[1] * xq::ops::slice(s, 1, 0, 4); },
                  {s.state()}, {}, "slice and split");

  const xq::var tail = xq::slice(1, 2)(s);  // to the end of axis 1
  CHECK(tail.shape() == xq::tensor::shape_type{2, 3, 3});
  CHECK(tail.value()(1, 0, 2) == s.value()(1, 2, 2));
  const bool whole = xq::slice()(s).value() == s.value();  // the default: all of the last axis
  CHECK(whole);

  CHECK_THAT(message([&] { xq::ops::broadcast_add(xq::var(uniform({2, 3})), xq::var(uniform({4})), "head/add"); }),
             Catch::Contains("head/add") && Catch::Contains("(2, 3)") && Catch::Contains("(4,)"));
  CHECK_THAT(message([&] { xq::ops::matmul(xq::var(uniform({2, 3})), xq::var(uniform({4, 5})), false, false, "attn"); }),
             Catch::Contains("attn") && Catch::Contains("3 columns") && Catch::Contains("4 rows"));
  CHECK_THAT(message([&] { xq::ops::slice(xq::var(uniform({2, 3})), 1, 2, 5, "cut"); }),
             Catch::Contains("cut") && Catch::Contains("[2, 5)") && Catch::Contains("length 3"));
  CHECK_THAT(message([&] { xq::ops::split(xq::var(uniform({2, 7})), -1, 3, "qkv"); }),
             Catch::Contains("qkv") && Catch::Contains("3 equal parts"));
  CHECK_THAT(message([&] { xq::subtract()({xq::var(uniform({2})), xq::var(uniform({2})), xq::var(uniform({2}))}); }),
             Catch::Contains("exactly two inputs"));
}

TEST_CASE("conv2d_transpose matches Keras Conv2DTranspose (golden vectors)", "[layers][conv2d_transpose][golden]") {
  const auto doc = golden::load("layers_shape_norm");
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    if (c.at("op") != "conv2d_transpose") continue;
    const std::string name = "conv2d_transpose " + std::string(c.at("name"));
    const bool has_bias = c.contains("bias");
    xq::conv2d_transpose layer(c.at("filters"), {c.at("kernel_size")[0], c.at("kernel_size")[1]});
    layer.strides({c.at("strides")[0], c.at("strides")[1]})
        .padding(c.at("padding") == "same" ? xq::padding::same : xq::padding::valid)
        .use_bias(has_bias);
    xq::var x(golden::tensor(c.at("x")), true);
    layer.ensure_built(x);
    layer.kernel()->value = golden::tensor(c.at("kernel"));
    if (has_bias) layer.bias()->value = golden::tensor(c.at("bias"));
    xq::tape t;
    xq::var y = layer(x);
    check_close(y.value(), golden::tensor(c.at("y")), name + ": y");
    t.backward(y, golden::tensor(c.at("dy")));
    check_close(x.grad(), golden::tensor(c.at("dx")), name + ": dx");
    check_close(layer.kernel()->grad, golden::tensor(c.at("dkernel")), name + ": dkernel");
    if (has_bias) check_close(layer.bias()->grad, golden::tensor(c.at("dbias")), name + ": dbias");
    ++checked;
  }
  CHECK(checked == 7);
}

TEST_CASE("conv2d_transpose: gradients (dilation too), the adjoint of conv2d, errors, twin and MACs",
          "[layers][conv2d_transpose][gradient]") {
  for (const auto& [stride, dil, pad] : {std::tuple{2, 1, xq::padding::same}, std::tuple{3, 1, xq::padding::valid},
                                         std::tuple{1, 2, xq::padding::same}}) {
    INFO("stride " << stride << " dilation " << dil);
    xq::conv2d_transpose layer(3, {3, 2});
    layer.strides(std::size_t(stride)).dilation(std::size_t(dil)).padding(pad);
    xq::var x(uniform({2, 3, 4, 2}, -1, 1, 31), true);
    layer.ensure_built(x);
    check_gradients([&] { return layer(x); }, {x.state(), layer.kernel(), layer.bias()}, {}, "conv2d_transpose");
  }
  // <conv(u), v> == <u, conv_transpose(v)> with the same kernel: it is the adjoint.
  const xq::var k(uniform({3, 3, 4, 2}, -1, 1, 32));  // conv: 4 -> 2 channels; transpose: 2 -> 4
  const xq::var u(uniform({1, 8, 8, 4}, -1, 1, 33)), v(uniform({1, 4, 4, 2}, -1, 1, 34));
  xq::conv2d_geometry geo;
  geo.strides = {2, 2};
  geo.padding = xq::padding::same;
  const auto cu = xq::ops::conv2d(u, k, nullptr, geo), tv = xq::ops::conv2d_transpose(v, k, nullptr, geo);
  REQUIRE(tv.shape() == u.shape());
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < cu.size(); ++i) lhs += double(cu.value().data()[i]) * v.value().data()[i];
  for (std::size_t i = 0; i < tv.size(); ++i) rhs += double(tv.value().data()[i]) * u.value().data()[i];
  CHECK(lhs == Approx(rhs).epsilon(1e-5));

  xq::conv2d_transpose bad(2, 3);
  bad.strides(2).dilation(2);
  bad.set_path("decoder/up");
  CHECK_THAT(message([&] { bad(xq::var(uniform({1, 3, 3, 2}))); }),
             Catch::Contains("decoder/up") && Catch::Contains("strides of 1 when the dilation"));

  using up_net = xq::sequential<xq::conv2d_transpose, xq::flatten, xq::dense>;
  up_net net(xq::conv2d_transpose(4, 3), xq::flatten(), xq::dense(2));
  net.get<0>().strides(2).padding(xq::padding::same);
  xq::build(net, {1, 3, 3, 2});
  const auto s = xq::summarize(net, {1, 3, 3, 2});
  CHECK(s.layers[0].mac_count() == 3u * 3u * 4u * 2u * 3u * 3u);  // kernel x input pixels
  CHECK(*s.layers[0].output_shape == std::vector<std::ptrdiff_t>{-1, 6, 6, 4});
  xq::quantize_options o;
  o.spec.add_type("conv2d_transpose");
  auto q = xq::quantize_model(net, o, {1, 3, 3, 2});
  CHECK(q.get<0>().input_quantizer().enabled());
  CHECK(q.get<0>().weight_quantizer().enabled());
  const xq::var x(uniform({2, 3, 3, 2}, -1, 1, 35));
  CHECK(q(x).shape() == net(x).shape());
}

TEST_CASE("separable_conv2d matches Keras SeparableConv2D (golden vectors)", "[layers][separable_conv2d][golden]") {
  const auto doc = golden::load("layers_shape_norm");
  int checked = 0;
  for (const auto& c : doc.at("cases")) {
    if (c.at("op") != "separable_conv2d") continue;
    const std::string name = "separable_conv2d " + std::string(c.at("name"));
    const bool has_bias = c.contains("bias");
    auto layer = xq::separable_conv2d(c.at("filters"), {c.at("kernel_size")[0], c.at("kernel_size")[1]},
                                      c.at("depth_multiplier"));
    layer.strides({c.at("strides")[0], c.at("strides")[1]})
        .dilation({c.at("dilation")[0], c.at("dilation")[1]})
        .padding(c.at("padding") == "same" ? xq::padding::same : xq::padding::valid)
        .use_bias(has_bias);
    xq::var x(golden::tensor(c.at("x")), true);
    layer.depthwise.ensure_built(x);
    layer.pointwise.build(layer.depthwise.kernel()->value.size() / (layer.depthwise.kernel_size()[0] *
                                                                     layer.depthwise.kernel_size()[1]));
    layer.depthwise.kernel()->value = golden::tensor(c.at("depthwise_kernel"));
    layer.pointwise.kernel()->value = golden::tensor(c.at("pointwise_kernel"));
    if (has_bias) layer.pointwise.bias()->value = golden::tensor(c.at("bias"));
    xq::tape t;
    xq::var y = layer(x);
    check_close(y.value(), golden::tensor(c.at("y")), name + ": y");
    t.backward(y, golden::tensor(c.at("dy")));
    check_close(x.grad(), golden::tensor(c.at("dx")), name + ": dx");
    check_close(layer.depthwise.kernel()->grad, golden::tensor(c.at("ddepthwise_kernel")), name + ": ddepthwise");
    check_close(layer.pointwise.kernel()->grad, golden::tensor(c.at("dpointwise_kernel")), name + ": dpointwise");
    if (has_bias) check_close(layer.pointwise.bias()->grad, golden::tensor(c.at("dbias")), name + ": dbias");
    ++checked;
  }
  CHECK(checked == 5);
}

TEST_CASE("separable_conv2d: gradients, Keras's weight shapes, summary MACs, twin, errors",
          "[layers][separable_conv2d][gradient]") {
  auto layer = xq::separable_conv2d(3, 3, 2);
  layer.strides(2).padding(xq::padding::same);
  xq::var x(uniform({2, 5, 4, 2}, -1, 1, 41), true);
  (void)layer(x);
  CHECK(layer.depthwise.kernel()->value.shape() == xq::tensor::shape_type{3, 3, 2, 2});  // (KH, KW, C, M)
  CHECK(layer.pointwise.kernel()->value.shape() == xq::tensor::shape_type{1, 1, 4, 3});  // (1, 1, C*M, F)
  CHECK(layer.depthwise.bias() == nullptr);                                               // the bias is pointwise's
  check_gradients([&] { return layer(x); },
                  {x.state(), layer.depthwise.kernel(), layer.pointwise.kernel(), layer.pointwise.bias()}, {},
                  "separable_conv2d");

  using net_t = xq::sequential<xq::separable_conv2d<>, xq::flatten, xq::dense>;
  net_t net(xq::separable_conv2d(4, 3), xq::flatten(), xq::dense(2));
  net.get<0>().padding(xq::padding::same);
  xq::build(net, {1, 5, 5, 3});
  const auto s = xq::summarize(net, {1, 5, 5, 3});
  // depthwise 3*3*3 taps per pixel + pointwise 3*4 per pixel, 25 pixels.
  CHECK(s.layers[0].mac_count() == (3u * 3u * 3u + 3u * 4u) * 25u);
  CHECK(*s.layers[0].output_shape == std::vector<std::ptrdiff_t>{-1, 5, 5, 4});
  // The twin is the two convolutions' twins: NVIDIA's scheme quantizes the input and
  // the kernel of each.
  auto q = xq::quantize_model(net, xq::quantize_options{}, {1, 5, 5, 3});
  CHECK(q.get<0>().depthwise.input_quantizer().enabled());
  CHECK(q.get<0>().depthwise.weight_quantizer().enabled());
  CHECK(q.get<0>().pointwise.input_quantizer().enabled());
  CHECK(q.get<0>().pointwise.weight_quantizer().enabled());
  const xq::var probe(uniform({2, 5, 5, 3}, -1, 1, 42));
  CHECK(q(probe).shape() == net(probe).shape());

  // A call on other channels than the built ones names the depthwise child's path.
  auto wrong = xq::separable_conv2d(2, 3);
  wrong.depthwise.set_path("encoder/sep/depthwise");
  (void)wrong(xq::var(uniform({1, 4, 4, 2})));
  std::string msg = "no error";
  try {
    (void)wrong(xq::var(uniform({1, 4, 4, 3})));
  } catch (const std::exception& e) {
    msg = e.what();
  }
  CHECK_THAT(msg, Catch::Contains("encoder/sep/depthwise") && Catch::Contains("given (1, 4, 4, 3)"));
}
