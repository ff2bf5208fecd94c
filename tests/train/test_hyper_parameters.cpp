// Issue 34, item 2: a NaN or infinite hyper-parameter, or a schedule that returns one (or a
// negative rate), is refused with an error naming the optimizer, the option, the valid
// range and the value (and the step, for a schedule), before any weight moves. Checks
// written `lr < 0` let NaN through, and schedules were never checked.
#include <catch2/catch.hpp>

#include <cstddef>
#include <limits>
#include <string>
#include <utility>

#include <xquant/core/parameter.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/bop.hpp>
#include <xquant/train/case_optimizer.hpp>
#include <xquant/train/schedule.hpp>
#include <xquant/train/sgd.hpp>

namespace {

constexpr double nan_d = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_d = std::numeric_limits<double>::infinity();
constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
constexpr float inf_f = std::numeric_limits<float>::infinity();

xq::parameter_ptr weights() {
  xq::tensor t = xq::tensor::from_shape({3});
  t(0) = 1.0f;
  t(1) = -2.0f;
  t(2) = 0.5f;
  return xq::make_parameter("w", std::move(t));
}

void give_grad(const xq::parameter_ptr& p) {
  xq::tensor g = xq::tensor::from_shape({3});
  g(0) = 0.25f;
  g(1) = -0.5f;
  g(2) = 1.0f;
  p->zero_grad();
  p->accumulate_grad(std::move(g));
}

// The construction throws argument_error whose message holds every piece.
template <class Make>
void refused(Make&& make, std::initializer_list<std::string> pieces) {
  try {
    make();
    FAIL("no error");
  } catch (const xq::argument_error& e) {
    const std::string what = e.what();
    INFO(what);
    for (const auto& piece : pieces) CHECK(what.find(piece) != std::string::npos);
  }
}

// Steps `opt` three times (the schedule goes bad at step 2): the third step throws,
// naming the step, and leaves the weights as the second step made them.
template <class Optimizer>
void schedule_refused_at_step_2(Optimizer& opt, const xq::parameter_ptr& p, const std::string& where,
                                const std::string& option) {
  give_grad(p);
  opt.step();
  opt.step();
  const xq::tensor before = p->value;
  try {
    opt.step();
    FAIL("no error");
  } catch (const xq::argument_error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find(where) != std::string::npos);
    CHECK(what.find(option) != std::string::npos);
    CHECK(what.find("at step 2") != std::string::npos);
  }
  const bool unchanged = p->value == before;
  CHECK(unchanged);
  CHECK(opt.iterations() == 2);
}

}  // namespace

TEST_CASE("sgd refuses a non-finite or out-of-range hyper-parameter, naming it", "[train][optimizers][issue34]") {
  auto p = weights();
  refused([&] { xq::sgd({p}, {nan_f}); }, {"xq::sgd", "learning_rate", "finite and >= 0", "nan"});
  refused([&] { xq::sgd({p}, {inf_f}); }, {"xq::sgd", "learning_rate", "inf"});
  refused([&] { xq::sgd({p}, {0.1f, nan_d}); }, {"xq::sgd", "momentum", "nan"});
  refused([&] { xq::sgd({p}, {0.1f, inf_d}); }, {"xq::sgd", "momentum", "inf"});
  refused([&] { xq::sgd({p}, {0.1f, 0.9, false, nan_d}); }, {"xq::sgd", "weight_decay", "nan"});
  refused([&] { xq::sgd({p}, {0.1f, 0.9, false, inf_d}); }, {"xq::sgd", "weight_decay", "inf"});
  refused([&] { xq::sgd({p}, {0.1f, 0.9, false, 0.0, nan_d}); }, {"xq::sgd", "dampening", "in [0, 1]", "nan"});
  refused([&] { xq::sgd({p}, {0.1f, 0.9, false, 0.0, -0.5}); }, {"xq::sgd", "dampening", "-0.5"});
  CHECK_NOTHROW(xq::sgd({p}, {0.1f, 0.9, false, 1e-4, 0.25}));
}

