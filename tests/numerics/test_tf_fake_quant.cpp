// TF fake_quant_with_min_max_{args,vars,vars_per_channel}: the vectors of
// docs/semantics.md §1 (from TF's own tests) and the golden vectors TF produced.

#include <catch2/catch.hpp>

#include <xquant/numerics/tf_fake_quant.hpp>

#include "../golden.hpp"

using xq::tensor;
namespace tf = xq::tf;

namespace {
struct nudge_case {
  float min, max;
  int bits;
  bool narrow;
  float nudged_min, nudged_max, step;
};
// tensorflow/compiler/tests/fake_quant_ops_test.py
const nudge_case nudge_cases[] = {
    {0.0f, 255.0f, 8, false, 0.0f, 255.0f, 1.0f},     {0.5f, 128.0f, 8, false, 0.0f, 127.5f, 0.5f},
    {-128.0f, -0.5f, 8, false, -127.5f, 0.0f, 0.5f},  {-0.1f, 127.4f, 8, false, 0.0f, 127.5f, 0.5f},
    {0.0f, 254.0f, 8, true, 0.0f, 254.0f, 1.0f},      {0.1f, 127.1f, 8, true, 0.0f, 127.0f, 0.5f},
    {-127.1f, -0.1f, 8, true, -127.0f, 0.0f, 0.5f},   {-0.1f, 126.9f, 8, true, 0.0f, 127.0f, 0.5f},
    {0.5f, 64.0f, 7, false, 0.0f, 63.5f, 0.5f},       {-0.1f, 63.4f, 7, false, 0.0f, 63.5f, 0.5f},
    {0.1f, 63.1f, 7, true, 0.0f, 63.0f, 0.5f},        {-63.1f, -0.1f, 7, true, -63.0f, 0.0f, 0.5f},
};
}  // namespace

TEST_CASE("tf fake_quant: nudging, forward and gradients match TF's own tests", "[tf][fake_quant]") {
  for (const auto& c : nudge_cases) {
    CAPTURE(c.min, c.max, c.bits, c.narrow);
    const auto r = tf::nudge(c.min, c.max, tf::fake_quant_grid(c.bits, c.narrow, "test"));
    CHECK(r.min == Approx(c.nudged_min).margin(1e-6));
    CHECK(r.max == Approx(c.nudged_max).margin(1e-4));
    CHECK(r.scale == Approx(c.step));
    const float lo = c.nudged_min, hi = c.nudged_max, st = c.step;
    const tensor x = {lo - st, lo - 0.01f, lo, lo + 0.01f, lo + st - 0.01f, lo + st,
                      lo + st + 0.01f, hi - 0.01f, hi, hi + 0.01f, hi + st};
    const tensor want = {lo, lo, lo, lo, lo + st, lo + st, lo + st, hi, hi, hi, hi};
    CHECK(xt::allclose(tf::fake_quant_with_min_max_vars(x, c.min, c.max, c.bits, c.narrow), want,
                       1e-5, 1e-3));
    CHECK(xt::allclose(tf::fake_quant_with_min_max_args(x, c.min, c.max, c.bits, c.narrow), want,
                       1e-5, 1e-3));
    const tensor dy = xt::arange<float>(1.0f, 12.0f);
    const auto g = tf::fake_quant_with_min_max_vars_gradient(dy, x, c.min, c.max, c.bits, c.narrow);
    CHECK((g.dx == tensor{0, 0, 3, 4, 5, 6, 7, 8, 9, 0, 0}));
    CHECK(g.dmin == 3.0f);
    CHECK(g.dmax == 21.0f);
  }
}

TEST_CASE("tf fake_quant per channel: TF's per-channel vector", "[tf][fake_quant]") {
  const xq::vector mins = {0.0f, 0.5f, -128.0f, -0.1f}, maxs = {255.0f, 128.0f, -0.5f, 127.4f};
  const xq::vector lo = {0.0f, 0.0f, -127.5f, 0.0f}, hi = {255.0f, 127.5f, 0.0f, 127.5f},
                   st = {1.0f, 0.5f, 0.5f, 0.5f};
  tensor x = xt::empty<float>({3, 4}), want = xt::empty<float>({3, 4});
  for (std::size_t c = 0; c < 4; ++c) {
    x(0, c) = lo(c) - st(c);  // below: clamps to lo
    x(1, c) = lo(c) + st(c) * 0.5f;  // a tie: rounds up
    x(2, c) = hi(c) + 0.01f;
    want(0, c) = lo(c);
    want(1, c) = lo(c) + st(c);
    want(2, c) = hi(c);
  }
  CHECK(xt::allclose(tf::fake_quant_with_min_max_vars_per_channel(x, mins, maxs), want));
}

