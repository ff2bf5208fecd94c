// fake_quantizer: bit for bit the operator of its numerics (forward and input
// gradient), per tensor and per channel on any axis; the tracking rules
// (against tfmot's and PyTorch's golden sequences and docs/semantics.md §3/§5);
// inference; disabled; errors. And the one-pass range statistics it runs on.

#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <xquant/core/mode.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/quantizers/fake_quantizer.hpp>
#include <xquant/quantizers/quantizer_config.hpp>
#include <xquant/numerics/range_statistics.hpp>
#include <xquant/numerics/tf_fake_quant.hpp>
#include <xquant/numerics/tf_quantize_and_dequantize.hpp>
#include <xquant/numerics/tfmot_quantizers.hpp>
#include <xquant/numerics/torch_fake_quant.hpp>
#include <xquant/numerics/torch_observers.hpp>

#include "../golden.hpp"

using xq::fake_quantizer;
using xq::quant_numerics;
using xq::quantizer_config;
using xq::range_tracking;
using xq::tensor;
using xq::var;
namespace tf = xq::tf;
namespace tfmot = xq::tfmot;
namespace torch = xq::torch;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

tensor random_tensor(const std::vector<std::size_t>& shape, unsigned seed, float lo = -3.0f,
                     float hi = 3.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  tensor x = tensor::from_shape(shape);
  for (auto& v : x) v = u(rng);
  return x;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

quantizer_config make_config(quant_numerics n, bool symmetric, bool narrow, bool per_channel,
                             int axis = -1, range_tracking t = range_tracking::last_value) {
  quantizer_config c;
  c.numerics = n;
  c.symmetric = symmetric;
  c.narrow_range = narrow;
  c.per_channel = per_channel;
  c.channel_axis = axis;
  c.tracking = t;
  return c;
}

/// Min and max per channel of `axis` (or of the whole tensor), by a plain loop.
struct naive_range {
  xq::vector min, max;
};
naive_range naive_min_max(const tensor& x, bool per_channel, int axis) {
  const auto l = per_channel ? xq::kernels::channel_layout::of(x.shape(), axis, "test")
                             : xq::kernels::channel_layout{1, 1, x.size()};
  naive_range r{xq::vector::from_shape({l.channels}), xq::vector::from_shape({l.channels})};
  std::fill(r.min.begin(), r.min.end(), inf);
  std::fill(r.max.begin(), r.max.end(), -inf);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = (i / l.inner) % l.channels;
    r.min(c) = std::min(r.min(c), x.data()[i]);
    r.max(c) = std::max(r.max(c), x.data()[i]);
  }
  return r;
}

