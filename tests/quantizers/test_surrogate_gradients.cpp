// The Larq quantizer family and lsq_quantizer: forward rules, surrogate gradients,
// defaults, precision(), argument validation, and LSQ learning its scale.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/mode.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/numerics/torch_learnable_fake_quant.hpp>
#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/dorefa.hpp>
#include <xquant/quantizers/lsq_quantizer.hpp>
#include <xquant/quantizers/magnitude_aware_sign.hpp>
#include <xquant/quantizers/noop_quantizer.hpp>
#include <xquant/quantizers/ste_heaviside.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/quantizers/ste_tern.hpp>
#include <xquant/quantizers/swish_sign.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/sgd.hpp>
#include <xquant/numerics/larq_math.hpp>

#include "../golden.hpp"
#include "quantizer_run.hpp"

using xq::tensor;
using xq::var;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
const float denorm = std::numeric_limits<float>::denorm_min();

using result = qtest::quantizer_result;

/// q(x) and its input gradient for upstream gradient dy.
template <class Q>
result run(Q& q, const tensor& x, const tensor& dy) {
  return qtest::run_quantizer(q, x, dy);
}
/// Same, with dy = 1.
template <class Q>
result run(Q& q, const tensor& x) {
  return run(q, x, xt::ones<float>(x.shape()));
}

bool same_bits(const tensor& got, const tensor& want) { return golden::bit_difference(got, want).empty(); }

}  // namespace

TEST_CASE("larq quantizers: precision, default names and the quantizer-layer trait", "[larq][quantizers]") {
  CHECK(xq::ste_sign().precision() == 1);
  CHECK(xq::approx_sign().precision() == 1);
  CHECK(xq::swish_sign().precision() == 1);
  CHECK(xq::ste_heaviside().precision() == 1);
  CHECK(xq::magnitude_aware_sign().precision() == 1);
  CHECK(xq::ste_tern().precision() == 2);
  CHECK(xq::dorefa().precision() == 2);
  CHECK(xq::dorefa(1).precision() == 1);
  CHECK(xq::dorefa(4, xq::dorefa_mode::weights).precision() == 4);
  CHECK(xq::noop_quantizer(1).precision() == 1);
  CHECK(xq::noop_quantizer(8).precision() == 8);
  CHECK(xq::lsq_quantizer().precision() == 8);
  CHECK(xq::lsq_quantizer(4, xq::lsq_scheme::affine).precision() == 4);

  CHECK(xq::ste_sign().name() == "ste_sign");
  CHECK(xq::approx_sign().name() == "approx_sign");
  CHECK(xq::swish_sign().name() == "swish_sign");
  CHECK(xq::ste_heaviside().name() == "ste_heaviside");
  CHECK(xq::magnitude_aware_sign().name() == "magnitude_aware_sign");
  CHECK(xq::ste_tern().name() == "ste_tern");
  CHECK(xq::dorefa().name() == "dorefa");
  CHECK(xq::noop_quantizer(1).name() == "no_op");
  CHECK(xq::lsq_quantizer().name() == "lsq_quantizer");

  STATIC_REQUIRE(xq::is_quantizer_layer_v<xq::approx_sign>);
  STATIC_REQUIRE(xq::is_quantizer_layer_v<xq::swish_sign>);
  STATIC_REQUIRE(xq::is_quantizer_layer_v<xq::ste_heaviside>);
  STATIC_REQUIRE(xq::is_quantizer_layer_v<xq::magnitude_aware_sign>);
  STATIC_REQUIRE(xq::is_quantizer_layer_v<xq::ste_tern>);
  STATIC_REQUIRE(xq::is_quantizer_layer_v<xq::dorefa>);
  STATIC_REQUIRE(xq::is_quantizer_layer_v<xq::noop_quantizer>);
  STATIC_REQUIRE(xq::is_quantizer_layer_v<xq::lsq_quantizer>);

  // Larq's defaults.
  CHECK(xq::ste_heaviside().clip_value() == 1.0f);
  CHECK(xq::magnitude_aware_sign().clip_value() == 1.0f);
  CHECK(xq::swish_sign().beta() == 5.0f);
  CHECK(xq::ste_tern().threshold_value() == 0.05f);
  CHECK_FALSE(xq::ste_tern().ternary_weight_networks());
  CHECK(xq::ste_tern().clip_value() == 1.0f);
  CHECK(xq::dorefa().k_bit() == 2);
  CHECK(xq::dorefa().mode() == xq::dorefa_mode::activations);
  CHECK(xq::dorefa(3, "weights").mode() == xq::dorefa_mode::weights);
}