TEST_CASE("tf fake_quant_with_min_max_args: the op doc example (16 bits)", "[tf][fake_quant]") {
  const tensor y = tf::fake_quant_with_min_max_args(tensor{10.03f, -10.23f, 3.0f}, -5.0f, 5.0f, 16);
  CHECK(y(0) == 4.9999237f);
  CHECK(y(1) == -5.0000763f);
  CHECK(y(2) == 3.0000763f);
}

TEST_CASE("tf fake_quant: min = max = 0 gives zeros and passes the gradient", "[tf][fake_quant]") {
  const tensor x = {-1.0f, 0.0f, 2.5f}, dy = {-1.0f, 2.0f, 3.0f};
  CHECK((tf::fake_quant_with_min_max_vars(x, 0.0f, 0.0f) == tensor{0, 0, 0}));
  const auto g = tf::fake_quant_with_min_max_vars_gradient(dy, x, 0.0f, 0.0f);
  CHECK((g.dx == dy));
  CHECK(g.dmin == 0.0f);
  CHECK(g.dmax == 0.0f);
  const tensor x2 = {-1.0f, 3.0f, 0.5f, 0.2f};  // shape (2, 2): channel 1 degenerate
  tensor xs = xt::reshape_view(x2, {2, 2});
  const auto y = tf::fake_quant_with_min_max_vars_per_channel(xs, xq::vector{-1.0f, 0.0f},
                                                              xq::vector{1.0f, 0.0f});
  CHECK(y(0, 1) == 0.0f);
  CHECK(y(1, 1) == 0.0f);

  // 40 channels (two SIMD batches and a tail), channel 21 degenerate: the walkers take the
  // kernel with the per-element min = max = 0 test for the whole tensor, and only then.
  const std::size_t C = 40;
  xq::vector mins = xt::full_like(xq::vector::from_shape({C}), -2.0f), maxs = xt::full_like(mins, 3.0f);
  mins(21) = maxs(21) = 0.0f;
  tensor wide = tensor::from_shape({5, C});
  for (std::size_t i = 0; i < wide.size(); ++i) wide.data()[i] = 0.37f * float(i % 17) - 2.5f;
  const auto yw = tf::fake_quant_with_min_max_vars_per_channel(wide, mins, maxs);
  const auto gw = tf::fake_quant_with_min_max_vars_per_channel_gradient(wide, wide, mins, maxs);
  const auto one = tf::fake_quant_with_min_max_vars(wide, -2.0f, 3.0f);
  const auto one_dx = tf::fake_quant_with_min_max_vars_gradient(wide, wide, -2.0f, 3.0f).dx;
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t c = 0; c < C; ++c) {
      INFO("row " << r << ", channel " << c);
      CHECK(yw(r, c) == (c == 21 ? 0.0f : one(r, c)));
      CHECK(gw.dx(r, c) == (c == 21 ? wide(r, c) : one_dx(r, c)));
    }
}

TEST_CASE("tf fake_quant: bad input is rejected with a clear message", "[tf][fake_quant][errors]") {
  const tensor x = {0.0f};
  CHECK_THROWS_WITH(tf::fake_quant_with_min_max_vars(x, -1.0f, 1.0f, 17),
                    "tf.fake_quant_with_min_max_vars: expected num_bits in [2, 16], given num_bits = 17");
  CHECK_THROWS_AS(tf::fake_quant_with_min_max_vars(x, -1.0f, 1.0f, 1), xq::argument_error);
  CHECK_THROWS_WITH(tf::fake_quant_with_min_max_vars(x, 1.0f, -1.0f),
                    Catch::Contains("expected min <= max") && Catch::Contains("min = 1, max = -1"));
  CHECK_THROWS_WITH(tf::fake_quant_with_min_max_vars(x, 2.0f, 2.0f), Catch::Contains("min = max = 2"));
  CHECK_THROWS_WITH(tf::fake_quant_with_min_max_vars(x, -INFINITY, 1.0f), Catch::Contains("finite"));
  CHECK_THROWS_WITH(tf::fake_quant_with_min_max_args(x, 0.0f, 0.0f), Catch::Contains("min < max"));
  CHECK_THROWS_WITH(
      tf::fake_quant_with_min_max_vars_per_channel(xt::zeros<float>({2, 3}), xq::vector{-1.0f, -1.0f},
                                                   xq::vector{1.0f, 1.0f}),
      Catch::Contains("min and max of length 3 (the last dimension)") && Catch::Contains("lengths 2 and 2"));
  CHECK_THROWS_WITH(tf::fake_quant_with_min_max_vars_gradient(tensor{1.0f, 2.0f}, x, -1.0f, 1.0f),
                    Catch::Contains("a gradient of shape (1,)") && Catch::Contains("given (2,)"));
}

