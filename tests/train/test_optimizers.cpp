// Optimizers and learning-rate schedules: PyTorch's update formulas written out in
// double and compared with a few steps of xq::sgd / xq::adam / xq::adamw; golden
// values from PyTorch itself (tools/gen_golden_optimizers.py); parameters without
// a gradient; shared parameters stepped once.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/schedule.hpp>
#include <xquant/train/sgd.hpp>
#include <xquant/core/random.hpp>

#include "../golden.hpp"

namespace {

using dvec = std::vector<double>;

dvec to_double(const xq::tensor& t) { return dvec(t.begin(), t.end()); }

void set_grad(const xq::parameter_ptr& p, const dvec& g) {
  xq::tensor t = xq::tensor::from_shape(p->value.shape());
  for (std::size_t i = 0; i < g.size(); ++i) t.data()[i] = static_cast<float>(g[i]);
  p->zero_grad();
  p->accumulate_grad(std::move(t));
}

/// Float results against a double reference, within 1e-6 relative to the larger of
/// the value and `scale` (the value before the step: an update that cancels most of
/// a weight leaves the weight's rounding, not the result's).
void check_close(const xq::tensor& got, const dvec& want, const std::string& what, const dvec& scale = {}) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double magnitude = std::max(std::abs(want[i]), scale.empty() ? 0.0 : std::abs(scale[i]));
    INFO(what << " element " << i << ": got " << got.data()[i] << ", want " << want[i]);
    CHECK(std::abs(got.data()[i] - want[i]) <= 1e-6 * magnitude + 1e-12);
  }
}

// torch.optim.SGD, written out in double.
struct reference_sgd {
  double lr, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  dvec buffer{};
  void step(dvec& w, const dvec& grad) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      double g = grad[i] + weight_decay * w[i];
      if (momentum != 0) {
        if (buffer.size() < w.size()) buffer.resize(w.size(), std::numeric_limits<double>::quiet_NaN());
        buffer[i] = std::isnan(buffer[i]) ? g : momentum * buffer[i] + (1 - dampening) * g;
        g = nesterov ? g + momentum * buffer[i] : buffer[i];
      }
      w[i] -= lr * g;
    }
  }
};

