// Larq's quant layers: QuantDense, QuantConv2D, QuantDepthwiseConv2D and
// QuantSeparableConv2D against Larq itself (outputs and gradients bit for bit:
// +-1 operands make every sum exact), the latent kernel's clipped STE gradient, the
// weight_clip constraint after optimizer steps, paths and parameter lists, the
// metrics_scope rule, clones, checkpoints and quantize_model on mixed models.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/model.hpp>
#include <xquant/io/checkpoint.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/pad2d.hpp>
#include <xquant/wrappers/quant_conv2d.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xquant/wrappers/quant_depthwise_conv2d.hpp>
#include <xquant/wrappers/quant_separable_conv2d.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/layers/weight_clip.hpp>
#include <xquant/transform/quantize_model.hpp>
#include <xquant/quantizers/lsq_quantizer.hpp>
#include <xquant/quantizers/no_quantizer.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/sgd.hpp>
#include <xquant/numerics/larq_math.hpp>

#include "../golden.hpp"
#include "../gradient_check.hpp"

using xq::testing::uniform;

namespace {

using shape_t = xq::tensor::shape_type;

xq::tensor make(const shape_t& shape, std::vector<float> values) {
  xq::tensor t = xt::empty<float>(shape);
  REQUIRE(values.size() == t.size());
  std::copy(values.begin(), values.end(), t.begin());
  return t;
}

template <class A, class B>
bool same_bits(const A& a, const B& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A binary quantizer with a parameter of its own (a learned scale, XNOR-Net style):
// what a quantizer with state looks like to paths, parameter lists, clones and
// checkpoints. y = scale * sign(x); dy/dx = scale * clipped STE; dy/dscale = sign(x).
class scaled_sign : public xq::quantizer_layer<scaled_sign> {
 public:
  scaled_sign() : quantizer_layer<scaled_sign>("scaled_sign"), scale_(xq::make_parameter("scale", xt::ones<float>({1}))) {
    name_parameters();
  }
  int precision() const noexcept { return 1; }
  std::vector<xq::parameter_ptr> parameters() const { return {scale_}; }
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(scale_);
  }
  const xq::parameter_ptr& scale() const noexcept { return scale_; }

  xq::var quantize(const xq::var& x) {
    const xq::var s(scale_);
    const float k = s.value().data()[0];
    xq::tensor y = xq::larq::map(x.value(), [k](float v) { return k * xq::larq::sign(v); });
    return emit_with(x, std::move(y), xq::needs_grad(x, s), [x, s, k](const xq::tensor& dy) {
      xq::tensor ds = xt::zeros<float>({1});
      for (std::size_t i = 0; i < dy.size(); ++i) ds.data()[0] += dy.data()[i] * xq::larq::sign(x.value().data()[i]);
      xq::add_grad(s, std::move(ds));
      xq::tensor scaled = dy * k;
      return xq::larq::clipped_gradient(x.value(), scaled, 1.0f);
    });
  }

 private:
  xq::parameter_ptr scale_;
};

// A plain callable in a quantizer slot: no precision, no path (Larq: a function).
struct halve {
  xq::var operator()(const xq::var& x) const { return xq::var(x.value() * 0.5f); }
};

xq::padding padding_of(const golden::json& s) {
  return s.at("padding").get<std::string>() == "same" ? xq::padding::same : xq::padding::valid;
}
xq::size2 pair_of(const golden::json& s, const char* key) {
  const auto v = s.at(key).get<std::vector<std::size_t>>();
  return {v.at(0), v.at(1)};
}

// Runs `layer` on the case's x with its weights and dy; compares y, dx and the
// gradients of `params` (Keras's weight order) with Larq's, bit for bit.
template <class Layer>
void check_case(Layer& layer, const golden::json& c, const std::vector<xq::parameter_ptr*>& slots) {
  const xq::tensor x = golden::tensor(c.at("x"));
  xq::build(layer, x.shape());
  std::vector<xq::parameter_ptr> params;
  for (auto* slot : slots)
    if (*slot) params.push_back(*slot);
  const auto& weights = c.at("weights");
  REQUIRE(params.size() == weights.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const xq::tensor w = golden::tensor(weights[i]);
    REQUIRE(params[i]->value.shape() == w.shape());  // Keras's layouts are ours
    params[i]->value = w;
    params[i]->zero_grad();
  }
  xq::var xv(x, true);
  xq::var y;
  {
    xq::tape t;
    y = layer(xv);
    t.backward(y, golden::tensor(c.at("dy")));
  }
  CHECK(golden::bit_difference(y.value(), golden::tensor(c.at("y"))) == "");
  CHECK(golden::bit_difference(xv.grad(), golden::tensor(c.at("dx"))) == "");
  const auto& dweights = c.at("dweights");
  REQUIRE(dweights.size() == params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    INFO(params[i]->name());
    REQUIRE(params[i]->has_grad());
    CHECK(golden::bit_difference(params[i]->grad, golden::tensor(dweights[i])) == "");
  }
}

}  // namespace

