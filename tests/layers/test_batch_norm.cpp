// batch_norm: training-mode statistics (output mean 0 / variance 1 per channel,
// the moving-statistics formula with the unbiased variance), inference with the
// moving statistics, gradients in both modes, folding accessors, errors, the
// same result on one thread as on two, and a relu absorbed into the backward.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <xquant/core/model.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/batch_norm.hpp>

#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {

// Per-channel mean and biased variance of a (rows, C) view, in double.
void channel_moments(const xq::tensor& x, std::vector<double>& mean, std::vector<double>& var) {
  const std::size_t C = x.shape().back(), rows = x.size() / C;
  mean.assign(C, 0.0);
  var.assign(C, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < C; ++c) mean[c] += x.data()[r * C + c];
  for (auto& m : mean) m /= double(rows);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < C; ++c) {
      const double d = x.data()[r * C + c] - mean[c];
      var[c] += d * d;
    }
  for (auto& v : var) v /= double(rows);
}

// A layer built on `channels` with non-trivial gamma, beta and moving statistics.
xq::batch_norm built_norm(std::size_t channels) {
  xq::batch_norm bn;
  bn.build(channels);
  bn.gamma()->value = uniform({channels}, 0.5f, 1.5f, 21);
  bn.beta()->value = uniform({channels}, -0.5f, 0.5f, 22);
  bn.moving_mean()->value = uniform({channels}, -0.3f, 0.3f, 23);
  bn.moving_variance()->value = uniform({channels}, 0.5f, 2.0f, 24);
  return bn;
}

}  // namespace

TEST_CASE("batch_norm builds Keras's parameters with Keras's defaults", "[layers][batch_norm]") {
  xq::batch_norm bn;
  CHECK(bn.momentum() == 0.99f);
  CHECK(bn.epsilon() == 1e-3f);
  bn(xq::var(xt::zeros<float>({2, 5, 5, 3})));
  CHECK((bn.gamma()->value == xt::ones<float>({3})));
  CHECK((bn.beta()->value == xt::zeros<float>({3})));
  CHECK((bn.moving_mean()->value == xt::zeros<float>({3})));
  CHECK((bn.moving_variance()->value == xt::ones<float>({3})));
  CHECK(bn.gamma()->trainable());
  CHECK(bn.beta()->trainable());
  CHECK_FALSE(bn.moving_mean()->trainable());
  CHECK_FALSE(bn.moving_variance()->trainable());
  CHECK(bn.moving_mean()->name() == "batch_normalization/moving_mean");
  CHECK(xq::trainable_parameters(bn).size() == 2);
  CHECK(xq::parameters(bn).size() == 4);
  bn.momentum(0.9f).epsilon(1e-5f);
  CHECK(bn.momentum() == 0.9f);
  CHECK(bn.epsilon() == 1e-5f);
  CHECK_THROWS_AS(bn.momentum(1.5f), xq::argument_error);
}

TEST_CASE("training mode normalizes with batch statistics and updates the moving ones",
          "[layers][batch_norm]") {
  const std::size_t C = 4;
  // Channel c: offset 3c, scale 1 + c (and one channel far from 0).
  xq::tensor x = uniform({8, 5, 5, C}, -1, 1, 31);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = i % C;
    x.data()[i] = x.data()[i] * float(1 + c) + float(3 * c) + (c == 3 ? 1000.0f : 0.0f);
  }
  std::vector<double> mean, var;
  channel_moments(x, mean, var);

  xq::batch_norm bn;
  bn.epsilon(1e-5f);
  xq::var y;
  {
    xq::training_mode on;
    y = bn(xq::var(x));
  }
  std::vector<double> y_mean, y_var;
  channel_moments(y.value(), y_mean, y_var);
  for (std::size_t c = 0; c < C; ++c) {
    INFO("channel " << c);
    CHECK(y_mean[c] == Approx(0.0).margin(1e-5));
    CHECK(y_var[c] == Approx(var[c] / (var[c] + 1e-5)).epsilon(1e-4));
    CHECK(y_var[c] == Approx(1.0).epsilon(1e-3));
  }
  // moving = moving * momentum + batch * (1 - momentum), with the unbiased variance.
  const double n = 8 * 5 * 5;
  for (std::size_t c = 0; c < C; ++c) {
    INFO("channel " << c);
    CHECK(bn.moving_mean()->value(c) == Approx(0.0 * 0.99 + mean[c] * 0.01).epsilon(1e-6));
    CHECK(bn.moving_variance()->value(c) == Approx(1.0 * 0.99 + var[c] * n / (n - 1) * 0.01).epsilon(1e-6));
  }
  // A second step from there.
  const float mm = bn.moving_mean()->value(1), mv = bn.moving_variance()->value(1);
  {
    xq::training_mode on;
    bn(xq::var(x));
  }
  CHECK(bn.moving_mean()->value(1) == Approx(mm * 0.99 + mean[1] * 0.01).epsilon(1e-6));
  CHECK(bn.moving_variance()->value(1) == Approx(mv * 0.99 + var[1] * n / (n - 1) * 0.01).epsilon(1e-6));
}