tensor as_tensor(const xq::vector& v) {
  tensor t = tensor::from_shape({v.size()});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

tf::qdq_options nvidia_options(const quantizer_config& c) {
  tf::qdq_options o;
  o.signed_input = true;
  o.num_bits = c.num_bits;
  o.range_given = true;
  o.round = tf::round_mode::half_to_even;
  o.narrow_range = c.narrow_range;
  o.axis = c.channel_axis;
  o.per_axis = c.per_channel;
  return o;
}

/// PyTorch's observer options for an 8-bit config, written the way a PyTorch
/// user would (default dtypes; quant_min -127 only for narrow).
torch::observer_options pytorch_options(const quantizer_config& c) {
  torch::observer_options o;
  o.type = c.symmetric ? torch::dtype::qint8 : torch::dtype::quint8;
  o.scheme = c.symmetric ? (c.per_channel ? torch::qscheme::per_channel_symmetric
                                          : torch::qscheme::per_tensor_symmetric)
                         : (c.per_channel ? torch::qscheme::per_channel_affine
                                          : torch::qscheme::per_tensor_affine);
  if (c.symmetric && c.narrow_range) {
    o.quant_min = -127;
    o.quant_max = 127;
  }
  o.reduce_range = c.reduce_range;
  o.ch_axis = c.channel_axis;
  return o;
}

/// The operator output for the range (min, max) as the quantizer stores it.
tensor direct_op(const quantizer_config& c, const tensor& x, const xq::vector& min,
                 const xq::vector& max) {
  switch (c.numerics) {
    case quant_numerics::tf_qdq:
      return tf::quantize_and_dequantize_v4(x, as_tensor(min), as_tensor(max), nvidia_options(c));
    case quant_numerics::tf_fake_quant:
      if (c.per_channel)
        return tf::fake_quant_with_min_max_vars_per_channel(x, min, max, c.num_bits, c.narrow_range);
      return tf::fake_quant_with_min_max_vars(x, min(0), max(0), c.num_bits, c.narrow_range);
    case quant_numerics::torch_fake_quant: {
      const auto o = pytorch_options(c);
      const auto p = torch::calculate_qparams(min, max, o);
      const auto q = torch::calculate_qmin_qmax(o.quant_min, o.quant_max, o.type, o.reduce_range);
      if (c.per_channel)
        return torch::fake_quantize_per_channel_affine(x, p.scale, p.zero_point, c.channel_axis,
                                                       q.quant_min, q.quant_max);
      return torch::fake_quantize_per_tensor_affine(x, p.scale(0), p.zero_point(0), q.quant_min,
                                                    q.quant_max);
    }
  }
  return x;
}

/// The operator's input gradient for the stored range.
tensor direct_gradient(const quantizer_config& c, const tensor& dy, const tensor& x,
                       const xq::vector& min, const xq::vector& max) {
  switch (c.numerics) {
    case quant_numerics::tf_qdq:
      return tf::quantize_and_dequantize_v4_gradient(dy, x, as_tensor(min), as_tensor(max),
                                                     nvidia_options(c));
    case quant_numerics::tf_fake_quant:
      if (c.per_channel)
        return tf::fake_quant_with_min_max_vars_per_channel_gradient(dy, x, min, max, c.num_bits,
                                                                     c.narrow_range).dx;
      return tf::fake_quant_with_min_max_vars_gradient(dy, x, min(0), max(0), c.num_bits,
                                                       c.narrow_range).dx;
    case quant_numerics::torch_fake_quant: {
      const auto o = pytorch_options(c);
      const auto p = torch::calculate_qparams(min, max, o);
      const auto q = torch::calculate_qmin_qmax(o.quant_min, o.quant_max, o.type, o.reduce_range);
      if (c.per_channel)
        return torch::fake_quantize_per_channel_affine_gradient(dy, x, p.scale, p.zero_point,
                                                                c.channel_axis, q.quant_min,
                                                                q.quant_max);
      return torch::fake_quantize_per_tensor_affine_gradient(dy, x, p.scale(0), p.zero_point(0),
                                                             q.quant_min, q.quant_max);
    }
  }
  return dy;
}

/// The range a last-value quantizer stores after one batch, by hand: tfmot's
/// rule on the naive statistic (tf), or the raw min/max (torch).
naive_range expected_last_value(const quantizer_config& c, const tensor& x) {
  naive_range r = naive_min_max(x, c.per_channel, c.channel_axis);
  if (c.numerics == quant_numerics::torch_fake_quant) return r;
  tfmot::range_state s{r.min, r.max};
  tfmot::adjust_batch_range(s, {c.num_bits, c.per_channel, c.symmetric, c.narrow_range, 0.999});
  return {s.min, s.max};
}

const quant_numerics all_numerics[] = {quant_numerics::tf_qdq, quant_numerics::tf_fake_quant,
                                       quant_numerics::torch_fake_quant};

}  // namespace

// ---- range statistics ----------------------------------------------------------------

TEST_CASE("measure_range: exact min/max per tensor and per channel, simd == scalar", "[quant][range]") {
  struct layout_case {
    std::vector<std::size_t> shape;
    int axis;  // 99: per tensor
  };
  const std::vector<layout_case> cases = {
      {{7}, 99},          {{1000}, 99},           {{300001}, 99},  // above the threading threshold
      {{3, 3, 4, 2}, -1}, {{3, 3, 4, 2}, 2},      {{3, 3, 4, 2}, 0},
      {{64, 14, 14, 32}, -1}, {{64, 14, 14, 32}, 1}, {{4100, 67}, -1},  // tail channels
      {{2, 5, 1}, -1},    {{9000, 40}, 0},        {{300, 1000}, -1},
      {{64, 14, 14, 32}, 2}, {{50, 6, 40}, 1},    {{3000, 7, 21}, 1}};  // runs of 21..448
  unsigned seed = 1;
  for (const auto& lc : cases) {
    tensor x = random_tensor(lc.shape, seed++);
    // Signed zeros and ReLU-style runs of zeros.
    for (std::size_t i = 0; i < x.size(); i += 3) x.data()[i] = (i % 2) ? 0.0f : -0.0f;
    const bool per_channel = lc.axis != 99;
    const auto l = per_channel ? xq::kernels::channel_layout::of(x.shape(), lc.axis, "test")
                               : xq::kernels::channel_layout{1, 1, x.size()};
    INFO("shape[0] " << lc.shape[0] << " axis " << lc.axis);
    const auto fast = xq::measure_range(x, l);
    const auto scalar = xq::measure_range<xq::scalar_policy>(x, l);
    const auto want = naive_min_max(x, per_channel, lc.axis);
    CHECK(fast.finite);
    REQUIRE(fast.min.size() == l.channels);
    CHECK(golden::bit_difference(fast.min, want.min) == "");  // std::min keeps the first zero
    CHECK(golden::bit_difference(fast.max, want.max) == "");
    CHECK(golden::bit_difference(scalar.min, want.min) == "");
    CHECK(golden::bit_difference(scalar.max, want.max) == "");
  }
}