TEST_CASE("quant layers match Larq bit for bit with ste_sign quantizers", "[quant_layers][golden]") {
  const golden::json doc = golden::load("larq_layers");
  std::set<std::string> ops;
  for (const auto& c : doc.at("cases")) {
    const std::string op = c.at("op"), name = c.at("name");
    const auto& s = c.at("settings");
    ops.insert(op);
    INFO(op << ": " << name);
    if (op == "quant_dense") {
      auto l = xq::quant_dense(s.at("units").get<std::size_t>(), xq::ste_sign(), xq::ste_sign())
                   .use_bias(s.at("use_bias").get<bool>());
      xq::build(l, golden::tensor(c.at("x")).shape());
      xq::parameter_ptr kernel = l.kernel(), bias = l.bias();
      check_case(l, c, {&kernel, &bias});
    } else if (op == "quant_conv2d") {
      auto l = xq::quant_conv2d(s.at("filters").get<std::size_t>(), pair_of(s, "kernel_size"), xq::ste_sign(),
                                xq::ste_sign())
                   .strides(pair_of(s, "strides"))
                   .padding(padding_of(s))
                   .pad_values(s.at("pad_values").get<float>())
                   .dilation(pair_of(s, "dilation"))
                   .use_bias(s.at("use_bias").get<bool>());
      xq::build(l, golden::tensor(c.at("x")).shape());
      xq::parameter_ptr kernel = l.kernel(), bias = l.bias();
      check_case(l, c, {&kernel, &bias});
    } else if (op == "quant_depthwise_conv2d") {
      auto l = xq::quant_depthwise_conv2d(pair_of(s, "kernel_size"), xq::ste_sign(), xq::ste_sign())
                   .depth_multiplier(s.at("depth_multiplier").get<std::size_t>())
                   .strides(pair_of(s, "strides"))
                   .padding(padding_of(s))
                   .pad_values(s.at("pad_values").get<float>())
                   .dilation(pair_of(s, "dilation"))
                   .use_bias(s.at("use_bias").get<bool>());
      xq::build(l, golden::tensor(c.at("x")).shape());
      xq::parameter_ptr kernel = l.depthwise_kernel(), bias = l.bias();
      check_case(l, c, {&kernel, &bias});
    } else if (op == "quant_separable_conv2d") {
      auto l = xq::quant_separable_conv2d(s.at("filters").get<std::size_t>(), pair_of(s, "kernel_size"),
                                          xq::ste_sign(), xq::ste_sign(), xq::ste_sign())
                   .depth_multiplier(s.at("depth_multiplier").get<std::size_t>())
                   .strides(pair_of(s, "strides"))
                   .padding(padding_of(s))
                   .pad_values(s.at("pad_values").get<float>())
                   .dilation(pair_of(s, "dilation"))
                   .use_bias(s.at("use_bias").get<bool>());
      xq::build(l, golden::tensor(c.at("x")).shape());
      xq::parameter_ptr depthwise = l.depthwise_kernel(), pointwise = l.pointwise_kernel(), bias = l.bias();
      check_case(l, c, {&depthwise, &pointwise, &bias});
    } else {
      FAIL("unknown op " << op);
    }
  }
  CHECK(ops.size() == 4);
}

TEST_CASE("pad_values pads the quantized input with the constant", "[quant_layers]") {
  // All-negative input binarizes to -1; a 3x3 all-ones kernel then sums 9 values per
  // output: the corner sees 4 inputs (-4) and 5 padding values.
  auto make = [](float pad) {
    auto l = xq::quant_conv2d(1, 3, xq::ste_sign(), xq::ste_sign()).padding(xq::padding::same).pad_values(pad).use_bias(false);
    xq::build(l, {1, 4, 4, 1});
    l.kernel()->value.fill(0.5f);
    return l;
  };
  xq::tensor negative = xt::empty<float>({1, 4, 4, 1});
  negative.fill(-0.5f);
  const xq::var x(negative);
  auto one = make(1.0f), zero = make(0.0f), minus_zero = make(-0.0f);
  const xq::tensor y1 = one(x).value(), y0 = zero(x).value(), ym = minus_zero(x).value();
  CHECK(y1(0, 0, 0, 0) == 1.0f);   // -4 + 5
  CHECK(y1(0, 1, 1, 0) == -9.0f);  // interior: no padding
  CHECK(y1(0, 0, 1, 0) == -3.0f);  // edge: -6 + 3
  CHECK(y0(0, 0, 0, 0) == -4.0f);
  CHECK(same_bits(ym, y0));  // -0.0 is Larq's native zero padding
  // valid padding ignores pad_values
  auto valid = xq::quant_conv2d(1, 3, xq::ste_sign(), xq::ste_sign()).pad_values(1.0f);
  xq::build(valid, {1, 4, 4, 1});
  CHECK(valid(x).shape() == shape_t{1, 2, 2, 1});
}

