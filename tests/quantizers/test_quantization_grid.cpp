// The quantization grid of every quantizer, through the one base (quantizer_base::grid_of),
// and quantize_on_grid: for every quantizer kind and state, on random data, exact ties and
// values at and past the range ends, per tensor and per channel, the integers the grid's
// rounding rule gives are the ones the quantizer's own inference call produced, bit for bit.
// Also the grid's new kinds (binary, blocks, float elements, two-level scales): their
// checks, their integers and describe().

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <xquant/core/mode.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/calibrate.hpp>
#include <xquant/quantizers/dorefa.hpp>
#include <xquant/quantizers/fake_quantizer.hpp>
#include <xquant/quantizers/lsq_quantizer.hpp>
#include <xquant/quantizers/magnitude_aware_sign.hpp>
#include <xquant/quantizers/moving_average_quantizer.hpp>
#include <xquant/quantizers/noop_quantizer.hpp>
#include <xquant/quantizers/quantization_grid.hpp>
#include <xquant/quantizers/quantize_on_grid.hpp>
#include <xquant/quantizers/ste_heaviside.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/quantizers/ste_tern.hpp>
#include <xquant/quantizers/swish_sign.hpp>
#include <xquant/numerics/tf_fake_quant.hpp>
#include <xquant/numerics/torch_fake_quant.hpp>
#include <xquant/xquant.hpp>

using xq::quantization_grid;
using xq::tensor;

namespace {

/// Normal random values of `shape`.
tensor randn(const std::vector<std::size_t>& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  tensor x = tensor::from_shape(shape);
  for (float& v : x) v = normal(rng);
  return x;
}

/// The real of integer q on channel c's grid, in double.
double real_of(const quantization_grid& g, std::size_t c, double q) {
  return (q - double(g.zero_point.at(c))) * double(g.scale.at(c));
}

/// A probe of `shape` for grid `g` (channels on its axis): a third random values over
/// twice the range, a third exact midpoints between neighbouring integers (ties), a third
/// the range ends, one step past them and far past them.
tensor probe(const quantization_grid& g, const std::vector<std::size_t>& shape, unsigned seed) {
  std::mt19937 rng(seed);
  tensor x = tensor::from_shape(shape);
  const std::size_t channels = g.per_channel ? shape.back() : 1;
  std::uniform_int_distribution<int> pick(0, 2);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = g.per_channel ? i % channels : 0;
    const double lo = real_of(g, c, g.qmin), hi = real_of(g, c, g.qmax), s = g.scale[c];
    std::uniform_int_distribution<std::int64_t> level(g.qmin, g.qmax - 1);
    double v = 0;
    switch (pick(rng)) {
      case 0: v = normal(rng) * std::max(std::fabs(lo), std::fabs(hi)); break;
      case 1: v = real_of(g, c, double(level(rng)) + 0.5); break;
      default: {
        const double ends[] = {lo, hi, lo - s, hi + s, lo - 0.5 * s, hi + 0.5 * s, lo - 100 * s, hi + 100 * s, 0.0, -0.0};
        v = ends[std::uniform_int_distribution<int>(0, 9)(rng)];
      }
    }
    x.data()[i] = float(v);
  }
  return x;
}

/// The inference call's output (no tape, stored state).
tensor infer(xq::quantizer_base& q, const tensor& x) {
  const xq::no_grad nothing;
  const xq::training_mode inference(false);
  return q(xq::var(x)).value();
}

/// The quantizer's grid on x, and its integers two ways: the rounding rule's, and those
/// read back from the inference call's output. Returns the grid.
quantization_grid check_same_integers(xq::quantizer_base& q, const tensor& x) {
  const std::optional<quantization_grid> g = q.grid_of(x);
  REQUIRE(g);
  INFO(xq::describe(*g) << " rounding " << xq::to_string(g->rounding.op));
  const std::vector<std::int32_t> ours = xq::quantize_on_grid(*g, x, "probe");
  const std::vector<std::int32_t> theirs = xq::grid_integers(*g, infer(q, x), "probe");
  REQUIRE(ours.size() == theirs.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) differ += ours[i] != theirs[i];
  CHECK(differ == 0);
  return *g;
}

/// Checks `q` on random data first, then on probes built from its grid (ties, range ends).
void check_quantizer(xq::quantizer_base& q, const std::vector<std::size_t>& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  tensor x = tensor::from_shape(shape);
  for (float& v : x) v = normal(rng);
  const quantization_grid g = check_same_integers(q, x);
  for (unsigned k = 0; k < 3; ++k) check_same_integers(q, probe(g, shape, seed * 7 + k));
}