TEST_CASE("measure_range: non-finite values are flagged in the same pass", "[quant][range]") {
  for (float bad : {std::nanf(""), inf, -inf}) {
    for (std::size_t at : {std::size_t(0), std::size_t(77), std::size_t(299999)}) {
      tensor x = random_tensor({300000}, 5);
      x.data()[at] = bad;
      CHECK_FALSE(xq::measure_range(x).finite);
      CHECK_FALSE(xq::measure_range<xq::scalar_policy>(x).finite);
      CHECK(xq::first_non_finite(x) == at);
      tensor y = x;
      y.reshape({3000, 100});
      CHECK_FALSE(xq::measure_range(y, xq::kernels::channel_layout::of(y.shape(), -1, "t")).finite);
      CHECK_FALSE(xq::measure_range(y, xq::kernels::channel_layout::of(y.shape(), 0, "t")).finite);
    }
  }
  // Empty: +Inf / -Inf (nothing seen), finite.
  const auto e = xq::measure_range(tensor::from_shape({0}));
  CHECK(e.finite);
  CHECK(e.min(0) == inf);
  CHECK(e.max(0) == -inf);
  const tensor no_channels = tensor::from_shape({3, 0});
  CHECK(xq::measure_range(no_channels, xq::kernels::channel_layout::of(no_channels.shape(), -1, "t")).min.size() == 0);
  // An all-zero channel keeps the sign of its first zero.
  tensor z = {-0.0f, 0.0f, 0.0f, -0.0f};
  const auto s = xq::measure_range(z);
  CHECK(std::signbit(s.min(0)));
  CHECK(std::signbit(s.max(0)));
}

// ---- forward: the operator, bit for bit ------------------------------------------------

TEST_CASE("fake_quantizer: training output equals the operator with the batch's range", "[quant][fake_quantizer]") {
  struct layout_case {
    bool per_channel;
    int axis;
  };
  const layout_case layouts[] = {{false, -1}, {true, -1}, {true, 2}};
  unsigned seed = 10;
  for (const auto n : all_numerics) {
    for (const auto lc : layouts) {
      if (n == quant_numerics::tf_fake_quant && lc.per_channel && lc.axis != -1) continue;
      for (const bool symmetric : {true, false}) {
        for (const bool narrow : {true, false}) {
          const auto c = make_config(n, symmetric, narrow, lc.per_channel, lc.axis);
          INFO(xq::describe(c));
          for (const auto& shape : {std::vector<std::size_t>{3, 3, 4, 2},
                                    std::vector<std::size_t>{64, 14, 14, 32}}) {
            if (lc.axis == 2 && shape.size() != 4) continue;
            fake_quantizer q(c);
            const tensor x = random_tensor(shape, seed++);
            var y;
            {
              xq::training_mode train;
              y = q(var(x));
            }
            const naive_range r = expected_last_value(c, x);
            CHECK(golden::bit_difference(q.min(), r.min) == "");
            CHECK(golden::bit_difference(q.max(), r.max) == "");
            CHECK(golden::bit_difference(y.value(), direct_op(c, x, r.min, r.max)) == "");
            CHECK(q.batches_seen() == 1);
            // The second batch replaces the range (last value).
            const tensor x2 = random_tensor(shape, seed++, -1.0f, 0.5f);
            xq::training_mode train;
            const var y2 = q(var(x2));
            const naive_range r2 = expected_last_value(c, x2);
            CHECK(golden::bit_difference(q.min(), r2.min) == "");
            CHECK(golden::bit_difference(y2.value(), direct_op(c, x2, r2.min, r2.max)) == "");
            CHECK(q.batches_seen() == 2);
          }
        }
      }
    }
  }
}

TEST_CASE("fake_quantizer: NVIDIA golden, ReLU-style zeros and all-zero batches", "[quant][fake_quantizer]") {
  // docs/semantics.md §4: amax = 1 gives [-127, -64, 0, 38, 102, 70, 64] / 127.
  fake_quantizer q(quantizer_config{});
  xq::training_mode train;
  const tensor x = {-1.0f, -0.5f, 0.0f, 0.3f, 0.8f, 0.555f, 0.50390625f};
  const tensor y = q(var(x)).value();
  const float want[] = {-127, -64, 0, 38, 102, 70, 64};
  for (std::size_t i = 0; i < 7; ++i) CHECK(y(i) == want[i] / 127.0f);
  // All-zero batches, with either sign first: the output's zero signs follow TF.
  for (const tensor& z : {tensor{-0.0f, 0.0f, -0.0f}, tensor{0.0f, -0.0f, 0.0f}}) {
    const tensor out = q(var(z)).value();
    const naive_range r = expected_last_value(q.config(), z);
    const tensor ref = direct_op(q.config(), z, r.min, r.max);
    for (std::size_t i = 0; i < 3; ++i) CHECK(same_bits(out(i), ref(i)));
  }
}

// ---- tracking rules ----------------------------------------------------------------------