TEST_CASE("a conv's padding value as a term on the zero-padded conv equals padding the input", "[quant_layers]") {
  // quant_conv2d adds the padding value's term to its same-padded convolution
  // (wrappers/padding_value_term.hpp); the reference pads the input with the value and runs
  // a valid convolution, as Larq does. Float inputs: equal within rounding; binary ones
  // (ste_sign on both): bit for bit.
  struct geometry_case {
    const char* name;
    shape_t x;
    std::size_t kh, kw, sh, sw, dh, dw, filters;
  };
  const std::vector<geometry_case> cases = {
      {"3x3", {2, 6, 7, 3}, 3, 3, 1, 1, 1, 1, 4},
      {"3x3 stride 2, even input", {2, 8, 8, 2}, 3, 3, 2, 2, 1, 1, 3},
      {"3x3 stride 2, odd input", {1, 7, 9, 2}, 3, 3, 2, 2, 1, 1, 3},
      {"5x5 dilation 2", {1, 9, 10, 2}, 5, 5, 1, 1, 2, 2, 2},
      {"2x3 strides (2, 1)", {2, 5, 6, 3}, 2, 3, 2, 1, 1, 1, 5},
      {"window larger than the input", {1, 2, 3, 2}, 5, 5, 1, 1, 1, 1, 2},
  };
  auto run = [](auto layer, const shape_t& x_shape, float pad, bool reference, unsigned seed, bool bias = true) {
    layer.padding(xq::padding::same).pad_values(pad).use_bias(bias);
    xq::build(layer, x_shape);
    layer.kernel()->value = uniform(layer.kernel()->value.shape(), -1.0f, 1.0f, seed);
    if (bias) layer.bias()->value = uniform(layer.bias()->value.shape(), -1.0f, 1.0f, seed + 1);
    xq::var x(uniform(x_shape, -1.0f, 1.0f, seed + 2), true);
    xq::tape t;
    xq::var y;
    if (reference) {
      // Larq's way, written out: the quantized input padded with the value, a valid conv.
      const xq::var q = layer.input_quantizer(x);
      const xq::var k = layer.kernel_quantizer(xq::var(layer.kernel()));
      const auto ks = layer.kernel_size();
      const xq::window2d w = xq::resolve_window("ref", q.shape(), ks[0], ks[1], layer.geometry());
      const std::size_t bottom = (w.out_h - 1) * w.stride_h + (ks[0] - 1) * w.dilation_h + 1 - w.in_h - w.pad_top;
      const std::size_t right = (w.out_w - 1) * w.stride_w + (ks[1] - 1) * w.dilation_w + 1 - w.in_w - w.pad_left;
      const xq::var padded = xq::ops::pad2d(q, w.pad_top, bottom, w.pad_left, right, pad);
      xq::conv2d_geometry valid = layer.geometry();
      valid.padding = xq::padding::valid;
      const xq::var b = bias ? xq::var(layer.bias()) : xq::var();
      y = xq::ops::conv2d(padded, k, bias ? &b : nullptr, valid, "ref");
    } else {
      y = layer(x);
    }
    t.backward(y, uniform(y.shape(), -1.0f, 1.0f, seed + 3));
    return std::vector<xq::tensor>{y.value(), x.grad(), layer.kernel()->grad,
                                   bias ? layer.bias()->grad : xq::tensor(xt::zeros<float>({1}))};
  };
  unsigned seed = 900;
  for (const auto& c : cases)
    for (const float pad : {1.0f, -0.5f}) {
      INFO(c.name << ", pad " << pad);
      seed += 10;
      auto float_layer = [&] {
        return xq::quant_conv2d(c.filters, {c.kh, c.kw}, xq::no_quantizer(), xq::no_quantizer())
            .strides({c.sh, c.sw})
            .dilation({c.dh, c.dw});
      };
      const auto got = run(float_layer(), c.x, pad, false, seed), want = run(float_layer(), c.x, pad, true, seed);
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("y, dx, dkernel, dbias: " << i);
        REQUIRE(got[i].shape() == want[i].shape());
        CHECK(xt::allclose(got[i], want[i], 1e-5, 1e-5));
      }
      auto binary_layer = [&] {
        return xq::quant_conv2d(c.filters, {c.kh, c.kw}, xq::ste_sign(), xq::ste_sign())
            .strides({c.sh, c.sw})
            .dilation({c.dh, c.dw});
      };
      const auto bgot = run(binary_layer(), c.x, pad, false, seed), bwant = run(binary_layer(), c.x, pad, true, seed);
      for (std::size_t i = 0; i < bgot.size(); ++i) CHECK(xt::allclose(bgot[i], bwant[i], 1e-5, 1e-5));
      // Without a bias the binary output is a sum of +-1 products and +-pad terms: exact.
      if (pad == 1.0f) {
        const auto exact = run(binary_layer(), c.x, pad, false, seed, false);
        const auto larq = run(binary_layer(), c.x, pad, true, seed, false);
        CHECK(golden::bit_difference(exact[0], larq[0]) == "");
      }
    }
}