TEST_CASE("larq quantizers: constructor arguments are validated", "[larq][quantizers][errors]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float clip : {0.0f, -1.0f, nan}) {
    CHECK_THROWS_AS(xq::ste_sign(clip), xq::argument_error);
    CHECK_THROWS_AS(xq::ste_heaviside(clip), xq::argument_error);
    CHECK_THROWS_AS(xq::magnitude_aware_sign(clip), xq::argument_error);
    CHECK_THROWS_AS(xq::ste_tern(0.05f, false, clip), xq::argument_error);
  }
  CHECK_NOTHROW(xq::ste_heaviside(inf));  // Larq's clip_value=None
  for (float beta : {0.0f, -5.0f, nan, inf}) CHECK_THROWS_AS(xq::swish_sign(beta), xq::argument_error);
  for (float thr : {-0.05f, nan, inf}) CHECK_THROWS_AS(xq::ste_tern(thr), xq::argument_error);
  CHECK_NOTHROW(xq::ste_tern(0.0f));
  for (int k : {0, -1, 25}) CHECK_THROWS_AS(xq::dorefa(k), xq::argument_error);
  CHECK_NOTHROW(xq::dorefa(24));
  CHECK_THROWS_WITH(xq::dorefa(2, "weight"),
                    Catch::Contains("xq::dorefa") && Catch::Contains("\"activations\" or \"weights\"") &&
                        Catch::Contains("\"weight\""));
  CHECK_THROWS_WITH(xq::ste_tern(-1.0f), Catch::Contains("threshold_value"));
  CHECK_THROWS_WITH(xq::swish_sign(0.0f), Catch::Contains("beta"));
  for (int p : {0, -1, 33}) CHECK_THROWS_AS(xq::noop_quantizer(p), xq::argument_error);
  for (int b : {0, 1, 17}) CHECK_THROWS_AS(xq::lsq_quantizer(b), xq::argument_error);
  CHECK_THROWS_AS(xq::lsq_quantizer().set_scale(0.0f), xq::argument_error);
  CHECK_THROWS_AS(xq::lsq_quantizer().set_scale(0.1f, 3.0f), xq::argument_error);  // symmetric: zp 0
  CHECK_NOTHROW(xq::lsq_quantizer(8, xq::lsq_scheme::affine).set_scale(0.1f, 3.0f));
}

TEST_CASE("ste_sign and ste_heaviside: the clip is inclusive, None passes everything", "[larq][quantizers]") {
  const tensor x = {-1.5f, -1.0f, -0.5f, -0.0f, 0.0f, 1.0f, std::nextafter(1.0f, 2.0f), denorm, -denorm};
  const tensor dy = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  xq::ste_sign sign;
  const auto s = run(sign, x, dy);
  // sign(0) = sign(-0) = +1; under TF's flushed denormals -1e-45 is -0: +1 as well.
  CHECK(same_bits(s.y, tensor{-1, -1, -1, 1, 1, 1, 1, 1, 1}));
  CHECK(same_bits(s.dx, tensor{0, 2, 3, 4, 5, 6, 0, 8, 9}));

  xq::ste_sign half(0.5f);
  CHECK(same_bits(run(half, x, dy).dx, tensor{0, 0, 3, 4, 5, 0, 0, 8, 9}));
  xq::ste_sign none(inf);
  CHECK(same_bits(run(none, x, dy).dx, dy));

  xq::ste_heaviside h;
  const auto r = run(h, x, dy);
  CHECK(same_bits(r.y, tensor{0, 0, 0, 0, 0, 1, 1, 0, 0}));  // heaviside(0) = 0, 1e-45 flushed: 0
  CHECK(same_bits(r.dx, tensor{0, 2, 3, 4, 5, 6, 0, 8, 9}));
  xq::ste_heaviside h_half(0.5f);
  CHECK(same_bits(run(h_half, x, dy).dx, tensor{0, 0, 3, 4, 5, 0, 0, 8, 9}));
}