// torch.optim.Adam / AdamW, written out in double.
struct reference_adam {
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool decoupled = false;
  dvec m{}, v{};
  int t = 0;
  void step(dvec& w, const dvec& grad) {
    m.resize(w.size(), 0.0);
    v.resize(w.size(), 0.0);
    ++t;
    for (std::size_t i = 0; i < w.size(); ++i) {
      double g = grad[i];
      if (decoupled) w[i] *= 1 - lr * weight_decay;
      else g += weight_decay * w[i];
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(beta1, t));
      const double v_hat = v[i] / (1 - std::pow(beta2, t));
      w[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

const dvec w0{0.5, -1.25, 2.0, 0.03125, -0.75, 1.5};
const std::vector<dvec> grads{{0.1, -0.2, 0.3, -0.4, 0.5, 0.01},
                              {-0.3, 0.25, 0.05, 0.6, -0.1, 0.02},
                              {0.2, 0.2, -0.7, 0.1, 0.3, -0.04},
                              {0.05, -0.5, 0.4, -0.2, 0.0, 0.08}};

xq::parameter_ptr make_param(const dvec& w) {
  xq::tensor t = xq::tensor::from_shape({2, 3});
  for (std::size_t i = 0; i < w.size(); ++i) t.data()[i] = static_cast<float>(w[i]);
  return xq::make_parameter("w", t);
}

template <class Opt, class Ref>
void run_against_reference(Opt& opt, const xq::parameter_ptr& p, Ref&& ref, const std::string& what) {
  dvec w = to_double(p->value);
  for (std::size_t k = 0; k < grads.size(); ++k) {
    set_grad(p, grads[k]);
    opt.step();
    opt.zero_grad();
    CHECK_FALSE(p->has_grad());
    const dvec before = w;
    ref.step(w, grads[k]);
    check_close(p->value, w, what + " step " + std::to_string(k + 1), before);
  }
  CHECK(opt.iterations() == grads.size());
}

}  // namespace

TEST_CASE("sgd follows PyTorch's formulas", "[train][optimizers]") {
  SECTION("plain") {
    auto p = make_param(w0);
    xq::sgd opt({p}, {0.1f});
    run_against_reference(opt, p, reference_sgd{0.1f}, "sgd");
  }
  SECTION("defaults are PyTorch's") {
    auto p = make_param(w0);
    xq::sgd opt({p});
    CHECK(opt.learning_rate() == 0.01f);
    CHECK(opt.options().momentum == 0.0);
    CHECK_FALSE(opt.options().nesterov);
    CHECK(opt.options().weight_decay == 0.0);
  }
  SECTION("momentum (the first step copies the gradient into the buffer)") {
    auto p = make_param(w0);
    xq::sgd opt({p}, {0.05f, 0.9});
    reference_sgd ref{0.05f};
    ref.momentum = 0.9;
    run_against_reference(opt, p, ref, "sgd momentum");
    REQUIRE(opt.state()[0].has_momentum_buffer);
    check_close(opt.state()[0].momentum_buffer, ref.buffer, "momentum buffer", grads.back());
  }
  SECTION("nesterov with weight decay and dampening 0") {
    auto p = make_param(w0);
    xq::sgd opt({p}, {0.05f, 0.9, true, 0.01});
    reference_sgd ref{0.05f, 0.9, 0.0, 0.01, true};
    run_against_reference(opt, p, ref, "sgd nesterov");
  }
  SECTION("dampening") {
    auto p = make_param(w0);
    xq::sgd_options o{0.05f, 0.9};
    o.dampening = 0.25;
    xq::sgd opt({p}, o);
    run_against_reference(opt, p, reference_sgd{0.05f, 0.9, 0.25}, "sgd dampening");
  }
  SECTION("invalid options") {
    auto p = make_param(w0);
    CHECK_THROWS_AS(xq::sgd({p}, {-0.1f}), xq::argument_error);
    CHECK_THROWS_AS(xq::sgd({p}, {0.1f, 0.0, true}), xq::argument_error);  // nesterov needs momentum
    CHECK_THROWS_AS(xq::sgd({p}, {0.1f, -0.5}), xq::argument_error);
    CHECK_THROWS_AS(xq::sgd({p, p}), xq::argument_error);  // a parameter twice
    CHECK_THROWS_AS(xq::sgd({nullptr}), xq::argument_error);
  }
}

TEST_CASE("adam and adamw follow PyTorch's formulas", "[train][optimizers]") {
  SECTION("adam defaults") {
    auto p = make_param(w0);
    xq::adam opt({p});
    CHECK(opt.learning_rate() == 1e-3f);
    CHECK(opt.options().beta1 == 0.9);
    CHECK(opt.options().beta2 == 0.999);
    CHECK(opt.options().epsilon == 1e-8);
    CHECK(opt.options().weight_decay == 0.0);
    run_against_reference(opt, p, reference_adam{1e-3f}, "adam");
    CHECK(opt.state()[0].step == grads.size());
  }
  SECTION("adam with L2 weight decay in the gradient") {
    auto p = make_param(w0);
    xq::adam opt({p}, {0.01f, 0.8, 0.99, 1e-6, 0.05});
    reference_adam ref{0.01f, 0.8, 0.99, 1e-6, 0.05};
    run_against_reference(opt, p, ref, "adam weight decay");
  }
  SECTION("adamw: decoupled decay, default 0.01") {
    auto p = make_param(w0);
    xq::adamw opt({p}, {0.01f});
    CHECK(opt.options().weight_decay == 0.01);
    CHECK(opt.decoupled_weight_decay());
    reference_adam ref{0.01f};
    ref.weight_decay = 0.01;
    ref.decoupled = true;
    run_against_reference(opt, p, ref, "adamw");
  }
  SECTION("adamw and adam with the same weight_decay differ") {
    auto a = make_param(w0), b = make_param(w0);
    xq::adam l2({a}, {0.01f, 0.9, 0.999, 1e-8, 0.1});
    xq::adamw decoupled({b}, {0.01f, 0.9, 0.999, 1e-8, 0.1});
    set_grad(a, grads[0]);
    set_grad(b, grads[0]);
    l2.step();
    decoupled.step();
    CHECK_FALSE(golden::bit_difference(a->value, b->value).empty());
  }
  SECTION("invalid options") {
    auto p = make_param(w0);
    CHECK_THROWS_AS(xq::adam({p}, {0.01f, 1.0}), xq::argument_error);
    CHECK_THROWS_AS(xq::adamw({p}, {0.01f, 0.9, 0.999, 1e-8, -1.0}), xq::argument_error);
  }
}

TEST_CASE("a parameter without a gradient is left alone, its state too", "[train][optimizers]") {
  auto with = make_param(w0), without = make_param(w0);
  const xq::tensor before = without->value;
  SECTION("sgd") {
    xq::sgd opt({with, without}, {0.1f, 0.9, false, 0.1});  // decay would move it if it were stepped
    set_grad(with, grads[0]);
    opt.step();
    CHECK(golden::bit_difference(without->value, before).empty());
    CHECK_FALSE(opt.state()[1].has_momentum_buffer);
    CHECK(opt.state()[0].has_momentum_buffer);
  }
  SECTION("adamw: its own step count stays 0, so its first step is a first step") {
    xq::adamw opt({with, without}, {0.01f});
    set_grad(with, grads[0]);
    opt.step();
    opt.zero_grad();
    CHECK(golden::bit_difference(without->value, before).empty());
    CHECK(opt.state()[1].step == 0);
    set_grad(with, grads[1]);
    set_grad(without, grads[1]);
    opt.step();
    CHECK(opt.state()[0].step == 2);
    CHECK(opt.state()[1].step == 1);
    reference_adam ref{0.01f};
    ref.weight_decay = 0.01;
    ref.decoupled = true;
    dvec w = w0;
    ref.step(w, grads[1]);
    check_close(without->value, w, "late first step", w0);
  }
}

TEST_CASE("a shared parameter is listed once and stepped once with the sum of its uses", "[train][optimizers]") {
  struct tied {  // the same dense layer twice
    xq::dense d{3};
    XQ_CHILDREN(d)
    xq::var operator()(const xq::var& x) { return d(d(x)); }
  };
  xq::set_seed(3);
  tied m;
  xq::build(m, {2, 3});
  auto params = xq::trainable_parameters(m);
  REQUIRE(params.size() == 2);
  const xq::tensor k0 = m.d.kernel()->value;
  xq::tensor x = xq::tensor::from_shape({2, 3});
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = 0.25f * static_cast<float>(i) - 0.5f;
  {
    xq::tape t;
    t.backward(m(xq::var(x)));
  }
  const xq::tensor g = m.d.kernel()->grad;  // both uses added up by the tape
  xq::sgd opt(params, {0.1f});
  opt.step();
  xq::tensor want = k0;
  for (std::size_t i = 0; i < want.size(); ++i) want.data()[i] = k0.data()[i] + (-0.1f) * g.data()[i];
  CHECK(golden::bit_difference(m.d.kernel()->value, want).empty());
}

TEST_CASE("learning-rate schedules", "[train][schedule]") {
  SECTION("constant") {
    xq::constant_schedule c{0.25f};
    CHECK(c(0) == 0.25f);
    CHECK(c(123456) == 0.25f);
  }
  SECTION("step decay: initial * gamma^floor(step / step_size)") {
    xq::step_decay s{0.1f, 10, 0.5f};
    CHECK(s(0) == Approx(0.1).epsilon(1e-7));
    CHECK(s(9) == Approx(0.1).epsilon(1e-7));
    CHECK(s(10) == Approx(0.05).epsilon(1e-7));
    CHECK(s(29) == Approx(0.025).epsilon(1e-7));
    CHECK(s(30) == Approx(0.0125).epsilon(1e-7));
  }
  SECTION("cosine decay (Keras CosineDecay)") {
    const double pi = 3.14159265358979323846;
    xq::cosine_decay c{1.0f, 100, 0.1f};
    for (std::size_t step : {0u, 1u, 25u, 50u, 99u, 100u, 250u}) {
      const double done = std::min<double>(step, 100) / 100.0;
      const double want = (1 - 0.1) * 0.5 * (1 + std::cos(pi * done)) + 0.1;
      INFO("step " << step);
      CHECK(c(step) == Approx(want).epsilon(1e-6));
    }
    CHECK(xq::cosine_decay{2.0f, 10}(10) == 0.0f);
  }
  SECTION("linear warmup, then the wrapped schedule from its start") {
    auto w = xq::linear_warmup(4, xq::cosine_decay{1.0f, 8});
    CHECK(w(0) == 0.0f);
    CHECK(w(1) == Approx(0.25));
    CHECK(w(2) == Approx(0.5));
    CHECK(w(4) == Approx(1.0));
    CHECK(w(8) == Approx(0.5));  // cosine at 4/8
    CHECK(w(12) == Approx(0.0).margin(1e-7));
    auto from = xq::linear_warmup(2, xq::constant_schedule{1.0f}, 0.5f);
    CHECK(from(1) == Approx(0.75));
  }
  SECTION("an optimizer reads its schedule at its step count") {
    auto p = make_param(w0);
    xq::sgd opt({p}, {xq::step_decay{0.1f, 2, 0.5f}});
    dvec w = to_double(p->value);
    for (std::size_t k = 0; k < grads.size(); ++k) {
      const float lr = xq::step_decay{0.1f, 2, 0.5f}(k);
      CHECK(opt.learning_rate() == lr);
      set_grad(p, grads[k]);
      opt.step();
      reference_sgd ref{lr};
      const dvec before = w;
      ref.step(w, grads[k]);
      check_close(p->value, w, "scheduled sgd", before);
    }
    // Any float(std::size_t) callable is a schedule.
    xq::adam a({p}, {[](std::size_t step) { return 1e-3f / static_cast<float>(step + 1); }});
    CHECK(a.learning_rate() == 1e-3f);
    a.set_iterations(3);
    CHECK(a.learning_rate() == 1e-3f / 4.0f);
  }
}

namespace {

// SGD's arithmetic is PyTorch's, operation for operation (fused multiply-adds
// where ATen's vectorized kernels have them), so it must match bit for bit.
// Adam's cannot always: PyTorch's CPU sqrt (through MKL's vector math) is not
// always correctly rounded, so a denominator can be one ulp off; those results
// are held to 1e-6 relative to the larger of the value and its value before the step.
struct golden_stats {
  std::size_t compared = 0, bit_identical = 0;
  double worst = 0;
};

void check_tensor(const xq::tensor& got, const golden::json& want_json, const xq::tensor* before,
                  bool exact, const std::string& what, golden_stats& stats) {
  const xq::tensor want = golden::tensor(want_json);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const float g = got.data()[i], w = want.data()[i];
    ++stats.compared;
    const bool same = golden::to_bits(g) == golden::to_bits(w);
    stats.bit_identical += same;
    const double magnitude = std::max(std::abs(static_cast<double>(w)),
                                      before ? std::abs(static_cast<double>(before->data()[i])) : 0.0);
    const double diff = std::abs(static_cast<double>(g) - w);
    if (magnitude > 0) stats.worst = std::max(stats.worst, diff / magnitude);
    INFO(what << " element " << i << ": got " << g << ", torch " << w);
    if (exact) CHECK(same);
    else CHECK(diff <= 1e-6 * magnitude);
  }
}

/// Runs a golden case; `check_state(i, state_json, previous_state_json_or_null, where)`.
template <class Opt, class CheckState>
void run_golden_case(const golden::json& c, std::vector<xq::parameter_ptr>& params, Opt& opt, bool exact,
                     CheckState&& check_state, golden_stats& stats) {
  const std::string name = c.at("name");
  const auto& steps = c.at("steps");
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const auto& s = steps[k];
    for (std::size_t i = 0; i < params.size(); ++i) {
      params[i]->zero_grad();
      if (!s.at("grads")[i].is_null()) params[i]->accumulate_grad(golden::tensor(s.at("grads")[i]));
    }
    CHECK(opt.learning_rate() == static_cast<float>(s.at("lr").get<double>()));
    opt.step();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::string where = name + " step " + std::to_string(k + 1) + " param " + std::to_string(i);
      const xq::tensor before = golden::tensor(k ? steps[k - 1].at("params")[i] : c.at("initial")[i]);
      check_tensor(params[i]->value, s.at("params")[i], &before, exact, where, stats);
      check_state(i, s.at("state")[i], k ? &steps[k - 1].at("state")[i] : nullptr, where);
    }
  }
}

}  // namespace