TEST_CASE("the latent kernel gets the clipped STE gradient", "[quant_layers]") {
  auto l = xq::quant_dense(2, xq::no_quantizer{}, xq::ste_sign());
  xq::build(l, {1, 3});
  l.kernel()->value = xq::tensor{{0.5f, -1.5f}, {1.0f, -1.0f}, {2.0f, 0.0f}};
  l.bias()->value = xq::tensor{0.25f, 0.0f};
  const xq::var x(xq::tensor{{1.0f, 2.0f, -3.0f}});
  xq::var y;
  {
    xq::tape t;
    y = l(x);
    t.backward(y, xq::tensor{{1.0f, 1.0f}});
  }
  // Forward with the binarized kernel {{1, -1}, {1, -1}, {1, 1}} (sign(0) = +1).
  CHECK(y.value()(0, 0) == 1.0f + 2.0f - 3.0f + 0.25f);
  CHECK(y.value()(0, 1) == -1.0f - 2.0f - 3.0f);
  // dW = x^T dy, zero where |w| > 1 (inclusive bound: |w| = 1 passes).
  const xq::tensor want{{1.0f, 0.0f}, {2.0f, 2.0f}, {0.0f, -3.0f}};
  CHECK(same_bits(l.kernel()->grad, want));
  CHECK(same_bits(l.bias()->grad, xq::tensor{1.0f, 1.0f}));

  // Without a kernel quantizer it is the float layer: no mask, the latent kernel used.
  auto plain = xq::quant_dense(2);
  xq::build(plain, {1, 3});
  plain.kernel()->value = l.kernel()->value;
  {
    xq::tape t;
    t.backward(plain(x), xq::tensor{{1.0f, 1.0f}});
  }
  CHECK(same_bits(plain.kernel()->grad, xq::tensor{{1.0f, 1.0f}, {2.0f, 2.0f}, {-3.0f, -3.0f}}));
}

TEST_CASE("the input quantizer's STE masks the input gradient", "[quant_layers]") {
  auto l = xq::quant_conv2d(2, 1, xq::ste_sign(), xq::no_quantizer{}).use_bias(false);
  xq::build(l, {1, 1, 3, 1});
  l.kernel()->value = make({1, 1, 1, 2}, {1.0f, 2.0f});
  xq::var x(make({1, 1, 3, 1}, {0.5f, -1.0f, 1.25f}), true);
  {
    xq::tape t;
    t.backward(l(x), xt::ones<float>({1, 1, 3, 2}));
  }
  CHECK(same_bits(x.grad(), make({1, 1, 3, 1}, {3.0f, 3.0f, 0.0f})));
}

TEST_CASE("weight_clip clips like tf.clip_by_value", "[quant_layers][constraint]") {
  xq::tensor w{-3.0f, -1.0f, -0.5f, 0.0f, 0.75f, 1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN()};
  xq::weight_clip(1.0f)(w);
  const xq::tensor want{-1.0f, -1.0f, -0.5f, 0.0f, 0.75f, 1.0f, 1.0f};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(w(i) == want(i));
  CHECK(std::isnan(w(7)));
  xq::tensor v{-3.0f, 0.25f, 3.0f};
  xq::weight_clip(0.5f)(v);
  CHECK(same_bits(v, xq::tensor{-0.5f, 0.25f, 0.5f}));
  CHECK(xq::weight_clip().clip_value() == 1.0f);
  CHECK_THROWS_AS(xq::weight_clip(-1.0f), xq::argument_error);
  // On a parameter directly.
  auto p = xq::make_parameter("w", xq::tensor{5.0f, -5.0f});
  p->set_constraint(xq::weight_clip(2.0f));
  p->apply_constraint();
  CHECK(same_bits(p->value, xq::tensor{2.0f, -2.0f}));
}

namespace {

// A quant dense whose latent kernel sits at +-0.9 and gets a large gradient of the sign
// that pushes it past the clip; the bias (unconstrained) moves freely.
template <class Optimizer, class Options>
void check_clip_after_step(Options options) {
  auto l = xq::quant_dense(2, xq::ste_sign(), xq::ste_sign()).kernel_constraint(xq::weight_clip(1.0f));
  xq::build(l, {1, 2});
  l.kernel()->value = xq::tensor{{0.9f, -0.9f}, {0.2f, -0.95f}};
  Optimizer opt(xq::trainable_parameters(l), options);
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    xq::tape t;
    const xq::var y = l(xq::var(xq::tensor{{1.0f, 1.0f}}));
    t.backward(y, xq::tensor{{-50.0f, 50.0f}});  // w -= lr * g: the first column grows, the second shrinks
    opt.step();
    for (float w : l.kernel()->value) CHECK(std::fabs(w) <= 1.0f);
  }
  CHECK(l.kernel()->value(0, 0) == 1.0f);
  CHECK(l.kernel()->value(0, 1) == -1.0f);
  CHECK(l.kernel()->value(1, 1) == -1.0f);
  CHECK(std::fabs(l.bias()->value(0)) > 1.0f);  // no bias constraint: not clipped
}

}  // namespace

TEST_CASE("weight_clip is applied after sgd, adam and adamw steps", "[quant_layers][constraint]") {
  SECTION("sgd") { check_clip_after_step<xq::sgd>(xq::sgd_options{0.1f}); }
  SECTION("sgd with momentum") { check_clip_after_step<xq::sgd>(xq::sgd_options{0.1f, 0.9}); }
  SECTION("adam") {
    xq::adam_options o;
    o.learning_rate = 0.5f;
    check_clip_after_step<xq::adam>(o);
  }
  SECTION("adamw") {
    xq::adamw_options o;
    o.learning_rate = 0.5f;
    check_clip_after_step<xq::adamw>(o);
  }
}