TEST_CASE("approx_sign: gradient 2 - 2|x| for |x| up to 1", "[larq][quantizers]") {
  xq::approx_sign q;
  const tensor x = {0.0f, 0.5f, -0.5f, 0.25f, 1.0f, -1.0f, 1.5f, -3.0f, 0.75f};
  const auto r = run(q, x);
  CHECK(same_bits(r.y, tensor{1, 1, -1, 1, 1, -1, 1, -1, 1}));
  CHECK(same_bits(r.dx, tensor{2, 1, 1, 1.5f, 0, 0, 0, 0, 0.5f}));
  // dy scales it.
  CHECK(same_bits(run(q, tensor{0.5f, 0.0f}, tensor{-3, 0.5f}).dx, tensor{-3, 1}));
}

TEST_CASE("swish_sign: gradient beta at 0, the SignSwish formula elsewhere", "[larq][quantizers]") {
  for (float beta : {5.0f, 2.0f, 10.0f}) {
    INFO("beta " << beta);
    xq::swish_sign q(beta);
    const tensor x = {0.0f, -0.0f, 0.1f, -0.1f, 0.3f, -0.7f, 2.0f};
    const auto r = run(q, x);
    CHECK(same_bits(r.y, tensor{1, 1, 1, -1, 1, -1, 1}));
    CHECK(r.dx(0) == beta);  // β (2 - 0) / (1 + 1)
    CHECK(r.dx(1) == beta);
    CHECK(r.dx(2) == r.dx(3));  // even in x
    for (std::size_t i = 2; i < x.size(); ++i) {
      const double bx = double(beta) * x(i);
      const double want = beta * (2.0 - bx * std::tanh(bx / 2.0)) / (1.0 + std::cosh(bx));
      CHECK(r.dx(i) == Approx(want).epsilon(1e-5).margin(1e-6));
      CHECK(r.dx(i) < beta);
    }
  }
  // A sharper beta concentrates the gradient: larger at 0, smaller at 0.5.
  xq::swish_sign soft(2.0f), sharp(10.0f);
  CHECK(run(sharp, tensor{0.5f}).dx(0) < run(soft, tensor{0.5f}).dx(0));
}

TEST_CASE("magnitude_aware_sign: per-output-channel mean |x|, a stop-gradient scale", "[larq][quantizers]") {
  // (rows 4, channels 2): channel 0 mean |x| = (0.5 + 1.5 + 0.25 + 0.75) / 4 = 0.75,
  // channel 1 = (2 + 0 + 1 + 1) / 4 = 1.
  const tensor x = {{0.5f, -2.0f}, {-1.5f, 0.0f}, {0.25f, 1.0f}, {-0.75f, -1.0f}};
  xq::magnitude_aware_sign q;
  const auto s = xq::magnitude_aware_sign::scales(x);
  REQUIRE(s.size() == 2);
  CHECK(s[0] == 0.75f);
  CHECK(s[1] == 1.0f);
  const tensor dy = {{1, 2}, {3, 4}, {5, 6}, {7, 8}};
  const auto r = run(q, x, dy);
  CHECK(same_bits(r.y, tensor{{0.75f, -1}, {-0.75f, 1}, {0.75f, 1}, {-0.75f, -1}}));
  // dx = a · dy where |x| <= 1 (inclusive): no derivative of a itself.
  CHECK(same_bits(r.dx, tensor{{0.75f, 0}, {0, 4}, {3.75f, 6}, {5.25f, 8}}));

  // A 4-D kernel (kh, kw, in, out): the scale is per `out`, over kh·kw·in values.
  tensor k = xt::zeros<float>({2, 2, 3, 2});
  for (std::size_t i = 0; i < k.size(); ++i) k.data()[i] = (i % 2 ? 1.0f : -0.5f) * float(1 + i % 3);
  const auto ks = xq::magnitude_aware_sign::scales(k);
  REQUIRE(ks.size() == 2);
  for (std::size_t c = 0; c < 2; ++c) {
    double sum = 0;
    for (std::size_t r = 0; r < 12; ++r) sum += std::fabs(k.data()[r * 2 + c]);
    CHECK(ks[c] == float(sum) / 12.0f);
  }
  // Rank 1: Larq averages over no axis, so every element is its own scale: q(x) = x.
  xq::magnitude_aware_sign flat;
  CHECK(same_bits(run(flat, tensor{0.5f, -2.0f, 0.0f, -0.0f}).y, tensor{0.5f, -2.0f, 0.0f, 0.0f}));
  // clip None: a · dy everywhere.
  xq::magnitude_aware_sign none(inf);
  CHECK(same_bits(run(none, x, dy).dx, tensor{{0.75f, 2}, {2.25f, 4}, {3.75f, 6}, {5.25f, 8}}));
}