TEST_CASE("fake_quantizer: tf tracking rules (docs/semantics.md §3)", "[quant][fake_quantizer]") {
  xq::training_mode train;
  auto tfmot_config = [](range_tracking t, bool symmetric, bool narrow) {
    auto c = make_config(quant_numerics::tf_fake_quant, symmetric, narrow, false, -1, t);
    return c;
  };
  SECTION("moving average from 0: [-1, 1] then [0, 0] -> ±0.000999") {
    auto c = tfmot_config(range_tracking::moving_average, false, false);
    c.init_min = c.init_max = 0.0f;
    fake_quantizer q(c);
    q(var(tensor{-1, 1}));
    q(var(tensor{0, 0}));
    CHECK(q.min()(0) == Approx(-0.000999).epsilon(1e-3));
    CHECK(q.max()(0) == Approx(0.000999).epsilon(1e-3));
  }
  SECTION("moving average from ±6: the first batch does not overwrite; bit-exact with tfmot") {
    fake_quantizer q(tfmot_config(range_tracking::moving_average, false, false));
    auto ref = tfmot::moving_average_quantizer(8, false, false);
    for (unsigned s = 0; s < 4; ++s) {
      const tensor x = random_tensor({5, 7}, 40 + s, -2.0f, 1.0f);
      const tensor y = q(var(x)).value();
      const tensor want = ref(x);
      CHECK(golden::bit_difference(q.min(), ref.state().min) == "");
      CHECK(golden::bit_difference(q.max(), ref.state().max) == "");
      CHECK(golden::bit_difference(y, want) == "");
    }
    CHECK(q.min()(0) < -5.9f);  // 4 batches of decay 0.999 from -6
  }
  SECTION("all values starts from 0 / 0 whatever init_min / init_max say") {
    fake_quantizer q(tfmot_config(range_tracking::all_values, false, false));
    CHECK(q.min()(0) == 0.0f);
    CHECK(q.max()(0) == 0.0f);
    q(var(tensor{-5, 1}));
    q(var(tensor{-1, 5}));
    CHECK(q.min()(0) == -5.0f);
    CHECK(q.max()(0) == 5.0f);
    q(var(tensor{1, 2}));
    CHECK(q.min()(0) == -5.0f);
  }
  SECTION("symmetric last value: narrow ±amax, wide [-amax, amax * 127/128]") {
    fake_quantizer narrow(tfmot_config(range_tracking::last_value, true, true));
    narrow(var(tensor{-1, 0.5f}));
    CHECK(narrow.min()(0) == -1.0f);
    CHECK(narrow.max()(0) == 1.0f);
    fake_quantizer wide(tfmot_config(range_tracking::last_value, true, false));
    wide(var(tensor{-0.9921875f, 0.9921875f}));
    CHECK(wide.min()(0) == -1.0f);
    CHECK(wide.max()(0) == 0.9921875f);
  }
}

TEST_CASE("fake_quantizer: tfmot golden sequences (tf_fake_quant numerics)", "[quant][fake_quantizer][golden]") {
  const auto data = golden::load("tfmot_quantizers");
  std::size_t checked = 0;
  for (const auto& c : data.at("cases")) {
    const std::string op = c.at("op");
    const auto& a = c.at("attrs");
    const auto& t = c.at("tensors");
    INFO(c.at("name").get<std::string>());
    quantizer_config cfg;
    cfg.numerics = quant_numerics::tf_fake_quant;
    cfg.tracking = op == "tfmot.last_value_quantize"   ? range_tracking::last_value
                   : op == "tfmot.moving_avg_quantize" ? range_tracking::moving_average
                                                       : range_tracking::all_values;
    cfg.num_bits = a.at("num_bits");
    cfg.per_channel = a.at("per_channel");
    cfg.symmetric = a.at("symmetric");
    cfg.narrow_range = a.at("narrow_range");
    fake_quantizer q(cfg);
    q.set_path("golden/quantizer");
    q.set_range(golden::vector(t.at("init_min")), golden::vector(t.at("init_max")));
    const bool training = a.value("is_training", true);
    std::size_t step = 0;
    for (const auto& s : c.at("steps")) {
      CAPTURE(step++);
      const bool train_step = s.contains("is_training") ? s.at("is_training").get<bool>() : training;
      const xq::training_mode mode(train_step);
      const tensor x = golden::tensor(s.at("x"));
      // Refused; tfmot's later steps are poisoned. (Size first: on an empty tensor xt::all
      // offsets a null pointer, which UBSan reports.)
      if (train_step && x.size() != 0 && !xt::all(xt::isfinite(x))) {
        const xq::vector before = q.min();
        const std::size_t seen = q.batches_seen();
        CHECK_THROWS_WITH(q(var(x)), Catch::Contains("golden/quantizer") && Catch::Contains("finite"));
        CHECK(golden::bit_difference(q.min(), before) == "");
        CHECK(q.batches_seen() == seen);
        break;
      }
      const tensor y = q(var(x)).value();
      CHECK(golden::bit_difference(q.min(), golden::vector(s.at("min"))) == "");
      CHECK(golden::bit_difference(q.max(), golden::vector(s.at("max"))) == "");
      CHECK(golden::bit_difference(y, golden::tensor(s.at("y"))) == "");
    }
    ++checked;
  }
  CHECK(checked > 80);
}