/// Training batches through a quantizer (its observer).
void observe(xq::quantizer_base& q, const std::vector<std::size_t>& shape, unsigned seed, int batches = 2) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.3f, 1.5f);
  const xq::training_mode training(true);
  const xq::no_grad nothing;
  for (int b = 0; b < batches; ++b) {
    tensor x = tensor::from_shape(shape);
    for (float& v : x) v = normal(rng);
    q(xq::var(x));
  }
}

xq::quantizer_config config(xq::quant_numerics n, bool symmetric, bool narrow, bool per_channel,
                            xq::range_tracking t) {
  xq::quantizer_config c;
  c.numerics = n;
  c.symmetric = symmetric;
  c.narrow_range = narrow;
  c.per_channel = per_channel;
  c.tracking = t;
  return c;
}

}  // namespace

TEST_CASE("grid_of: a fake quantizer's rule gives its inference integers, every numerics and tracker",
          "[quant][grid]") {
  using xq::quant_numerics;
  using xq::range_tracking;
  unsigned seed = 1;
  for (quant_numerics n : {quant_numerics::tf_qdq, quant_numerics::tf_fake_quant, quant_numerics::torch_fake_quant})
    for (range_tracking t : {range_tracking::last_value, range_tracking::moving_average, range_tracking::all_values})
      for (bool per_channel : {false, true})
        for (bool symmetric : {true, false})
          for (int bits : {8, 4}) {
            CAPTURE(xq::to_string(n), xq::to_string(t), per_channel, symmetric, bits);
            xq::quantizer_config c = config(n, symmetric, symmetric, per_channel, t);
            c.num_bits = bits;
            c.reduce_range = n == quant_numerics::torch_fake_quant && bits == 8 && !symmetric;
            xq::fake_quantizer q(c);
            q.set_path("probe/q");
            // Before any batch (the initial range; PyTorch: scale 1, zero point 0), after batches.
            check_quantizer(q, {6, 5}, ++seed);
            observe(q, {6, 5}, ++seed);
            check_quantizer(q, {6, 5}, ++seed);
          }
}

TEST_CASE("grid_of: a per-channel fake quantizer on another axis, and a range set by hand", "[quant][grid]") {
  for (xq::quant_numerics n : {xq::quant_numerics::tf_qdq, xq::quant_numerics::torch_fake_quant}) {
    xq::quantizer_config c = config(n, true, true, true, xq::range_tracking::last_value);
    c.channel_axis = 0;
    xq::fake_quantizer q(c);
    observe(q, {4, 3, 2}, 5);
    const quantization_grid g = check_same_integers(q, tensor(xt::ones<float>({4, 3, 2}) * 0.37f));
    CHECK(g.channels() == 4);
    CHECK(g.channel_axis == 0);
  }
  // What calibrate() does: set_range.
  xq::quantizer_config c = config(xq::quant_numerics::torch_fake_quant, false, false, false, xq::range_tracking::last_value);
  xq::fake_quantizer q(c);
  q.set_range(xq::vector({-0.7f}), xq::vector({2.3f}));
  check_quantizer(q, {40}, 9);
  CHECK(q.grid_of(tensor(xt::zeros<float>({3})))->zero_point.at(0) != 0);
}

