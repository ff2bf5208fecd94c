// Issue 14, finding 1: a NaN or an infinity never reaches the weights. Optimizers refuse
// non-finite gradients before touching anything (the error names the parameter); `fit`
// stops on a non-finite loss (Keras's TerminateOnNaN) and, on a step that throws, puts the
// model back as it was before that step (batch-norm moving statistics included).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/bop.hpp>
#include <xquant/train/case_optimizer.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/sgd.hpp>
#include <xquant/core/random.hpp>

#include "../gradient_check.hpp"
#include "../test_support.hpp"

using xq::testing::same_bits;
using xq::testing::uniform;

namespace {

constexpr float not_a_number = std::numeric_limits<float>::quiet_NaN();
constexpr float infinity = std::numeric_limits<float>::infinity();

std::vector<xq::tensor> values(const std::vector<xq::parameter_ptr>& ps) {
  std::vector<xq::tensor> out;
  for (const auto& p : ps) out.push_back(p->value);
  return out;
}

// Gives every parameter a finite gradient, then puts `bad` at element 1 of the last one.
void set_gradients(const std::vector<xq::parameter_ptr>& ps, float bad) {
  for (const auto& p : ps) {
    p->zero_grad();
    p->accumulate_grad(uniform(p->value.shape(), -1, 1, 7));
  }
  ps.back()->grad.data()[1] = bad;
}

using net = xq::sequential<xq::dense, xq::batch_norm, xq::relu, xq::dense>;

net make_net() {
  xq::set_seed(11);
  net m(xq::dense(6), xq::batch_norm(), xq::relu(), xq::dense(3));
  xq::build(m, {1, 4});
  return m;
}

// 24 samples of 4 features, 3 classes; sample `bad_row` (if any) holds `bad`.
xq::dataset data(std::size_t bad_row = 1000, float bad = not_a_number) {
  xq::dataset d{uniform({24, 4}, -1, 1, 3), xq::tensor::from_shape({24})};
  for (std::size_t i = 0; i < 24; ++i) d.targets(i) = static_cast<float>(i % 3);
  if (bad_row < 24) d.inputs(bad_row, 2) = bad;
  return d;
}

xq::fit_options in_order(std::size_t max_steps = 0) {
  xq::fit_options o;
  o.epochs = 1;
  o.batch_size = 8;
  o.shuffle = false;
  o.verbose = false;
  o.max_steps_per_epoch = max_steps;
  return o;
}

}  // namespace

TEST_CASE("optimizers refuse a non-finite gradient before touching anything", "[train][optimizers][errors]") {
  for (const float bad : {not_a_number, infinity, -infinity}) {
    auto m = make_net();
    const auto ps = xq::trainable_parameters(m);
    const std::string last = ps.back()->name();
    INFO("bad gradient " << bad << " in " << last);
    SECTION("adam (and its moments)") {
      xq::adam opt(ps);
      set_gradients(ps, 0.5f);
      opt.step();  // a good step first: state exists
      const auto before = values(ps);
      const xq::tensor m0 = opt.state()[0].exp_avg, v0 = opt.state()[0].exp_avg_sq;
      set_gradients(ps, bad);
      CHECK_THROWS_WITH(opt.step(), Catch::Contains("xq::adam") && Catch::Contains("'" + last + "'") &&
                                        Catch::Contains("gradient element 1"));
      CHECK(same_bits(values(ps), before));
      CHECK(bool(opt.state()[0].exp_avg == m0));  // the first parameter, stepped before the bad one in the loop
      CHECK(bool(opt.state()[0].exp_avg_sq == v0));
      CHECK(opt.state()[0].step == 1);
      CHECK(opt.iterations() == 1);
    }
    SECTION("sgd with momentum") {
      xq::sgd opt(ps, {0.1f, 0.9});
      set_gradients(ps, bad);
      const auto before = values(ps);
      CHECK_THROWS_WITH(opt.step(), Catch::Contains("xq::sgd") && Catch::Contains("'" + last + "'"));
      CHECK(same_bits(values(ps), before));
      CHECK_FALSE(opt.state()[0].has_momentum_buffer);
    }
    SECTION("bop") {
      xq::bop opt(ps);
      set_gradients(ps, bad);
      const auto before = values(ps);
      CHECK_THROWS_WITH(opt.step(), Catch::Contains("xq::bop") && Catch::Contains("'" + last + "'"));
      CHECK(same_bits(values(ps), before));
    }
    SECTION("case_optimizer: the member before the bad one does not step either") {
      const std::vector<xq::parameter_ptr> first(ps.begin(), ps.begin() + 2), rest(ps.begin() + 2, ps.end());
      xq::case_optimizer<xq::sgd, xq::adam> opt{xq::sgd(first), xq::adam(rest)};
      set_gradients(ps, bad);
      const auto before = values(ps);
      CHECK_THROWS_WITH(opt.step(), Catch::Contains("xq::case_optimizer") && Catch::Contains("'" + last + "'"));
      CHECK(same_bits(values(ps), before));
      CHECK(opt.get<1>().iterations() == 0);
    }
  }
}