TEST_CASE("fake_quantizer: PyTorch observer golden sequences (torch numerics)", "[quant][fake_quantizer][golden]") {
  const auto data = golden::load("torch_observers");
  std::size_t checked = 0;
  for (const auto& c : data.at("cases")) {
    const auto& a = c.at("attrs");
    const auto& t = c.at("tensors");
    const std::string obs = a.at("observer"), dtype = a.at("dtype"), scheme = a.at("qscheme");
    const bool symmetric = scheme.find("symmetric") != std::string::npos;
    // Only the grids a quantizer_config describes: signed symmetric, unsigned affine.
    if (scheme.find("float_qparams") != std::string::npos) continue;
    if (symmetric != (dtype == "qint8")) continue;
    if (t.contains("eps") && golden::scalar(t.at("eps")) != FLT_EPSILON) continue;  // PyTorch's default eps only
    quantizer_config cfg;
    cfg.numerics = quant_numerics::torch_fake_quant;
    cfg.symmetric = symmetric;
    cfg.narrow_range = false;
    cfg.num_bits = 8;
    if (!a.at("quant_min").is_null()) {
      const std::int64_t lo = a.at("quant_min"), hi = a.at("quant_max");
      int bits = 0;
      while ((std::int64_t(1) << bits) < hi + 1) ++bits;
      cfg.num_bits = symmetric ? bits + 1 : bits;
      cfg.narrow_range = symmetric && lo == -hi;
      if (cfg.num_bits < 2) continue;
    }
    cfg.reduce_range = a.at("reduce_range");
    cfg.per_channel = scheme.rfind("per_channel", 0) == 0;
    if (cfg.per_channel) cfg.channel_axis = a.at("ch_axis");
    const bool moving = obs.find("MovingAverage") != std::string::npos;
    cfg.tracking = moving ? range_tracking::moving_average : range_tracking::all_values;
    if (t.contains("averaging_constant")) cfg.averaging_constant = golden::scalar(t.at("averaging_constant"));
    INFO(c.at("name").get<std::string>() << ": " << xq::describe(cfg));
    fake_quantizer q(cfg);
    xq::training_mode train;
    for (const auto& s : c.at("steps")) {
      const tensor x = golden::tensor(s.at("x"));
      if (x.size() != 0 && !xt::all(xt::isfinite(x))) {
        const xq::vector before = q.min();
        CHECK_THROWS_AS(q(var(x)), xq::argument_error);
        CHECK(golden::bit_difference(q.min(), before) == "");
        break;
      }
      const tensor y = q(var(x)).value();
      CHECK(golden::bit_difference(q.min(), golden::vector(s.at("min_val"))) == "");
      CHECK(golden::bit_difference(q.max(), golden::vector(s.at("max_val"))) == "");
      // The output is PyTorch's op with PyTorch's qparams.
      torch::observer_options o;
      o.type = symmetric ? torch::dtype::qint8 : torch::dtype::quint8;
      if (!a.at("quant_min").is_null()) {
        o.quant_min = a.at("quant_min").get<std::int64_t>();
        o.quant_max = a.at("quant_max").get<std::int64_t>();
      }
      const auto qr = torch::calculate_qmin_qmax(o.quant_min, o.quant_max, o.type, cfg.reduce_range);
      const xq::vector scale = golden::vector(s.at("scale"));
      const auto zp = golden::ints(s.at("zero_point"));
      const tensor want = cfg.per_channel
                              ? torch::fake_quantize_per_channel_affine(x, scale, zp, cfg.channel_axis,
                                                                        qr.quant_min, qr.quant_max)
                              : torch::fake_quantize_per_tensor_affine(x, scale(0), zp(0),
                                                                       qr.quant_min, qr.quant_max);
      CHECK(golden::bit_difference(y, want) == "");
    }
    ++checked;
  }
  CHECK(checked > 40);
}

TEST_CASE("fake_quantizer: torch tracking rules (docs/semantics.md §5)", "[quant][fake_quantizer]") {
  xq::training_mode train;
  SECTION("moving average: the first batch is copied, then m += c (cur - m)") {
    auto c = make_config(quant_numerics::torch_fake_quant, false, false, false, -1,
                         range_tracking::moving_average);
    c.averaging_constant = 0.5;
    fake_quantizer q(c);
    CHECK(q.min()(0) == inf);  // PyTorch's unobserved min_val / max_val
    CHECK(q.max()(0) == -inf);
    q(var(tensor{0, 2, 4, 6}));
    CHECK(q.min()(0) == 0.0f);
    CHECK(q.max()(0) == 6.0f);
    q(var(tensor{2, 4, 6, 8, 10}));
    CHECK(q.min()(0) == 1.0f);
    CHECK(q.max()(0) == 8.0f);
  }
  SECTION("moving average with c = 0.01, per tensor and per channel, bit-exact with the observer") {
    for (const bool per_channel : {false, true}) {
      const auto c = make_config(quant_numerics::torch_fake_quant, true, false, per_channel, 0,
                                 range_tracking::moving_average);
      fake_quantizer q(c);
      auto o = pytorch_options(c);
      torch::observer ref(per_channel ? torch::observer_kind::moving_average_per_channel_min_max
                                      : torch::observer_kind::moving_average_min_max,
                          o);
      for (unsigned s = 0; s < 3; ++s) {
        const tensor x = random_tensor({4, 3, 5}, 60 + s);
        q(var(x));
        ref(x);
        CHECK(golden::bit_difference(q.min(), ref.min_val()) == "");
        CHECK(golden::bit_difference(q.max(), ref.max_val()) == "");
      }
    }
  }
  SECTION("all values: MinMaxObserver [1..6] then [4..8] -> 1 / 8") {
    fake_quantizer q(make_config(quant_numerics::torch_fake_quant, false, false, false, -1,
                                 range_tracking::all_values));
    q(var(tensor{1, 2, 2, 3, 4, 5, 6}));
    q(var(tensor{4, 5, 5, 6, 7, 8}));
    CHECK(q.min()(0) == 1.0f);
    CHECK(q.max()(0) == 8.0f);
  }
  SECTION("last value: the batch alone") {
    fake_quantizer q(make_config(quant_numerics::torch_fake_quant, false, false, false));
    q(var(tensor{-4, 9}));
    q(var(tensor{1, 2}));
    CHECK(q.min()(0) == 1.0f);
    CHECK(q.max()(0) == 2.0f);
  }
}