TEST_CASE("grid_of: tfmot's MovingAverageQuantizer and a calibrated PTQ model's quantizers", "[quant][grid]") {
  for (bool symmetric : {false, true}) {
    xq::moving_average_quantizer q(8, symmetric, symmetric);
    check_quantizer(q, {3, 7}, 3);
    observe(q, {3, 7}, 4, 5);
    const quantization_grid g = check_same_integers(q, tensor(xt::ones<float>({3, 7}) * 0.25f));
    CHECK(g.rounding.op == xq::rounding_operator::tf_fake_quant);
    check_quantizer(q, {3, 7}, 5);
  }
  // PyTorch's observers, before and after xq::calibrate.
  xq::set_seed(3);
  auto model = xq::sequential(xq::conv2d(4, 3).padding(xq::padding::same), xq::relu(), xq::flatten(), xq::dense(3));
  xq::build(model, {1, 6, 6, 2});
  xq::quantize_options o;
  o.scheme = xq::schemes::pytorch();
  auto ptq = xq::quantize_model(model, o, {1, 6, 6, 2});
  const tensor images = randn({16, 6, 6, 2}, 101);
  std::size_t checked = 0;
  auto check_all = [&] {
    xq::for_each_quantizer(ptq, [&](xq::fake_quantizer& q) {
      if (!q.enabled()) return;
      CAPTURE(q.path());
      // Kernels per channel (the last axis: 4 filters, 3 units; none before calibration).
      const std::size_t channels = q.config().per_channel && q.max().size() ? q.max().size() : 4;
      check_quantizer(q, {5, channels}, 11);
      ++checked;
    });
  };
  xq::for_each_quantizer(ptq, [&](xq::fake_quantizer& q) {
    if (q.config().per_channel) q.set_range(xq::vector::from_shape({0}), xq::vector::from_shape({0}));
  });
  check_all();
  xq::calibration_options co;
  co.method = xq::calibration_method::torch_histogram;
  xq::calibrate(ptq, images, co);
  check_all();
  CHECK(checked >= 4);
}

TEST_CASE("grid_of: LSQ, symmetric and affine, before and after its first batch", "[quant][grid]") {
  for (xq::lsq_scheme scheme : {xq::lsq_scheme::symmetric, xq::lsq_scheme::affine})
    for (int bits : {8, 3}) {
      CAPTURE(int(scheme), bits);
      xq::lsq_quantizer q(bits, scheme);
      CHECK(!q.grid_of(tensor::from_shape({4})));  // not initialised: it passes values through
      observe(q, {8, 4}, 21);
      const quantization_grid g = check_same_integers(q, randn({8, 4}, 102));
      CHECK(g.rounding.op == xq::rounding_operator::lsq);
      check_quantizer(q, {8, 4}, 22);
      // A zero point exactly between two integers: the forward rounds it half to even.
      if (scheme == xq::lsq_scheme::affine) {
        q.set_scale(0.1f, 2.5f);
        CHECK(q.grid_of(tensor::from_shape({1}))->zero_point.at(0) == 2);
        check_quantizer(q, {8, 4}, 23);
      }
    }
}

TEST_CASE("grid_of: DoReFa, Larq's signs, heaviside and SteTern", "[quant][grid]") {
  for (int k : {1, 2, 4, 8}) {
    CAPTURE(k);
    xq::dorefa a(k, xq::dorefa_mode::activations), w(k, xq::dorefa_mode::weights);
    check_quantizer(a, {5, 9}, 31);
    const tensor ties = xt::linspace<float>(-0.5f, 1.5f, 97);
    check_same_integers(a, ties);
    const quantization_grid g = check_same_integers(w, randn({3, 3, 2, 4}, 103));
    CHECK(g.dynamic);
    CHECK(g.qmax == (1 << k) - 1);
    check_same_integers(w, tensor(xt::zeros<float>({2, 3})));  // two_max 0: the middle level
  }
  xq::ste_sign s;
  xq::approx_sign as;
  xq::swish_sign ss;
  for (xq::quantizer_base* q : std::vector<xq::quantizer_base*>{&s, &as, &ss}) {
    check_quantizer(*q, {7, 3}, 41);
    // Zeros and denormals (read as 0 under TF's flushing) give +1; -2e-38 is a normal number.
    const tensor edge = {0.0f, -0.0f, 1e-45f, -1e-45f, -1.0f, 1.0f, -2e-38f, 3e38f};
    const quantization_grid g = check_same_integers(*q, edge);
    CHECK(g.element == xq::grid_element::binary);
    CHECK(xq::quantize_on_grid(g, edge, "edge") == std::vector<std::int32_t>{1, 1, 1, 1, -1, 1, -1, 1});
  }
  xq::magnitude_aware_sign m;
  check_quantizer(m, {3, 3, 2, 5}, 42);
  const quantization_grid mg = check_same_integers(m, randn({3, 3, 2, 5}, 104));
  CHECK(mg.per_channel);
  CHECK(mg.channels() == 5);
  // A channel of zeros: scale 0, every output 0, the integers Larq's sign(0) = +1.
  tensor zero_channel = randn({4, 3}, 105);
  for (std::size_t r = 0; r < 4; ++r) zero_channel(r, 1) = 0.0f;
  check_same_integers(m, zero_channel);
  check_same_integers(m, randn({6}, 106));  // rank 1: each element its own scale
  xq::ste_heaviside h;
  check_quantizer(h, {4, 4}, 43);
  for (bool twn : {false, true}) {
    xq::ste_tern t(0.25f, twn);
    check_quantizer(t, {6, 6}, 44);
    // Exactly at ±threshold: ±1, as Larq computes it.
    const float delta = t.grid_of(tensor(xt::ones<float>({4}) * 0.5f))->rounding.threshold;
    const tensor at = {delta, -delta, 0.0f, delta * 0.999f};
    check_same_integers(t, at);
  }
}