TEST_CASE("optimizers agree with PyTorch's own steps (golden values)", "[train][optimizers][golden]") {
  const golden::json file = golden::load("optimizers");
  golden_stats sgd_stats, adam_stats;
  std::size_t cases = 0;
  for (const auto& c : file.at("cases")) {
    const std::string kind = c.at("optimizer");
    const auto& o = c.at("options");
    std::vector<xq::parameter_ptr> params;
    for (const auto& t : c.at("initial")) params.push_back(xq::make_parameter("p", golden::tensor(t)));
    // Constant rates come from the options; changing ones from each step's "lr".
    std::vector<float> lrs;
    for (const auto& s : c.at("steps")) lrs.push_back(static_cast<float>(s.at("lr").get<double>()));
    bool constant = true;
    for (float lr : lrs) constant = constant && lr == lrs[0];
    xq::learning_rate_schedule lr = lrs[0];
    if (!constant) lr = [lrs](std::size_t step) { return lrs.at(step); };
    ++cases;
    // The state before a step: torch's previous one (absent before the first).
    auto before = [](const golden::json* prev, const char* key) {
      return prev && prev->contains(key) ? golden::tensor(prev->at(key)) : xq::tensor();
    };
    if (kind == "sgd") {
      xq::sgd_options so{lr};
      so.momentum = o.value("momentum", 0.0);
      so.dampening = o.value("dampening", 0.0);
      so.nesterov = o.value("nesterov", false);
      so.weight_decay = o.value("weight_decay", 0.0);
      xq::sgd opt(params, so);
      run_golden_case(c, params, opt, true,
                      [&](std::size_t i, const golden::json& st, const golden::json*, const std::string& where) {
                        if (st.contains("momentum_buffer")) {
                          REQUIRE(opt.state()[i].has_momentum_buffer);
                          check_tensor(opt.state()[i].momentum_buffer, st.at("momentum_buffer"), nullptr, true,
                                       where + " momentum_buffer", sgd_stats);
                        } else {
                          CHECK_FALSE(opt.state()[i].has_momentum_buffer);
                        }
                      },
                      sgd_stats);
    } else {
      xq::adam_options ao{lr};
      ao.beta1 = o.contains("betas") ? o.at("betas")[0].get<double>() : 0.9;
      ao.beta2 = o.contains("betas") ? o.at("betas")[1].get<double>() : 0.999;
      ao.epsilon = o.value("eps", 1e-8);
      ao.weight_decay = o.value("weight_decay", kind == "adamw" ? 0.01 : 0.0);
      ao.amsgrad = o.value("amsgrad", false);
      auto check_state = [&](auto& opt) {
        return [&](std::size_t i, const golden::json& st, const golden::json* prev, const std::string& where) {
          const xq::adam_state& s = opt.state()[i];
          CHECK(s.step == st.value("step", 0u));
          if (s.step == 0) return;
          for (const char* key : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}) {
            if (!st.contains(key)) continue;
            const xq::tensor& got = std::string(key) == "exp_avg" ? s.exp_avg
                                    : std::string(key) == "exp_avg_sq" ? s.exp_avg_sq : s.max_exp_avg_sq;
            const xq::tensor b = before(prev, key);
            check_tensor(got, st.at(key), b.size() == got.size() ? &b : nullptr, false, where + " " + key,
                         adam_stats);
          }
        };
      };
      if (kind == "adam") {
        xq::adam opt(params, ao);
        run_golden_case(c, params, opt, false, check_state(opt), adam_stats);
      } else {
        REQUIRE(kind == "adamw");
        xq::adamw opt(params, {ao.learning_rate, ao.beta1, ao.beta2, ao.epsilon, ao.weight_decay, ao.amsgrad});
        run_golden_case(c, params, opt, false, check_state(opt), adam_stats);
      }
    }
  }
  CHECK(cases == 13);
  CHECK(sgd_stats.bit_identical == sgd_stats.compared);
  WARN("sgd: " << sgd_stats.bit_identical << " of " << sgd_stats.compared
               << " values bit-identical to PyTorch; adam/adamw: " << adam_stats.bit_identical << " of "
               << adam_stats.compared << ", largest relative difference " << adam_stats.worst);
}