// ---- inference -------------------------------------------------------------------------

TEST_CASE("fake_quantizer: inference uses the stored range and does not update it", "[quant][fake_quantizer]") {
  for (const auto n : all_numerics) {
    for (const bool per_channel : {false, true}) {
      const auto c = make_config(n, true, true, per_channel);
      INFO(xq::describe(c));
      fake_quantizer q(c);
      const tensor x = random_tensor({6, 4}, 70);
      const tensor x10 = x * 10.0f;
      // Before any batch: tf init ±6 (per channel: for every channel), torch scale 1 / zp 0.
      const tensor before = q(var(x10)).value();
      if (n == quant_numerics::torch_fake_quant) {
        const tensor want = per_channel
                                ? torch::fake_quantize_per_channel_affine(
                                      x10, xq::vector{1, 1, 1, 1},
                                      torch::index_vector{0, 0, 0, 0}, -1, -127, 127)
                                : torch::fake_quantize_per_tensor_affine(x10, 1.0f, 0, -127, 127);
        CHECK(golden::bit_difference(before, want) == "");
      } else {
        const xq::vector lo = per_channel ? xq::vector{-6, -6, -6, -6} : xq::vector{-6};
        const xq::vector hi = per_channel ? xq::vector{6, 6, 6, 6} : xq::vector{6};
        CHECK(golden::bit_difference(before, direct_op(c, x10, lo, hi)) == "");
      }
      CHECK(q.batches_seen() == 0);
      CHECK(q.min().size() == (per_channel ? 0u : 1u));
      {
        xq::training_mode train;
        q(var(x));
      }
      const xq::vector lo = q.min(), hi = q.max();
      const tensor wide = x * 3.0f;
      const tensor y = q(var(wide)).value();  // inference: the default mode
      CHECK(golden::bit_difference(q.min(), lo) == "");
      CHECK(golden::bit_difference(q.max(), hi) == "");
      CHECK(q.batches_seen() == 1);
      CHECK(golden::bit_difference(y, direct_op(c, wide, lo, hi)) == "");
      xq::training_mode off(false);
      q(var(wide));
      CHECK(q.batches_seen() == 1);
    }
  }
}

// ---- disabled --------------------------------------------------------------------------

TEST_CASE("fake_quantizer: disabled returns the same var and records nothing", "[quant][fake_quantizer]") {
  fake_quantizer off;
  CHECK_FALSE(off.enabled());
  fake_quantizer q(quantizer_config{}, false);
  const var x(random_tensor({4, 4}, 80), true);
  xq::training_mode train;
  xq::tape tape;
  for (fake_quantizer* f : {&off, &q}) {
    const var y = (*f)(x);
    CHECK(y.state().get() == x.state().get());
    CHECK(tape.size() == 0);
    CHECK(f->batches_seen() == 0);
  }
  CHECK(q.min()(0) == -6.0f);
  q.enable();
  CHECK(q.enabled());
  const var y = q(x);
  CHECK(y.state().get() != x.state().get());
  CHECK(tape.size() == 1);
  q.enable(false);
  CHECK(q(x).state().get() == x.state().get());
}

// ---- backward ----------------------------------------------------------------------------