TEST_CASE("adam and adamw refuse a non-finite hyper-parameter, naming it", "[train][optimizers][issue34]") {
  auto p = weights();
  refused([&] { xq::adam({p}, {nan_f}); }, {"xq::adam", "learning_rate", "finite and >= 0", "nan"});
  refused([&] { xq::adam({p}, {inf_f}); }, {"xq::adam", "learning_rate", "inf"});
  refused([&] { xq::adam({p}, {1e-3f, 0.9, 0.999, inf_d}); }, {"xq::adam", "epsilon", "inf"});
  refused([&] { xq::adam({p}, {1e-3f, 0.9, 0.999, 1e-8, inf_d}); }, {"xq::adam", "weight_decay", "inf"});
  refused([&] { xq::adamw({p}, {nan_f}); }, {"xq::adamw", "learning_rate", "nan"});
  refused([&] { xq::adamw({p}, {1e-3f, 0.9, 0.999, 1e-8, nan_d}); }, {"xq::adamw", "weight_decay", "nan"});
}

TEST_CASE("bop refuses an infinite threshold", "[train][bop][issue34]") {
  auto p = weights();
  refused([&] { xq::bop({p}, {inf_f, 1e-4f}); }, {"xq::bop", "threshold", "inf"});
  refused([&] { xq::bop({p}, {1e-8f, inf_f}); }, {"xq::bop", "gamma", "in [0, 1]", "inf"});
}

TEST_CASE("a schedule's value is checked at each step: NaN, infinite or negative is refused, naming the step",
          "[train][schedule][issue34]") {
  const auto bad_at_2 = [](float bad) {
    return [bad](std::size_t step) { return step < 2 ? 0.01f : bad; };
  };
  SECTION("sgd, NaN") {
    auto p = weights();
    xq::sgd opt({p}, {bad_at_2(nan_f), 0.9});
    schedule_refused_at_step_2(opt, p, "xq::sgd", "learning_rate");
  }
  SECTION("sgd, negative") {
    auto p = weights();
    xq::sgd opt({p}, {bad_at_2(-0.01f)});
    schedule_refused_at_step_2(opt, p, "xq::sgd", "learning_rate");
  }
  SECTION("adam, infinite") {
    auto p = weights();
    xq::adam opt({p}, {bad_at_2(inf_f)});
    schedule_refused_at_step_2(opt, p, "xq::adam", "learning_rate");
  }
  SECTION("adamw, NaN") {
    auto p = weights();
    xq::adamw opt({p}, {bad_at_2(nan_f)});
    schedule_refused_at_step_2(opt, p, "xq::adamw", "learning_rate");
  }
  SECTION("a library schedule with a NaN parameter") {
    auto p = weights();
    xq::sgd opt({p}, {xq::linear_warmup(2, xq::step_decay{nan_f, 10, 0.5f}, 0.01f)});
    give_grad(p);
    CHECK_THROWS_WITH(opt.step(), Catch::Contains("at step 0"));  // the warmup heads for step_decay(0): NaN
  }
  SECTION("bop's gamma and threshold") {
    auto p = weights();
    xq::bop gamma_opt({p}, {1e-8f, bad_at_2(1.5f)});
    schedule_refused_at_step_2(gamma_opt, p, "xq::bop", "gamma");
    auto q = weights();
    xq::bop threshold_opt({q}, {bad_at_2(nan_f), 1e-4f});
    schedule_refused_at_step_2(threshold_opt, q, "xq::bop", "threshold");
  }
  SECTION("a case_optimizer's member") {
    auto p = weights();
    auto q = weights();
    xq::case_optimizer opt(xq::bop({p}), xq::sgd({q}, {bad_at_2(nan_f)}));
    give_grad(p);
    give_grad(q);
    opt.step();
    opt.step();
    CHECK_THROWS_WITH(opt.step(), Catch::Contains("xq::sgd") && Catch::Contains("at step 2"));
  }
}