TEST_CASE("a constraint set after build reaches the parameter, one set before waits for it",
          "[quant_layers][constraint]") {
  auto before = xq::quant_conv2d(2, 3, xq::ste_sign(), xq::ste_sign()).kernel_constraint(xq::weight_clip(0.5f));
  CHECK_FALSE(before.kernel());
  xq::build(before, {1, 5, 5, 1});
  REQUIRE(before.kernel()->constraint());
  CHECK_FALSE(before.bias()->constraint());
  auto after = xq::quant_depthwise_conv2d(3, xq::ste_sign(), xq::ste_sign());
  xq::build(after, {1, 5, 5, 2});
  CHECK_FALSE(after.depthwise_kernel()->constraint());
  after.depthwise_constraint(xq::weight_clip(0.5f)).bias_constraint(xq::weight_clip(0.0f));
  after.depthwise_kernel()->value.fill(3.0f);
  after.depthwise_kernel()->apply_constraint();
  CHECK(after.depthwise_kernel()->value(0, 0, 0, 0) == 0.5f);
  after.bias()->value.fill(3.0f);
  after.bias()->apply_constraint();
  CHECK(after.bias()->value(0) == 0.0f);

  auto sep = xq::quant_separable_conv2d(2, 3, xq::ste_sign(), xq::ste_sign(), xq::ste_sign())
                 .depthwise_constraint(xq::weight_clip())
                 .pointwise_constraint(xq::weight_clip());
  xq::build(sep, {1, 5, 5, 2});
  CHECK(sep.depthwise_kernel()->constraint());
  CHECK(sep.pointwise_kernel()->constraint());
  CHECK_FALSE(sep.bias()->constraint());
}

namespace {

template <class Conv = xq::quant_conv2d<xq::ste_sign, scaled_sign>>
struct block {
  Conv conv = Conv(4, 3, xq::ste_sign(), scaled_sign());
  XQ_CHILDREN(conv)
  xq::var operator()(const xq::var& x) { return conv(x); }
};

}  // namespace

TEST_CASE("quant layer paths and parameter lists", "[quant_layers]") {
  auto net = xq::sequential(xq::quant_conv2d(4, 3, xq::ste_sign(), scaled_sign()).name("conv"),
                            xq::quant_depthwise_conv2d(3, xq::no_quantizer{}, xq::ste_sign()).padding(xq::padding::same),
                            xq::quant_separable_conv2d(3, 1, xq::ste_sign(), xq::ste_sign(), scaled_sign()),
                            xq::flatten(), xq::quant_dense(2, xq::ste_sign(), xq::ste_sign()));
  xq::build(net, {1, 6, 6, 2});
  xq::set_paths(net, "net");
  auto& conv = net.get<0>();
  CHECK(conv.path() == "net/conv");
  CHECK(conv.input_quantizer.path() == "net/conv/input_quantizer");
  CHECK(conv.kernel_quantizer.path() == "net/conv/kernel_quantizer");
  CHECK(net.get<1>().depthwise_quantizer.path() == "net/quant_depthwise_conv2d/depthwise_quantizer");
  CHECK(net.get<2>().pointwise_quantizer.path() == "net/quant_separable_conv2d/pointwise_quantizer");
  CHECK(net.get<4>().kernel_quantizer.path() == "net/quant_dense/kernel_quantizer");

  std::vector<std::string> names;
  for (const auto& p : xq::parameters(net)) names.push_back(p->name());
  const std::vector<std::string> want{"net/conv/kernel",
                                      "net/conv/bias",
                                      "net/conv/kernel_quantizer/scale",
                                      "net/quant_depthwise_conv2d/depthwise_kernel",
                                      "net/quant_depthwise_conv2d/bias",
                                      "net/quant_separable_conv2d/depthwise_kernel",
                                      "net/quant_separable_conv2d/pointwise_kernel",
                                      "net/quant_separable_conv2d/bias",
                                      "net/quant_separable_conv2d/pointwise_quantizer/scale",
                                      "net/quant_dense/kernel",
                                      "net/quant_dense/bias"};
  CHECK(names == want);
  CHECK(conv.parameters() == std::vector<xq::parameter_ptr>{conv.kernel(), conv.bias()});

  // Renaming a built layer renames its parameters and quantizers.
  conv.name("stem");
  CHECK(conv.kernel()->name() == "stem/kernel");
  CHECK(conv.kernel_quantizer.path() == "stem/kernel_quantizer");
  CHECK(conv.kernel_quantizer.scale()->name() == "stem/kernel_quantizer/scale");

  // Inside a composite: "<block>/conv/kernel_quantizer".
  block<> b;
  xq::build(b, {1, 5, 5, 1});
  xq::set_paths(b, "b");
  CHECK(b.conv.kernel_quantizer.path() == "b/conv/kernel_quantizer");
  CHECK(b.conv.kernel()->name() == "b/conv/kernel");

  // The scale of a quantizer gets its gradient through the layer.
  {
    xq::tape t;
    t.backward(b(xq::var(uniform({1, 5, 5, 1}))));
  }
  CHECK(b.conv.kernel_quantizer.scale()->has_grad());
  CHECK(b.conv.kernel()->has_grad());
}