TEST_CASE("fake_quantizer: backward equals the operator's input gradient", "[quant][fake_quantizer]") {
  struct layout_case {
    bool per_channel;
    int axis;
  };
  const layout_case layouts[] = {{false, -1}, {true, -1}, {true, 2}};
  for (const auto n : all_numerics) {
    for (const auto lc : layouts) {
      if (n == quant_numerics::tf_fake_quant && lc.per_channel && lc.axis != -1) continue;
      for (const bool symmetric : {true, false}) {
        const bool narrow = symmetric;
        const auto c = make_config(n, symmetric, narrow, lc.per_channel, lc.axis);
        INFO(xq::describe(c));
        fake_quantizer q(c);
        // A range narrower than the data, so that the mask cuts somewhere.
        const tensor calib = random_tensor({3, 3, 4, 2}, 90, -1.0f, 1.0f);
        {
          xq::training_mode train;
          q(var(calib));
        }
        const tensor xv = random_tensor({3, 3, 4, 2}, 91, -2.0f, 2.0f);
        tensor dy = random_tensor({3, 3, 4, 2}, 92, -1.0f, 1.0f);
        dy.data()[5] = 1e-40f;  // a denormal: TF's gradient ops flush it, PyTorch's keep it
        dy.data()[6] = -1e-40f;
        for (const bool training : {false, true}) {
          const xq::training_mode mode(training);
          const var x(xv, true);
          xq::tape tape;
          const var y = q(x);
          CHECK(tape.size() == 1);
          tape.backward(y, dy);
          tensor want = direct_gradient(c, dy, xv, q.min(), q.max());
          if (n == quant_numerics::tf_fake_quant) {
            // TF computes dy * mask with denormals flushed, so a denormal dy gives a zero
            // of its sign. (The operator's per-channel scalar path can keep it: the
            // compiler may fold `dy * 1.0f` to dy, which is exact only without DAZ.)
            for (std::size_t i : {5, 6}) want.data()[i] = std::copysign(0.0f, dy.data()[i]);
          }
          CHECK(golden::bit_difference(x.grad(), want) == "");
        }
      }
    }
  }
}

TEST_CASE("fake_quantizer: the straight-through mask inside and outside the range", "[quant][fake_quantizer]") {
  // Range [-1, 1]; points strictly inside pass dy, points well outside get 0.
  const tensor xv = {-3.0f, -1.5f, -0.7f, 0.0f, 0.2f, 0.9f, 1.6f, 40.0f};
  const bool inside[] = {false, false, true, true, true, true, false, false};
  const tensor dy = {1, 2, 3, 4, 5, 6, 7, 8};
  for (const auto n : all_numerics) {
    const auto c = make_config(n, true, n != quant_numerics::torch_fake_quant, false);
    INFO(xq::describe(c));
    fake_quantizer q(c);
    q.set_range(xq::vector{-1.0f}, xq::vector{1.0f});
    const var x(xv, true);
    xq::tape tape;
    const var y = q(x);  // inference: the range stays
    tape.backward(y, dy);
    for (std::size_t i = 0; i < xv.size(); ++i) CHECK(x.grad()(i) == (inside[i] ? dy(i) : 0.0f));
  }
  // NVIDIA per tensor, training: the range is the batch's, so everything passes.
  fake_quantizer nvidia(quantizer_config{});
  xq::training_mode train;
  const var x(xv, true);
  xq::tape tape;
  tape.backward(nvidia(x), dy);
  CHECK(golden::bit_difference(x.grad(), dy) == "");
}

// ---- errors -------------------------------------------------------------------------------

TEST_CASE("fake_quantizer: non-finite training batches throw and keep the range", "[quant][fake_quantizer]") {
  for (const auto n : all_numerics) {
    for (const bool per_channel : {false, true}) {
      fake_quantizer q(make_config(n, true, true, per_channel));
      q.set_path("block/conv/input_quantizer");
      xq::training_mode train;
      q(var(random_tensor({5, 3}, 100)));
      const xq::vector lo = q.min(), hi = q.max();
      for (float bad : {std::nanf(""), inf, -inf}) {
        tensor x = random_tensor({5, 3}, 101);
        x(3, 1) = bad;
        CHECK_THROWS_WITH(q(var(x)), Catch::Contains("block/conv/input_quantizer") &&
                                         Catch::Contains("flat index 10"));
        CHECK(golden::bit_difference(q.min(), lo) == "");
        CHECK(golden::bit_difference(q.max(), hi) == "");
        CHECK(q.batches_seen() == 1);
      }
    }
  }
}