TEST_CASE("tf fake_quant: golden vectors from TensorFlow, bit for bit", "[tf][fake_quant][golden]") {
  const auto data = golden::load("tf_fake_quant");
  std::size_t checked = 0;
  for (const auto& c : data.at("cases")) {
    const std::string op = c.at("op");
    const auto& a = c.at("attrs");
    const auto& t = c.at("tensors");
    const int bits = a.at("num_bits");
    const bool narrow = a.at("narrow_range");
    INFO(op << " / " << c.at("name").get<std::string>());
    const tensor x = golden::tensor(t.at("x")), dy = golden::tensor(t.at("dy"));
    if (op == "tf.fake_quant_with_min_max_args") {
      const float mn = golden::scalar(t.at("min")), mx = golden::scalar(t.at("max"));
      CHECK(golden::bit_difference(tf::fake_quant_with_min_max_args(x, mn, mx, bits, narrow),
                                   golden::tensor(t.at("y"))) == "");
      CHECK(golden::bit_difference(
                tf::fake_quant_with_min_max_args_gradient(dy, x, mn, mx, bits, narrow),
                golden::tensor(t.at("dx"))) == "");
    } else if (op == "tf.fake_quant_with_min_max_vars") {
      const float mn = golden::scalar(t.at("min")), mx = golden::scalar(t.at("max"));
      if ((mn == mx && mn != 0.0f) || mn > mx || !std::isfinite(mn) || !std::isfinite(mx)) {
        // TF returns NaN or garbage for these ranges; xquant refuses them.
        CHECK_THROWS_AS(tf::fake_quant_with_min_max_vars(x, mn, mx, bits, narrow), xq::argument_error);
        ++checked;
        continue;
      }
      const tensor want_y = golden::tensor(t.at("y"));
      CHECK(golden::bit_difference(tf::fake_quant_with_min_max_vars(x, mn, mx, bits, narrow), want_y) == "");
      const auto r = tf::fake_quant_with_min_max_vars_and_mask(x, mn, mx, bits, narrow);
      CHECK(golden::bit_difference(r.y, want_y) == "");
      const auto g = tf::fake_quant_with_min_max_vars_gradient(dy, x, mn, mx, bits, narrow);
      CHECK(golden::bit_difference(g.dx, golden::tensor(t.at("dx"))) == "");
      // d_min and d_max are summed in TF's order (tf_cpu_reductions.hpp): bit for bit too.
      CHECK(golden::to_bits(g.dmin) == golden::to_bits(golden::scalar(t.at("dmin"))));
      CHECK(golden::to_bits(g.dmax) == golden::to_bits(golden::scalar(t.at("dmax"))));
    } else if (op == "tf.fake_quant_with_min_max_vars_per_channel") {
      const xq::vector mn = golden::vector(t.at("min")), mx = golden::vector(t.at("max"));
      if (xt::any((xt::equal(mn, mx) && xt::not_equal(mn, 0.0f)) || xt::greater(mn, mx) ||
                  !xt::isfinite(mn) || !xt::isfinite(mx))) {
        CHECK_THROWS_AS(tf::fake_quant_with_min_max_vars_per_channel(x, mn, mx, bits, narrow),
                        xq::argument_error);
        ++checked;
        continue;
      }
      const tensor want_y = golden::tensor(t.at("y"));
      CHECK(golden::bit_difference(tf::fake_quant_with_min_max_vars_per_channel(x, mn, mx, bits, narrow),
                                   want_y) == "");
      CHECK(golden::bit_difference(
                tf::fake_quant_with_min_max_vars_per_channel_and_mask(x, mn, mx, bits, narrow).y,
                want_y) == "");
      const auto g = tf::fake_quant_with_min_max_vars_per_channel_gradient(dy, x, mn, mx, bits, narrow);
      CHECK(golden::bit_difference(g.dx, golden::tensor(t.at("dx"))) == "");
      CHECK(golden::bit_difference(g.dmin, golden::vector(t.at("dmin"))) == "");
      CHECK(golden::bit_difference(g.dmax, golden::vector(t.at("dmax"))) == "");
    } else {
      FAIL("unknown op " << op);
    }
    ++checked;
  }
  CHECK(checked > 100);
}