TEST_CASE("ste_tern: the threshold, exactly at it, and Ternary Weight Networks", "[larq][quantizers]") {
  xq::ste_tern q;
  const tensor x = {0.05f, -0.05f, std::nextafter(0.05f, 0.0f), -std::nextafter(0.05f, 0.0f), 0.06f, -0.3f, 0.0f,
                    -0.0f, 1.0f, -1.5f};
  const auto r = run(q, x);
  CHECK(same_bits(r.y, tensor{1, -1, 0, 0, 1, -1, 0, 0, 1, -1}));
  CHECK(same_bits(r.dx, tensor{1, 1, 1, 1, 1, 1, 1, 1, 1, 0}));
  xq::ste_tern none(0.05f, false, inf);
  CHECK(same_bits(run(none, x).dx, xt::ones<float>({x.size()})));

  // TWN: Δ = 0.7 · mean|x| = 0.7 · (1 + 1 + 0.5 + 0 + 0.25 + 0.25) / 6 = 0.35.
  xq::ste_tern twn(0.05f, true);
  const tensor w = {1.0f, -1.0f, 0.5f, 0.0f, 0.25f, -0.25f};
  CHECK(twn.threshold(w) == (0.7f * 3.0f) / 6.0f);
  CHECK(same_bits(run(twn, w).y, tensor{1, -1, 1, 0, 0, 0}));
  CHECK(q.threshold(w) == 0.05f);  // the fixed threshold ignores the data
}

TEST_CASE("dorefa activations: bins map to i/n, ties to even, the 0 to 1 gradient mask", "[larq][quantizers]") {
  for (int k : {1, 2, 3, 4}) {
    INFO("k_bit " << k);
    xq::dorefa q(k);
    const int n = (1 << k) - 1;
    std::vector<float> xs, want;
    for (int i = 0; i <= n; ++i) {
      // Inside the bin ((2i-1)/2n, (2i+1)/2n), clipped to [0, 1].
      const double lo = std::max(0.0, (2.0 * i - 1) / (2.0 * n)), hi = std::min(1.0, (2.0 * i + 1) / (2.0 * n));
      for (double t : {0.01, 0.5, 0.99}) {
        xs.push_back(float(lo + t * (hi - lo)));
        want.push_back(float(i) / float(n));
      }
    }
    tensor x = tensor::from_shape({xs.size()});
    std::copy(xs.begin(), xs.end(), x.begin());
    tensor w = tensor::from_shape({want.size()});
    std::copy(want.begin(), want.end(), w.begin());
    CHECK(same_bits(run(q, x).y, w));
  }
  xq::dorefa one(1), two(2);
  CHECK(run(one, tensor{0.5f}).y(0) == 0.0f);          // 0.5 · 1 = 0.5 rounds to even: 0
  CHECK(run(two, tensor{0.5f}).y(0) == 2.0f / 3.0f);   // 0.5 · 3 = 1.5 rounds to even: 2
  CHECK(run(two, tensor{1.0f / 6.0f}).y(0) == 0.0f);   // 0.5 exactly: to even 0
  // Clipped to [0, 1]; the gradient passes on [0, 1], ends included.
  const tensor x = {-0.3f, 0.0f, -0.0f, 1.0f, 1.7f, std::nextafter(1.0f, 2.0f), -1e-7f};
  const auto r = run(two, x, tensor{1, 2, 3, 4, 5, 6, 7});
  CHECK(same_bits(r.y, tensor{0, 0, 0, 1, 1, 1, 0}));
  CHECK(same_bits(r.dx, tensor{0, 2, 3, 4, 0, 0, 0}));
}