TEST_CASE("fake_quantizer: bad configs throw with the path", "[quant][fake_quantizer]") {
  fake_quantizer q(quantizer_config{});
  q.set_path("net/dense/weight_quantizer");
  auto c = make_config(quant_numerics::tf_fake_quant, true, true, false);
  c.num_bits = 1;
  CHECK_THROWS_AS(q.configure(c), xq::argument_error);
  CHECK_THROWS_WITH(q.configure(c), Catch::Contains("net/dense/weight_quantizer") &&
                                        Catch::Contains("num_bits in [2, 16]") &&
                                        Catch::Contains("num_bits = 1"));
  CHECK(q.config().numerics == quant_numerics::tf_qdq);  // unchanged
  c.num_bits = 8;
  c.per_channel = true;
  c.channel_axis = 2;
  CHECK_THROWS_WITH(q.configure(c), Catch::Contains("net/dense/weight_quantizer") &&
                                        Catch::Contains("channel_axis -1"));
  CHECK_THROWS_WITH(fake_quantizer(c), Catch::Contains("fake_quantizer"));
  auto t = make_config(quant_numerics::torch_fake_quant, true, true, false);
  t.num_bits = 17;
  CHECK_THROWS_AS(q.configure(t), xq::argument_error);
  auto d = quantizer_config{};
  d.ema_decay = 1.5;
  CHECK_THROWS_WITH(q.configure(d), Catch::Contains("ema_decay"));
  d = quantizer_config{};
  d.init_min = 1.0f;
  d.init_max = -1.0f;
  CHECK_THROWS_WITH(q.configure(d), Catch::Contains("init_min <= init_max"));
  // Axis out of range, and a channel count that changes, at call time.
  auto pc = make_config(quant_numerics::tf_qdq, true, true, true, 5);
  q.configure(pc);
  CHECK_THROWS_WITH(q(var(random_tensor({2, 3}, 1))), Catch::Contains("net/dense/weight_quantizer"));
  pc.channel_axis = -1;
  q.configure(pc);
  xq::training_mode train;
  q(var(random_tensor({2, 3}, 1)));
  CHECK_THROWS_WITH(q(var(random_tensor({2, 4}, 1))), Catch::Contains("net/dense/weight_quantizer") &&
                                                          Catch::Contains("3 channels"));
}

TEST_CASE("fake_quantizer: set_range validates and sets", "[quant][fake_quantizer]") {
  fake_quantizer q(quantizer_config{});
  q.set_path("p/q");
  CHECK_THROWS_WITH(q.set_range(xq::vector{1.0f}, xq::vector{-1.0f}), Catch::Contains("p/q") &&
                                                                          Catch::Contains("min <= max"));
  CHECK_THROWS_AS(q.set_range(xq::vector{-1.0f, -2.0f}, xq::vector{1.0f, 2.0f}), xq::argument_error);
  CHECK_THROWS_AS(q.set_range(xq::vector{-1.0f}, xq::vector{1.0f, 2.0f}), xq::argument_error);
  CHECK_THROWS_AS(q.set_range(xq::vector{std::nanf("")}, xq::vector{1.0f}), xq::argument_error);
  CHECK_THROWS_AS(q.set_range(xq::vector{-inf}, xq::vector{1.0f}), xq::argument_error);
  CHECK(q.min()(0) == -6.0f);  // unchanged by the failures
  q.set_range(xq::vector{-0.5f}, xq::vector{2.0f});
  CHECK(q.min()(0) == -0.5f);
  CHECK(q.max()(0) == 2.0f);
  const tensor x = {-1.0f, 0.3f, 3.0f};
  CHECK(golden::bit_difference(q(var(x)).value(), direct_op(q.config(), x, q.min(), q.max())) == "");
  // tf_fake_quant cannot take min = max unless both are 0.
  fake_quantizer fq(make_config(quant_numerics::tf_fake_quant, false, false, false));
  CHECK_THROWS_AS(fq.set_range(xq::vector{2.0f}, xq::vector{2.0f}), xq::argument_error);
  fq.set_range(xq::vector{0.0f}, xq::vector{0.0f});
  // Per channel: any number of channels; later batches must match.
  fake_quantizer pc(make_config(quant_numerics::tf_qdq, true, true, true, -1));
  pc.set_range(xq::vector{-1, -2, -3}, xq::vector{1, 2, 3});
  CHECK(pc.min().size() == 3);
  CHECK_THROWS_AS(pc(var(random_tensor({2, 4}, 3))), xq::argument_error);
  CHECK_THROWS_AS(pc.set_range(xq::vector{-1, 5}, xq::vector{1, 2}), xq::argument_error);
  // An unobserved torch quantizer's range round-trips (checkpoints).
  fake_quantizer t(make_config(quant_numerics::torch_fake_quant, false, false, false));
  const xq::vector lo = t.min(), hi = t.max();
  t.set_range(lo, hi);
  CHECK(t.min()(0) == inf);
}

TEST_CASE("fake_quantizer: configure and reset go back to the initial state, describe", "[quant][fake_quantizer]") {
  auto c = make_config(quant_numerics::tf_qdq, true, true, true, -1);
  CHECK(xq::describe(c) == "8-bit symmetric narrow per-channel(axis -1) tf_qdq last_value");
  fake_quantizer q(c);
  q.set_path("a/b");
  xq::training_mode train;
  q(var(random_tensor({4, 3}, 7)));
  CHECK(q.min().size() == 3);
  q.reset();
  CHECK(q.min().size() == 0);
  CHECK(q.batches_seen() == 0);
  CHECK(q.path() == "a/b");
  CHECK(q.enabled());
  auto m = make_config(quant_numerics::torch_fake_quant, false, false, false, -1,
                       range_tracking::moving_average);
  m.reduce_range = true;
  CHECK(xq::describe(m) == "8-bit asymmetric wide per-tensor torch_fake_quant moving_average(c 0.01) reduce_range");
  q.configure(m);
  CHECK(q.min().size() == 1);
  CHECK(q.min()(0) == inf);
  CHECK(q.config().reduce_range);
}