TEST_CASE("an lsq_quantizer in a quant layer: its parameters, paths and gradients", "[quant_layers]") {
  auto net = xq::sequential(xq::quant_dense(3, xq::lsq_quantizer(4), xq::lsq_quantizer(2)).name("fc"));
  xq::set_paths(net, "net");
  auto& fc = net.get<0>();
  CHECK(fc.input_precision() == std::optional<int>(4));
  fc.input_quantizer.set_scale(0.25f);
  fc.kernel_quantizer.set_scale(0.5f);
  xq::build(net, {2, 5});
  xq::set_paths(net, "net");
  std::vector<std::string> names;
  for (const auto& p : xq::parameters(net)) names.push_back(p->name());
  CHECK(names == std::vector<std::string>{"net/fc/kernel", "net/fc/bias", "net/fc/input_quantizer/scale",
                                          "net/fc/kernel_quantizer/scale"});
  const auto wp = fc.weight_precisions();
  REQUIRE(wp.size() == 2);
  CHECK(wp[0].second == 2);
  CHECK(wp[1].second == 32);
  {
    xq::tape t;
    t.backward(net(xq::var(uniform({2, 5}))));
  }
  CHECK(fc.input_quantizer.scale()->has_grad());
  CHECK(fc.kernel_quantizer.scale()->has_grad());
  CHECK(fc.kernel()->has_grad());
  // The quantized kernel is a multiple of the kernel quantizer's scale.
  const xq::var qk = fc.kernel_quantizer(xq::var(fc.kernel()));
  for (float v : qk.value()) CHECK(std::fabs(v / 0.5f - std::round(v / 0.5f)) < 1e-6f);
}

TEST_CASE("input_precision and weight_precisions", "[quant_layers]") {
  auto conv = xq::quant_conv2d(4, 3, xq::ste_sign(), xq::ste_sign());
  CHECK(conv.input_precision() == std::optional<int>(1));
  CHECK(conv.weight_precisions().empty());  // not built
  xq::build(conv, {1, 5, 5, 2});
  auto wp = conv.weight_precisions();
  REQUIRE(wp.size() == 2);
  CHECK(wp[0].first == conv.kernel());
  CHECK(wp[0].second == 1);
  CHECK(wp[1].first == conv.bias());
  CHECK(wp[1].second == 32);

  auto dense = xq::quant_dense(3).use_bias(false);
  CHECK_FALSE(dense.input_precision().has_value());
  xq::build(dense, {1, 4});
  wp = dense.weight_precisions();
  REQUIRE(wp.size() == 1);
  CHECK(wp[0].second == 32);

  auto custom = xq::quant_dense(3, halve{}, halve{});
  CHECK_FALSE(custom.input_precision().has_value());  // a function has no precision
  xq::build(custom, {1, 4});
  CHECK(custom.weight_precisions()[0].second == 32);

  auto sep = xq::quant_separable_conv2d(2, 3, xq::no_quantizer{}, xq::ste_sign(), scaled_sign());
  CHECK_FALSE(sep.input_precision());
  xq::build(sep, {1, 5, 5, 2});
  wp = sep.weight_precisions();
  REQUIRE(wp.size() == 3);
  CHECK(wp[0].first == sep.depthwise_kernel());
  CHECK(wp[0].second == 1);
  CHECK(wp[1].first == sep.pointwise_kernel());
  CHECK(wp[1].second == 1);
  CHECK(wp[2].second == 32);

  auto dw = xq::quant_depthwise_conv2d(3, xq::ste_sign());
  xq::build(dw, {1, 5, 5, 2});
  CHECK(dw.input_precision() == std::optional<int>(1));
  CHECK(dw.weight_precisions()[0].second == 32);

  CHECK(xq::is_no_quantizer_v<xq::no_quantizer>);
  CHECK_FALSE(xq::is_no_quantizer_v<xq::ste_sign>);
}

TEST_CASE("setters after build and bad arguments throw", "[quant_layers]") {
  auto dense = xq::quant_dense(3, xq::ste_sign(), xq::ste_sign()).name("fc");
  CHECK(dense.use_bias());
  dense.use_bias(false).use_bias(true);  // before build: fine
  xq::build(dense, {1, 4});
  CHECK(dense.kernel()->name() == "fc/kernel");
  CHECK_THROWS_AS(dense.use_bias(false), xq::argument_error);
  auto dw = xq::quant_depthwise_conv2d(3).depth_multiplier(2).strides(2).use_bias(false);
  xq::build(dw, {1, 6, 6, 2});
  CHECK(dw.depthwise_kernel()->value.shape() == shape_t{3, 3, 2, 2});
  CHECK_FALSE(dw.bias());
  CHECK(dw.strides() == std::array<std::size_t, 2>{2, 2});
  CHECK_THROWS_AS(dw.depth_multiplier(3), xq::argument_error);
  auto sep = xq::quant_separable_conv2d(2, 3);
  CHECK_THROWS_AS(sep.depth_multiplier(0), xq::argument_error);
  CHECK_THROWS_AS(xq::quant_separable_conv2d(0, 3), xq::argument_error);
  xq::build(sep, {1, 5, 5, 2});
  CHECK_THROWS_AS(sep.use_bias(false), xq::argument_error);
  // Shape errors name the layer's path.
  auto conv = xq::quant_conv2d(2, 3, xq::ste_sign(), xq::ste_sign()).name("c").padding(xq::padding::same).pad_values(1.0f);
  xq::build(conv, {1, 5, 5, 2});
  try {
    conv(xq::var(xt::zeros<float>({1, 5, 5, 3})));
    FAIL("expected a shape error");
  } catch (const xq::shape_error& e) {
    CHECK(std::string(e.what()).find("c") != std::string::npos);
  }
}