TEST_CASE("grid_of: no grid where the output has none", "[quant][grid]") {
  xq::noop_quantizer noop(1);
  CHECK(!noop.grid_of(tensor::from_shape({3})));
  xq::fake_quantizer off;  // the default: off
  CHECK(!off.grid_of(tensor::from_shape({3})));
  xq::ste_sign s;
  s.enable_fake_quant(false);
  CHECK(!s.grid_of(tensor::from_shape({3})));
  s.enable_fake_quant(true);
  s.enable(false);
  CHECK(!s.grid_of(tensor::from_shape({3})));
}

TEST_CASE("quantization grid: per-block integers, ONNX's QuantizeLinear, binary and float elements", "[quant][grid]") {
  // 2 x 5 elements, blocks of 2 along the last axis: scales of shape (2, 3).
  quantization_grid g;
  g.block_size = 2;
  g.channel_axis = -1;
  g.scale = {0.5f, 1.0f, 2.0f, 0.25f, 0.125f, 4.0f};
  g.zero_point = {0, 1, -2, 0, 3, 0};
  g.qmin = -8;
  g.qmax = 7;
  g.num_bits = 4;
  CHECK(xq::grid_scale_count(g, {2, 5}, "t") == 6);
  const tensor x = {{0.75f, -0.25f, 1.5f, 2.5f, 100.0f}, {0.125f, 0.375f, 0.0625f, -3.0f, 6.0f}};
  // QuantizeLinear: rint(x / s) + zp, ties to even, saturated.
  const std::vector<std::int32_t> q = xq::quantize_on_grid(g, x, "block");
  CHECK(q[0] == 2);   // 0.75 / 0.5 = 1.5 -> 2
  CHECK(q[1] == 0);   // -0.25 / 0.5 = -0.5 -> -0
  CHECK(q[2] == 3);   // 1.5 / 1 = 1.5 -> 2, + 1
  CHECK(q[3] == 3);   // 2.5 / 1 = 2.5 -> 2, + 1
  CHECK(q[4] == 7);   // 100 / 2 = 50, - 2: saturated to 7
  CHECK(q[5] == 0);   // 0.125 / 0.25 = 0.5 -> 0
  CHECK(q[6] == 2);   // 0.375 / 0.25 = 1.5 -> 2
  CHECK(q[7] == 3);   // 0.0625 / 0.125 = 0.5 -> 0, + 3
  CHECK(q[8] == -8);  // -3 / 0.125 = -24, + 3: saturated to -8
  CHECK(q[9] == 2);   // 6 / 4 = 1.5 -> 2
  // The dequantized values read back as those integers.
  tensor back = tensor::from_shape({2, 5});
  const std::size_t scale_of[] = {0, 0, 1, 1, 2, 3, 3, 4, 4, 5};
  for (std::size_t i = 0; i < 10; ++i)
    back.data()[i] = float((q[i] - g.zero_point[scale_of[i]]) * double(g.scale[scale_of[i]]));
  CHECK(xq::grid_integers(g, back, "block") == q);
  CHECK(xq::describe(g) == "int4 per-block(axis -1, block 2, 6 scales) [-8, 7]");
  // Another shape has another scale count.
  CHECK_THROWS_WITH(xq::quantize_on_grid(g, tensor::from_shape({2, 7}), "block"), Catch::Contains("8 for a tensor"));

  // Float elements: codes and values (OCP).
  CHECK(xq::element_value(xq::grid_element::fp8_e4m3fn, 0x7e) == 448.0f);
  CHECK(std::isnan(xq::element_value(xq::grid_element::fp8_e4m3fn, 0x7f)));
  CHECK(xq::element_value(xq::grid_element::fp8_e4m3fn, 0x01) == std::ldexp(1.0f, -9));
  CHECK(xq::element_value(xq::grid_element::fp8_e5m2, 0x7b) == 57344.0f);
  CHECK(std::isinf(xq::element_value(xq::grid_element::fp8_e5m2, 0x7c)));
  CHECK(xq::element_value(xq::grid_element::fp6_e3m2, 0x1f) == 28.0f);
  CHECK(xq::element_value(xq::grid_element::fp6_e2m3, 0x1f) == 7.5f);
  const float fp4[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (std::uint32_t c = 0; c < 8; ++c) {
    CHECK(xq::element_value(xq::grid_element::fp4_e2m1, c) == fp4[c]);
    CHECK(xq::element_value(xq::grid_element::fp4_e2m1, c | 8) == -fp4[c]);
    CHECK(xq::element_code(xq::grid_element::fp4_e2m1, fp4[c]) == c);
  }
  CHECK(!xq::element_code(xq::grid_element::fp4_e2m1, 5.0));
  CHECK(xq::representable_scale(xq::scale_element::e8m0, 0.125f));
  CHECK(!xq::representable_scale(xq::scale_element::e8m0, 0.3f));
  CHECK(xq::representable_scale(xq::scale_element::ue4m3, 448.0f));
  CHECK(!xq::representable_scale(xq::scale_element::ue4m3, 449.0f));

  // NVFP4: E2M1 elements, a UE4M3 scale per block of 16, a float32 tensor scale.
  quantization_grid nv;
  nv.element = xq::grid_element::fp4_e2m1;
  nv.num_bits = 4;
  nv.block_size = 16;
  nv.scale_type = xq::scale_element::ue4m3;
  nv.scale = {0.5f, 2.0f};
  nv.tensor_scale = 0.75f;
  xq::check_grid_for(nv, {32}, "nvfp4");
  CHECK(xq::describe(nv) == "fp4_e2m1 per-block(axis -1, block 16, 2 ue4m3 scales) x tensor scale 0.75");
  tensor fq = tensor::from_shape({32});
  for (std::size_t i = 0; i < 32; ++i) fq(i) = float(double(fp4[i % 8]) * (i < 16 ? 0.5 : 2.0) * 0.75) * (i % 3 ? 1.0f : -1.0f);
  const std::vector<std::int32_t> codes = xq::grid_integers(nv, fq, "nvfp4");
  for (std::size_t i = 0; i < 32; ++i) CHECK(xq::element_value(nv.element, std::uint32_t(codes[i])) == (i % 3 ? fp4[i % 8] : -fp4[i % 8]));
  CHECK_THROWS_WITH(xq::quantize_on_grid(nv, fq, "nvfp4"), Catch::Contains("low-bit numerics"));
  nv.scale[1] = 2.625f;  // not a UE4M3 value
  CHECK_THROWS_WITH(xq::check_grid(nv, "nvfp4"), Catch::Contains("scale[1] = 2.625"));
  // MX: E8M0 scales per 32, FP8 elements; a dynamic per-token grid.
  quantization_grid mx;
  mx.element = xq::grid_element::fp8_e4m3fn;
  mx.num_bits = 8;
  mx.block_size = 32;
  mx.scale_type = xq::scale_element::e8m0;
  mx.scale = {0.25f, 1.0f};
  mx.dynamic = true;
  CHECK(xq::describe(mx) == "fp8_e4m3fn per-block(axis -1, block 32, 2 e8m0 scales) dynamic");
  quantization_grid token;
  token.per_channel = true;
  token.channel_axis = 0;
  token.scale = {0.1f, 0.2f, 0.3f};
  token.zero_point = {0, 0, 0};
  token.dynamic = true;
  CHECK(xq::describe(token) == "int8 per-channel(axis 0, 3 scales) [-128, 127] dynamic");
  CHECK(xq::describe(xq::sign_grid()) == "binary ±1 per-tensor scale 1");
}

TEST_CASE("quantization grid: inconsistent grids and rules are refused, naming the place", "[quant][grid]") {
  quantization_grid g;
  g.scale = {0.1f};
  g.zero_point = {0};
  CHECK_NOTHROW(xq::check_grid(g, "g"));
  auto refused = [](quantization_grid bad, const char* what) {
    CHECK_THROWS_WITH(xq::check_grid(bad, "g"), Catch::Contains("g") && Catch::Contains(what));
  };
  quantization_grid b = g;
  b.scale = {-1.0f};
  refused(b, "scale[0] = -1");
  b = g;
  b.zero_point = {300};
  refused(b, "zero_point[0] = 300");
  b = g;
  b.qmin = 5;
  b.qmax = 4;
  refused(b, "qmin <= qmax");
  b = g;
  b.per_channel = true;
  b.block_size = 4;
  refused(b, "not both");
  b = g;
  b.num_bits = 4;
  refused(b, "at most 2^4 integers");
  b = g;
  b.rounding.op = xq::rounding_operator::tf_qdq;
  refused(b, "a range per scale");
  b.rounding.range_min = {1.0f};
  b.rounding.range_max = {0.0f};
  b.qmin = -127;
  refused(b, "min <= max");
  b = g;
  b.rounding.op = xq::rounding_operator::sign;
  refused(b, "a binary grid");
  b = xq::sign_grid();
  b.qmax = 2;
  refused(b, "[-1, 1], 1 bit");
  b = g;
  b.rounding.op = static_cast<xq::rounding_operator>(77);
  refused(b, "a known rounding operator");
}

TEST_CASE("quantize_on_grid: the peers' variants the rule names — TF's legacy and Args FakeQuant, PyTorch's float and "
          "wide zero points, its CPU builds",
          "[quant][grid]") {
  const tensor x = randn({7, 4}, 301) * 3.0f;
  // TF FakeQuant: the current and the legacy formula, Vars (divides) and Args (multiplies).
  xq::quantizer_config c = config(xq::quant_numerics::tf_fake_quant, false, false, false, xq::range_tracking::last_value);
  xq::fake_quantizer fq(c);
  fq.set_range(xq::vector({-2.3f}), xq::vector({4.1f}));
  quantization_grid g = *fq.grid_of(x);
  for (bool legacy : {false, true})
    for (bool product : {false, true}) {
      CAPTURE(legacy, product);
      g.rounding.legacy = legacy;
      g.rounding.product = product;
      const auto rev = legacy ? xq::tf::revision::legacy : xq::tf::revision::current;
      const tensor y = product ? xq::tf::fake_quant_with_min_max_args(x, -2.3f, 4.1f, 8, false, rev)
                               : xq::tf::fake_quant_with_min_max_vars(x, -2.3f, 4.1f, 8, false, rev);
      CHECK(xq::quantize_on_grid(g, x, "tf") == xq::grid_integers(g, y, "tf"));
    }
  // PyTorch per channel with float zero points, as each CPU build computes them: the
  // rounding differs next to a tie, and the rule names the build.
  quantization_grid f;
  f.per_channel = true;
  f.channel_axis = -1;
  f.qmin = 0;
  f.qmax = 255;
  f.scale = {0.05f, 0.1f, 0.037f, 0.02f};
  f.zero_point = {0, 0, 0, 0};
  f.rounding.op = xq::rounding_operator::torch_affine_float_zero_point;
  f.rounding.float_zero_point = {100.5f, 3.25f, 128.0f, 17.75f};
  tensor ties = tensor::from_shape({64, 4});
  for (std::size_t i = 0; i < 64; ++i)
    for (std::size_t k = 0; k < 4; ++k)
      ties(i, k) = float((double(i) - 32.0 + 0.5 - double(f.rounding.float_zero_point[k]) + 100.0) * double(f.scale[k]));
  const xq::vector scales({0.05f, 0.1f, 0.037f, 0.02f}), zps({100.5f, 3.25f, 128.0f, 17.75f});
  for (const auto build : {xq::torch::cpu_capability::scalar, xq::torch::cpu_capability::avx2}) {
    f.rounding.fused_multiply_add = xq::torch::fuses_float_zero_point(build);
    for (const tensor& in : {x, ties}) {
      const tensor y = xq::torch::fake_quantize_per_channel_affine(in, scales, zps, -1, 0, 255, build);
      CHECK(xq::quantize_on_grid(f, in, "float zp") == xq::grid_integers(f, y, "float zp"));
    }
  }
  // An int32 range (PyTorch's wide kernel, int64 arithmetic), on values of a few thousand steps.
  quantization_grid w;
  w.num_bits = 32;
  w.qmin = std::numeric_limits<std::int32_t>::min();
  w.qmax = std::numeric_limits<std::int32_t>::max();
  w.scale = {0.001f};
  w.zero_point = {12};
  w.rounding.op = xq::rounding_operator::torch_affine;
  const tensor y = xq::torch::fake_quantize_per_tensor_affine(x, 0.001f, 12, w.qmin, w.qmax);
  CHECK(xq::quantize_on_grid(w, x, "wide") == xq::grid_integers(w, y, "wide"));
}