TEST_CASE("an optimizer over no parameters is an error, as in PyTorch", "[train][optimizers][errors]") {
  CHECK_THROWS_WITH(xq::adam({}), Catch::Contains("xq::adam") && Catch::Contains("an empty parameter list"));
  CHECK_THROWS_WITH(xq::adamw({}), Catch::Contains("xq::adamw") && Catch::Contains("an empty parameter list"));
  CHECK_THROWS_WITH(xq::sgd({}), Catch::Contains("xq::sgd"));
  CHECK_THROWS_WITH(xq::bop({}), Catch::Contains("xq::bop"));
}

TEST_CASE("fit stops on a NaN loss with the model as it was before that step", "[train][fit][errors]") {
  // The NaN sample is in the second batch: the run must end exactly as a run of one step.
  auto a = make_net();
  auto b = make_net();
  REQUIRE(same_bits(values(xq::parameters(a)), values(xq::parameters(b))));
  xq::adam opt_a(xq::trainable_parameters(a)), opt_b(xq::trainable_parameters(b));
  const auto h = xq::fit(a, opt_a, xq::sparse_softmax_cross_entropy, data(10), in_order());
  REQUIRE(h.non_finite_loss);
  CHECK(h.non_finite_loss->epoch == 1);
  CHECK(h.non_finite_loss->step == 2);
  CHECK(std::isnan(h.non_finite_loss->loss));
  REQUIRE(h.size() == 1);
  CHECK(h.last().steps == 1);
  CHECK(std::isfinite(h.last().loss));
  CHECK_FALSE(h.stopped_early);

  xq::fit(b, opt_b, xq::sparse_softmax_cross_entropy, data(), in_order(1));
  // Weights, biases and the batch norm's moving statistics (which the NaN batch's
  // forward had moved) are those of the one good step; so is Adam's state.
  CHECK(same_bits(values(xq::parameters(a)), values(xq::parameters(b))));
  CHECK(opt_a.iterations() == 1);
  CHECK(bool(opt_a.state()[0].exp_avg == opt_b.state()[0].exp_avg));
  for (const auto& p : xq::parameters(a)) {
    INFO(p->name());
    CHECK(std::all_of(p->value.begin(), p->value.end(), [](float v) { return std::isfinite(v); }));
  }
}

TEST_CASE("fit stops on an infinite loss and says so in its output", "[train][fit][errors]") {
  auto m = make_net();
  xq::sgd opt(xq::trainable_parameters(m));
  const auto before = values(xq::parameters(m));
  // A loss that is infinite on the first batch: nothing at all is applied.
  auto infinite = [](const xq::var& out, const xq::var& t) {
    xq::var l = xq::sparse_softmax_cross_entropy(out, t);
    l.value().data()[0] = infinity;
    return l;
  };
  std::ostringstream shown;
  auto o = in_order();
  o.verbose = true;
  o.progress.stream = &shown;
  o.progress.style = xq::progress_style::plain;
  const auto h = xq::fit(m, opt, infinite, data(), o);
  REQUIRE(h.non_finite_loss);
  CHECK(h.non_finite_loss->step == 1);
  CHECK(h.non_finite_loss->loss == infinity);
  CHECK(h.last().steps == 0);
  CHECK(same_bits(values(xq::parameters(m)), before));
  CHECK_THAT(shown.str(), Catch::Contains("stopped: the loss of epoch 1 step 1 was inf"));
}

TEST_CASE("a step that throws leaves the model as it was before it", "[train][fit][errors]") {
  // The loss is finite but its gradient is not: the optimizer refuses it, and fit puts
  // back the moving statistics that the step's forward had moved.
  auto m = make_net();
  xq::adam opt(xq::trainable_parameters(m));
  xq::fit(m, opt, xq::sparse_softmax_cross_entropy, data(), in_order(1));  // one good step
  const auto before = values(xq::parameters(m));
  const auto adam_before = opt.state()[0].exp_avg;
  auto nan_gradient = [](const xq::var& out, const xq::var& t) {
    xq::var l = xq::sparse_softmax_cross_entropy(out, t);
    return xq::make_result(l.value(), xq::needs_grad(l), [l](const xq::tensor& g) {
      xq::tensor bad = g;
      bad.fill(not_a_number);
      xq::add_grad(l, std::move(bad));
    });
  };
  CHECK_THROWS_WITH(xq::fit(m, opt, nan_gradient, data(), in_order()),
                    Catch::Contains("xq::adam") && Catch::Contains("finite gradients"));
  CHECK(same_bits(values(xq::parameters(m)), before));
  CHECK(bool(opt.state()[0].exp_avg == adam_before));
  CHECK(opt.iterations() == 1);
  for (const auto& p : xq::trainable_parameters(m)) CHECK_FALSE(p->has_grad());
}