TEST_CASE("metrics_scope gives kernel quantizers its metrics, an explicit choice wins", "[quant_layers][metrics]") {
  using xq::quantizer_metric;
  xq::metrics_scope scope(quantizer_metric::flip_ratio);
  auto conv = xq::quant_conv2d(2, 3, xq::ste_sign(), xq::ste_sign());
  CHECK(conv.kernel_quantizer.metrics() == quantizer_metric::flip_ratio);
  CHECK(conv.input_quantizer.metrics() == quantizer_metric::none);  // only kernel quantizers
  auto chosen = xq::quant_dense(2, xq::ste_sign(), xq::ste_sign().metrics(quantizer_metric::gradient_flow));
  CHECK(chosen.kernel_quantizer.metrics() == quantizer_metric::gradient_flow);
  auto none = xq::quant_dense(2, xq::ste_sign(), xq::ste_sign().metrics(quantizer_metric::none));
  CHECK(none.kernel_quantizer.metrics() == quantizer_metric::none);
  auto dw = xq::quant_depthwise_conv2d(3, xq::ste_sign(), xq::ste_sign());
  CHECK(dw.depthwise_quantizer.metrics() == quantizer_metric::flip_ratio);
  auto sep = xq::quant_separable_conv2d(2, 3, xq::ste_sign(), xq::ste_sign(), xq::ste_sign());
  CHECK(sep.depthwise_quantizer.metrics() == quantizer_metric::flip_ratio);
  CHECK(sep.pointwise_quantizer.metrics() == quantizer_metric::flip_ratio);
  CHECK(sep.input_quantizer.metrics() == quantizer_metric::none);
  {
    xq::metrics_scope off(quantizer_metric::none);
    auto plain = xq::quant_conv2d(2, 3, xq::ste_sign(), xq::ste_sign());
    CHECK(plain.kernel_quantizer.metrics() == quantizer_metric::none);
  }

  // The flip ratio follows the binarized kernel over training calls: one of 18 flips.
  auto net = xq::sequential(std::move(conv).name("conv"));
  xq::build(net, {1, 4, 4, 1});
  xq::set_paths(net, "net");
  auto& c = net.get<0>();
  c.kernel()->value.fill(0.5f);
  const xq::var x(uniform({1, 4, 4, 1}));
  {
    xq::training_mode training(true);
    (void)net(x);
    c.kernel()->value(0, 0, 0, 0) = -0.5f;
    (void)net(x);
  }
  std::vector<std::pair<std::string, double>> metrics;
  c.kernel_quantizer.for_each_metric([&](const std::string& name, double v) { metrics.emplace_back(name, v); });
  REQUIRE(metrics.size() == 1);
  CHECK(metrics[0].first == "flip_ratio/net/conv/kernel_quantizer");
  CHECK(metrics[0].second == Approx(1.0 / 18.0));
}

namespace {

auto make_net() {
  return xq::sequential(
      xq::quant_conv2d(4, 3, xq::ste_sign(), scaled_sign()).name("conv").padding(xq::padding::same).pad_values(1.0f)
          .kernel_constraint(xq::weight_clip()),
      xq::batch_norm(),
      xq::quant_depthwise_conv2d(3, xq::ste_sign(), xq::ste_sign()).depth_multiplier(2).strides(2),
      xq::quant_separable_conv2d(3, 2, xq::ste_sign(), xq::ste_sign(), xq::ste_sign()).padding(xq::padding::same)
          .pad_values(1.0f),
      xq::flatten(), xq::quant_dense(3, xq::lsq_quantizer(4, xq::lsq_scheme::affine), xq::ste_sign()));
}

template <class Net>
void train_steps(Net& net, int steps) {
  xq::adam opt(xq::trainable_parameters(net), xq::adam_options{0.05f});
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    xq::training_mode training(true);
    xq::tape t;
    const xq::var y = net(xq::var(uniform({2, 7, 7, 2}, -1.0f, 1.0f, 7u + unsigned(i))));
    t.backward(y, uniform(y.shape(), -1.0f, 1.0f, 99u));
    opt.step();
  }
}

template <class Net>
xq::tensor infer(Net& net) {
  xq::training_mode inference(false);
  xq::no_grad off;
  return net(xq::var(uniform({2, 7, 7, 2}, -1.0f, 1.0f, 5u))).value();
}

}  // namespace