TEST_CASE("dorefa weights: tanh, max-normalised, levels from -1 to 1, gradient through tanh", "[larq][quantizers]") {
  xq::dorefa q(2, xq::dorefa_mode::weights);
  const tensor w = {{0.0f, 0.3f, -0.9f}, {2.0f, -2.0f, 0.05f}};
  const auto r = run(q, w, tensor{{1, 1, 1}, {1, 1, -2}});
  double max_t = 0;
  for (float v : w) max_t = std::max(max_t, std::fabs(std::tanh(double(v))));
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double t = std::tanh(double(w.data()[i]));
    const double u = t / (2 * max_t) + 0.5;
    const double level = 2.0 * std::nearbyint(u * 3) / 3 - 1;
    CHECK(r.y.data()[i] == Approx(level).margin(1e-6));
    const double dy = i == 5 ? -2.0 : 1.0;
    CHECK(r.dx.data()[i] == Approx(dy / max_t * (1 - t * t)).epsilon(1e-5));
  }
  // The largest |w| reaches the end levels; 0 sits at the middle, which 2 bits cannot
  // hit: round(0.5 · 3) = 2, so 0 goes to 2·2/3 - 1 = 1/3.
  CHECK(r.y(1, 0) == 1.0f);
  CHECK(r.y(1, 1) == -1.0f);
  CHECK(r.y(0, 0) == 2.0f * (2.0f / 3.0f) - 1.0f);
  // All zeros: divide_no_nan gives u = 0.5 everywhere and the gradient is 0.
  const auto z = run(q, xt::zeros<float>({2, 2}));
  CHECK(same_bits(z.y, xt::ones<float>({2, 2}) * (2.0f * (2.0f / 3.0f) - 1.0f)));
  CHECK(same_bits(z.dx, xt::zeros<float>({2, 2})));
  // k_bit 1: binary weights ±1.
  xq::dorefa b(1, "weights");
  for (float v : run(b, w).y) CHECK(std::fabs(v) == 1.0f);
}