TEST_CASE("inference mode uses the moving statistics and changes nothing", "[layers][batch_norm]") {
  xq::batch_norm bn = built_norm(3);
  const xq::tensor x = uniform({4, 3}, -2, 2, 41);
  const xq::tensor mm = bn.moving_mean()->value, mv = bn.moving_variance()->value;
  const xq::tensor y = bn(xq::var(x)).value();
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t c = 0; c < 3; ++c) {
      const double expected =
          (x(r, c) - mm(c)) / std::sqrt(double(mv(c)) + 1e-3) * bn.gamma()->value(c) + bn.beta()->value(c);
      CHECK(y(r, c) == Approx(expected).epsilon(1e-5).margin(1e-6));
    }
  CHECK((bn.moving_mean()->value == mm));
  CHECK((bn.moving_variance()->value == mv));
  // What folding needs: y = x * a + b.
  const auto [a, b] = bn.inference_affine();
  for (std::size_t r = 0; r < 4; ++r)
    for (std::size_t c = 0; c < 3; ++c)
      CHECK(y(r, c) == Approx(x(r, c) * a(c) + b(c)).epsilon(1e-5).margin(1e-6));
}

TEST_CASE("batch_norm gradients match central differences in both modes", "[layers][batch_norm][gradients]") {
  SECTION("inference, NHWC") {
    xq::batch_norm bn = built_norm(4);
    xq::var x(uniform({2, 3, 3, 4}, -1, 1, 51), true);
    check_gradients([&] { return bn(x); }, {x.state(), bn.gamma(), bn.beta()}, {}, "bn inference NHWC");
    CHECK_FALSE(bn.moving_mean()->has_grad());
  }
  SECTION("inference, (N, C)") {
    xq::batch_norm bn = built_norm(5);
    xq::var x(uniform({6, 5}, -1, 1, 52), true);
    check_gradients([&] { return bn(x); }, {x.state(), bn.gamma(), bn.beta()}, {}, "bn inference NC");
  }
  SECTION("training, NHWC") {
    xq::batch_norm bn = built_norm(4);
    xq::var x(uniform({2, 3, 3, 4}, -1, 1, 53), true);
    // The moving statistics change on every evaluation; the training-mode output
    // does not depend on them.
    xq::training_mode on;
    check_gradients([&] { return bn(x); }, {x.state(), bn.gamma(), bn.beta()}, {}, "bn training NHWC");
  }
  SECTION("training, (N, C)") {
    xq::batch_norm bn = built_norm(5);
    xq::var x(uniform({6, 5}, -1, 1, 54), true);
    xq::training_mode on;
    check_gradients([&] { return bn(x); }, {x.state(), bn.gamma(), bn.beta()}, {}, "bn training NC");
  }
  SECTION("training, no center, no scale") {
    xq::batch_norm bn(false, false);
    xq::var x(uniform({5, 3}, -1, 1, 55), true);
    xq::training_mode on;
    check_gradients([&] { return bn(x); }, {x.state()}, {}, "bn training no affine");
    CHECK(bn.gamma() == nullptr);
    CHECK(bn.beta() == nullptr);
    CHECK(xq::parameters(bn).size() == 2);
  }
}

TEST_CASE("training-mode dx sums to zero per channel (the mean's gradient)", "[layers][batch_norm]") {
  xq::batch_norm bn = built_norm(3);
  xq::var x(uniform({7, 3}, -1, 1, 61), true);
  xq::training_mode on;
  xq::tape t;
  t.backward(bn(x), uniform({7, 3}, -1, 1, 62));
  for (std::size_t c = 0; c < 3; ++c) {
    double s = 0;
    for (std::size_t r = 0; r < 7; ++r) s += x.grad()(r, c);
    CHECK(s == Approx(0.0).margin(1e-5));
  }
}

TEST_CASE("batch_norm rejects a wrong channel count naming its path", "[layers][batch_norm][errors]") {
  xq::batch_norm bn;
  bn.name("block_1/norm");
  bn(xq::var(xt::zeros<float>({2, 3, 3, 4})));
  try {
    bn(xq::var(xt::zeros<float>({2, 3, 3, 5})));
    FAIL("no exception");
  } catch (const xq::shape_error& e) {
    CHECK(std::string(e.what()) == "block_1/norm: expected input of shape (N, H, W, 4), given (2, 3, 3, 5)");
  }
  try {
    bn(xq::var(xt::zeros<float>({2, 5})));
    FAIL("no exception");
  } catch (const xq::shape_error& e) {
    CHECK(std::string(e.what()) == "block_1/norm: expected input of shape (N, 4), given (2, 5)");
  }
  try {
    bn(xq::var(xt::zeros<float>({4})));
    FAIL("no exception");
  } catch (const xq::shape_error& e) {
    CHECK(std::string(e.what()) ==
          "block_1/norm: expected input of rank 2 or more with channels last, (N, C) or (N, H, W, C), given "
          "(4,)");
  }
}