TEST_CASE("clone_model of a sequential with quant layers", "[quant_layers][clone]") {
  xq::set_seed(3);
  auto net = make_net();
  xq::build(net, {2, 7, 7, 2});
  train_steps(net, 2);
  const xq::tensor y = infer(net);

  auto copy = xq::clone_model(net);
  CHECK(same_bits(infer(copy), y));
  const auto a = xq::parameters(net), b = xq::parameters(copy);
  REQUIRE(a.size() == b.size());
  std::set<const xq::parameter*> originals;
  for (const auto& p : a) originals.insert(p.get());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i]->name());
    CHECK(originals.count(b[i].get()) == 0);
    CHECK(b[i]->name() == a[i]->name());
    CHECK(same_bits(b[i]->value, a[i]->value));
  }
  CHECK(copy.get<0>().kernel_quantizer.scale() != net.get<0>().kernel_quantizer.scale());
  const auto& lsq = net.get<5>().input_quantizer;
  REQUIRE(lsq.initialized());  // by the first training call
  CHECK(copy.get<5>().input_quantizer.scale() != lsq.scale());
  CHECK(copy.get<5>().input_quantizer.zero_point() != lsq.zero_point());
  CHECK(same_bits(copy.get<5>().input_quantizer.scale()->value, lsq.scale()->value));
  CHECK(copy.get<0>().kernel()->constraint());  // the constraint comes along

  // Training the clone leaves the original alone, and the other way round.
  train_steps(copy, 1);
  CHECK(same_bits(infer(net), y));
  CHECK_FALSE(same_bits(infer(copy), y));
}

TEST_CASE("checkpoint round trip of a sequential with quant layers", "[quant_layers][checkpoint]") {
  xq::set_seed(4);
  auto net = make_net();
  xq::build(net, {2, 7, 7, 2});
  train_steps(net, 2);
  const xq::tensor y = infer(net);
  const auto bytes = xq::save_checkpoint_bytes(net);

  xq::set_seed(5);  // other initial weights
  auto fresh = make_net();
  xq::build(fresh, {2, 7, 7, 2});
  CHECK_FALSE(same_bits(infer(fresh), y));
  xq::load_checkpoint_bytes(bytes.data(), bytes.size(), "memory", fresh);
  CHECK(same_bits(infer(fresh), y));
  CHECK(same_bits(fresh.get<0>().kernel_quantizer.scale()->value, net.get<0>().kernel_quantizer.scale()->value));
  CHECK(fresh.get<5>().input_quantizer.initialized());  // the learned LSQ scale came back
  CHECK(same_bits(fresh.get<5>().input_quantizer.scale()->value, net.get<5>().input_quantizer.scale()->value));
  CHECK(same_bits(fresh.get<5>().input_quantizer.zero_point()->value,
                  net.get<5>().input_quantizer.zero_point()->value));
  CHECK(xq::save_checkpoint_bytes(fresh) == bytes);
}

TEST_CASE("quantize_model on a model mixing quant and float layers", "[quant_layers][quantize]") {
  using qconv_t = xq::quant_conv2d<xq::ste_sign, xq::ste_sign>;
  using qdense_t = xq::quant_dense<xq::ste_sign, xq::ste_sign>;
  static_assert(std::is_same_v<xq::quantize_t<qconv_t>, qconv_t>);
  static_assert(std::is_same_v<xq::quantize_t<xq::quant_separable_conv2d<>>, xq::quant_separable_conv2d<>>);
  static_assert(std::is_same_v<xq::quantize_t<xq::quant_depthwise_conv2d<xq::ste_sign, xq::ste_sign>>,
                               xq::quant_depthwise_conv2d<xq::ste_sign, xq::ste_sign>>);

  xq::set_seed(6);
  auto model = xq::sequential(qconv_t(4, 3, xq::ste_sign(), xq::ste_sign()).name("qconv"), xq::batch_norm(),
                              xq::conv2d(3, 3).name("conv"), xq::flatten(),
                              qdense_t(2, xq::ste_sign(), xq::ste_sign()).name("qfc"));
  const shape_t shape{2, 7, 7, 1};
  xq::build(model, shape);
  using twin_t = std::remove_reference_t<decltype(xq::quantize_model(model, xq::quantize_options{}, shape))>;
  static_assert(std::is_same_v<std::remove_reference_t<decltype(std::declval<twin_t&>().get<0>())>, qconv_t>);
  static_assert(std::is_same_v<std::remove_reference_t<decltype(std::declval<twin_t&>().get<2>())>,
                               xq::weight_quantized<xq::conv2d>>);
  static_assert(std::is_same_v<std::remove_reference_t<decltype(std::declval<twin_t&>().get<4>())>, qdense_t>);

  for (bool fold : {false, true}) {
    INFO("fold_batch_norm " << fold);
    xq::quantize_options o;
    o.fold_batch_norm = fold;
    auto twin = xq::quantize_model(model, o, shape);
    // The quant layers are themselves (same parameters), left alone by NVIDIA's scheme.
    CHECK(twin.get<0>().kernel() == model.get<0>().kernel());
    CHECK(twin.get<4>().kernel() == model.get<4>().kernel());
    CHECK(twin.get<0>().path() == "qconv");
    CHECK_FALSE(twin.get<1>().folded());  // a quant conv's batch norm is not folded
    CHECK(twin.get<2>().weight_quantizer().enabled());  // the float conv is quantized
    const xq::var x(uniform(shape));
    xq::training_mode inference(false);
    const xq::tensor y_twin = twin.get<0>()(x).value(), y_model = model.get<0>()(x).value();
    CHECK(same_bits(y_twin, y_model));
    std::vector<std::string> names;
    for (const auto& p : xq::parameters(twin)) names.push_back(p->name());
    CHECK(names.front() == "qconv/kernel");
    (void)twin(x);
  }
}