TEST_CASE("TF's tanh emulation is within a few ulp of std::tanh", "[larq][quantizers]") {
  for (float v = -9.0f; v <= 9.0f; v += 0.01f) {
    const float got = xq::larq::tanh(v);
    CHECK(got == Approx(std::tanh(double(v))).epsilon(1e-6).margin(1e-7));
  }
  CHECK(xq::larq::tanh(0.0f) == 0.0f);
  CHECK(xq::larq::tanh(20.0f) == 1.0f);
  CHECK(xq::larq::tanh(-inf) == -1.0f);
  CHECK(std::isnan(xq::larq::tanh(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("noop_quantizer: the identity with a declared precision", "[larq][quantizers]") {
  xq::noop_quantizer q(1);
  const tensor x = {0.3f, -2.0f, 0.0f};
  var xv(x, true);
  CHECK(q(xv).state() == xv.state());  // no metric on the gradient: the input var itself
  q.metrics(xq::quantizer_metric::gradient_flow);
  const auto r = run(q, x, tensor{1, 2, 3});
  CHECK(same_bits(r.y, x));
  CHECK(same_bits(r.dx, tensor{1, 2, 3}));
  CHECK(q.gradient_flow_metric()->result() == 1.0);
}

TEST_CASE("lsq_quantizer: PyTorch's learnable fake quant with a trainable scale", "[lsq][quantizers]") {
  xq::lsq_quantizer q(4);  // symmetric: [-8, 7]
  CHECK(q.quant_min() == -8);
  CHECK(q.quant_max() == 7);
  REQUIRE(q.parameters().size() == 2);
  CHECK(q.parameters()[0] == q.scale());
  CHECK(q.parameters()[1] == nullptr);  // no zero point for the symmetric scheme
  CHECK(q.scale()->name() == "lsq_quantizer/scale");
  CHECK(q.scale()->trainable());
  int slots = 0;
  q.for_each_parameter_slot([&](xq::parameter_ptr&) { ++slots; });
  CHECK(slots == 2);
  CHECK_FALSE(q.initialized());

  const tensor x = {-3.0f, -0.6f, 0.2f, 0.75f, 2.0f, 0.0f, 1.1f, -0.1f};
  // Not initialised: an inference call (and xq::build's call) passes x through.
  CHECK(same_bits(q(var(x)).value(), x));
  CHECK_FALSE(q.initialized());

  // The first training call initialises the scale as LSQ: 2 · mean|x| / sqrt(qmax).
  tensor y;
  {
    xq::training_mode training;
    y = q(var(x)).value();
  }
  REQUIRE(q.initialized());
  double mean = 0;
  for (float v : x) mean += std::fabs(v);
  mean /= double(x.size());
  const float s = float(2.0 * mean / std::sqrt(7.0));
  CHECK(q.scale()->value(0) == s);
  const float gf = xq::torch::lsq_grad_factor(x.size(), 7);
  CHECK(same_bits(y, xq::torch::fake_quantize_learnable_per_tensor_affine(x, s, 0.0f, -8, 7, gf)));

  // Backward: dx and the scale's gradient are the operator's.
  const tensor dy = {1.0f, -0.5f, 2.0f, 0.25f, -1.0f, 1.5f, 0.75f, -2.0f};
  xq::tape t;
  var xv(x, true);
  var out = q(xv);
  t.backward(out, dy);
  const auto g = xq::torch::fake_quantize_learnable_per_tensor_affine_backward(dy, x, s, 0.0f, -8, 7, gf);
  CHECK(same_bits(xv.grad(), g.dx));
  REQUIRE(q.scale()->grad.size() == 1);
  CHECK(q.scale()->grad.shape()[0] == 1);
  CHECK(q.scale()->grad(0) == g.dscale);
  CHECK(g.dscale != 0.0f);
}

TEST_CASE("lsq_quantizer: the scale gets a gradient when x does not want one", "[lsq][quantizers]") {
  xq::lsq_quantizer q(8);
  q.set_scale(0.05f);
  xq::tape t;
  var y = q(var(tensor{0.1f, -0.42f, 3.0f}));  // data: no gradient for x
  t.backward(y, tensor{1, 1, 1});
  REQUIRE(q.scale()->grad.size() == 1);
  CHECK(q.scale()->grad(0) != 0.0f);
}

TEST_CASE("lsq_quantizer: SGD on the scale reduces the quantization error", "[lsq][quantizers]") {
  for (auto scheme : {xq::lsq_scheme::symmetric, xq::lsq_scheme::affine}) {
    INFO((scheme == xq::lsq_scheme::symmetric ? "symmetric" : "affine"));
    xq::lsq_quantizer q(3, scheme, false);
    q.set_scale(0.02f, scheme == xq::lsq_scheme::affine ? 3.0f : 0.0f);  // far too small: everything clips
    const tensor x = xt::linspace<float>(-1.0f, 1.0f, 64);
    std::vector<xq::parameter_ptr> params;
    for (const auto& p : q.parameters())
      if (p) params.push_back(p);
    xq::sgd opt(params, {0.05f});
    auto loss_now = [&] {
      xq::tape t;
      var loss = xq::mean_squared_error(q(var(x)), x);
      t.backward(loss);
      return loss.value()(0);
    };
    xq::training_mode training;
    opt.zero_grad();
    const float first = loss_now();
    REQUIRE(q.scale()->grad.size() == 1);
    CHECK(q.scale()->grad(0) < 0.0f);  // a larger scale clips less
    float last = first;
    for (int step = 0; step < 40; ++step) {
      opt.step();
      opt.zero_grad();
      last = loss_now();
    }
    CHECK(last < 0.25f * first);
    CHECK(q.scale()->value(0) > 0.1f);
  }
}

TEST_CASE("lsq_quantizer: affine scheme learns a zero point, clones get their own parameters", "[lsq][quantizers]") {
  xq::lsq_quantizer q(4, xq::lsq_scheme::affine);
  REQUIRE(q.zero_point());
  CHECK(q.quant_min() == 0);
  CHECK(q.quant_max() == 15);
  CHECK(q.zero_point()->name() == "lsq_quantizer/zero_point");
  const tensor x = {-1.0f, -0.25f, 0.5f, 2.0f, 3.0f};
  {
    xq::training_mode training;
    xq::tape t;
    var y = q(var(x));
    t.backward(y, tensor{1, 1, 1, 1, 1});
  }
  const float s = q.scale()->value(0);
  CHECK(s == float(2.0 * (6.75 / 5.0) / std::sqrt(15.0)));
  CHECK(q.zero_point()->value(0) == std::nearbyint(1.0f / s));  // min(x) = -1 maps to level 0
  REQUIRE(q.zero_point()->grad.size() == 1);

  const xq::lsq_quantizer copy = xq::clone_model(q);
  CHECK(copy.scale() != q.scale());
  CHECK(copy.zero_point() != q.zero_point());
  CHECK(copy.scale()->value(0) == s);
  CHECK(copy.initialized());
}