TEST_CASE("a large batch gives the same bits on one thread and on two", "[layers][batch_norm]") {
  const xq::tensor x = uniform({16, 28, 28, 32}, -2, 3, 71);  // 401408 values: above the threading threshold
  const xq::tensor dy = uniform(x.shape(), -1, 1, 72);
  auto run = [&](int threads, xq::tensor& y, xq::tensor& dx, xq::tensor& dgamma, xq::tensor& mv) {
#if defined(_OPENMP)
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    xq::batch_norm bn;
    bn.build(32);
    xq::var xv(x, true);
    {
      xq::training_mode on;
      xq::tape t;
      xq::var out = bn(xv);
      t.backward(out, dy);
      y = out.value();
    }
    dx = xv.grad();
    dgamma = bn.gamma()->grad;
    mv = bn.moving_variance()->value;
#if defined(_OPENMP)
    omp_set_num_threads(saved);
#endif
  };
  xq::tensor y1, dx1, g1, mv1, y2, dx2, g2, mv2;
  run(1, y1, dx1, g1, mv1);
  run(2, y2, dx2, g2, mv2);
  CHECK((y1 == y2));
  CHECK((dx1 == dx2));
  CHECK((g1 == g2));
  CHECK((mv1 == mv2));
  std::vector<double> m, v;
  channel_moments(y1, m, v);
  for (std::size_t c = 0; c < 32; ++c) CHECK(m[c] == Approx(0.0).margin(1e-5));
}

namespace {

bool same_bits(const xq::tensor& a, const xq::tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("relu of a batch norm's output is absorbed into its backward, bit for bit", "[layers][batch_norm][fusion]") {
  // Shapes with C a multiple of the vector width and not; both modes; x wide enough
  // that many outputs sit on either side of 0.
  const std::vector<xq::tensor::shape_type> shapes = {{4, 5, 5, 8}, {6, 7}, {3, 9, 9, 32}};
  for (const bool training : {true, false})
    for (const auto& shape : shapes) {
      const std::size_t C = shape.back();
      const xq::tensor x = uniform(shape, -2.0f, 2.0f, 81);
      const xq::tensor dy = uniform(shape, -1.0f, 1.0f, 82);
      struct result {
        xq::tensor y, dx, dgamma, dbeta, moving_mean;
        std::size_t steps = 0;
      };
      auto run = [&](bool absorbed) {
        xq::batch_norm bn = built_norm(C);
        const xq::training_mode mode(training);
        xq::var xv(x, true);
        xq::tape t;
        xq::var out;
        if (absorbed) {
          out = xq::ops::relu(bn(xv));  // an rvalue only the norm's backward step also holds
        } else {
          const xq::var h = bn(xv);  // a named output: relu copies it
          out = xq::ops::relu(h);
        }
        result r;
        r.steps = t.size();
        r.y = out.value();
        t.backward(out, dy);
        r.dx = xv.grad();
        r.dgamma = bn.gamma()->grad;
        r.dbeta = bn.beta()->grad;
        r.moving_mean = bn.moving_mean()->value;
        return r;
      };
      const result fused = run(true), copied = run(false);
      INFO((training ? "training " : "inference ") << xq::detail::shape_string(shape));
      CHECK(fused.steps + 1 == copied.steps);  // relu recorded no step of its own
      CHECK(same_bits(fused.y, copied.y));
      CHECK(same_bits(fused.dx, copied.dx));
      CHECK(same_bits(fused.dgamma, copied.dgamma));
      CHECK(same_bits(fused.dbeta, copied.dbeta));
      CHECK(same_bits(fused.moving_mean, copied.moving_mean));
      std::size_t zeros = 0;
      for (float v : fused.y) zeros += v == 0.0f;
      CHECK(zeros > 0);  // the mask did something
      CHECK(zeros < fused.y.size());
    }
}

TEST_CASE("relu of a value someone still holds copies it, without a tape it runs in place", "[layers][batch_norm][fusion]") {
  xq::batch_norm bn = built_norm(4);
  const xq::tensor x = uniform({3, 4}, -2.0f, 2.0f, 83);
  const xq::training_mode on;
  SECTION("held elsewhere: the holder's value is untouched") {
    xq::var xv(x, true);
    xq::tape t;
    xq::var h = bn(xv);
    const xq::var keep = h;
    const xq::tensor before = keep.value();
    const xq::var r = xq::ops::relu(std::move(h));
    CHECK(same_bits(keep.value(), before));
    CHECK(r.state() != keep.state());
    CHECK(t.size() == 2);  // the norm's step and relu's
  }
  SECTION("no tape: the same values, computed in the norm's buffer") {
    const xq::var ref = bn(xq::var(x));
    const xq::tensor expected = xq::ops::relu(ref).value();
    xq::var h = bn(xq::var(x));
    const float* buffer = h.value().data();
    const xq::var r = xq::ops::relu(std::move(h));
    CHECK(r.value().data() == buffer);
    CHECK(same_bits(r.value(), expected));
  }
}
