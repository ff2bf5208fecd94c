// Checkpoints are open to any optimizer (issue 33's debts): a user's optimizer written
// from docs/checkpoint_format.md ("A user's optimizer") alone — a signed-momentum rule
// with a velocity per parameter and a step count — saves and resumes bit for bit, and its
// state is checked as the built-in optimizers' is (another type, a missing slot).

#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <xquant/io/checkpoint.hpp>
#include <xquant/xquant.hpp>

namespace user {

/// w -= rate * sign(v), v = 0.9 v + g: a velocity per parameter, created on its first step.
class signed_momentum {
 public:
  struct slot_state {
    xq::tensor velocity;
    std::size_t step = 0;
  };

  signed_momentum(std::vector<xq::parameter_ptr> params, float rate) : params_(std::move(params)), rate_(rate) {
    state_.resize(params_.size());
  }
  void step() {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      xq::parameter& p = *params_[i];
      if (!p.has_grad()) continue;
      slot_state& s = state_[i];
      if (s.step == 0) s.velocity = xt::zeros<float>(p.value.shape());
      for (std::size_t e = 0; e < p.value.size(); ++e) {
        s.velocity.data()[e] = 0.9f * s.velocity.data()[e] + p.grad.data()[e];
        const float v = s.velocity.data()[e];
        p.value.data()[e] -= rate_ * (v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f);
      }
      ++s.step;
    }
    ++iterations_;
  }
  void zero_grad() {
    for (auto& p : params_) p->zero_grad();
  }
  const std::vector<xq::parameter_ptr>& parameters() const noexcept { return params_; }
  const std::vector<slot_state>& state() const noexcept { return state_; }
  std::vector<slot_state>& state() noexcept { return state_; }
  std::size_t iterations() const noexcept { return iterations_; }
  void set_iterations(std::size_t n) noexcept { iterations_ = n; }

 private:
  std::vector<xq::parameter_ptr> params_;
  std::vector<slot_state> state_;
  float rate_;
  std::size_t iterations_ = 0;
};

// The checkpoint protocol, in the optimizer's namespace.
xq::checkpoint_optimizer capture_optimizer(const signed_momentum& o) {
  xq::checkpoint_optimizer c;
  c.type = "user::signed_momentum";
  c.iterations = o.iterations();
  xq::capture_optimizer_slots(c, o, [](const signed_momentum::slot_state& s, xq::checkpoint_slot& slot) {
    slot.step = s.step;
    if (s.step > 0) slot.tensors.emplace_back("velocity", s.velocity);
  });
  return c;
}

std::function<void()> plan_optimizer_state(xq::checkpoint_optimizer& saved, signed_momentum& o,
                                           const std::string& source, const std::string& where) {
  xq::check_optimizer_state_type(saved, "user::signed_momentum", source, where);
  auto states = xq::plan_optimizer_slots<signed_momentum::slot_state>(
      saved, o.parameters(), source, [](signed_momentum::slot_state& s, xq::checkpoint_slot& slot, auto& take) {
        s.step = slot.step;
        if (slot.step > 0) s.velocity = take("velocity");
      });
  auto shared = std::make_shared<std::vector<signed_momentum::slot_state>>(std::move(states));
  const std::size_t iterations = saved.iterations;
  return [&o, shared, iterations] {
    o.state() = std::move(*shared);
    o.set_iterations(iterations);
  };
}

std::string optimizer_type_of(const signed_momentum&) { return "user::signed_momentum"; }

}  // namespace user

namespace {

auto make_model() {
  xq::set_seed(3);
  auto m = xq::sequential(xq::dense(6), xq::relu(), xq::dense(3));
  xq::build(m, {1, 4});
  return m;
}

template <class Model, class Optimizer>
void steps(Model& m, Optimizer& opt, const xq::tensor& x, const xq::tensor& y, int n) {
  for (int i = 0; i < n; ++i) {
    xq::tape tape;
    tape.backward(xq::mean_squared_error(m(xq::var(x)), y));
    opt.step();
    opt.zero_grad();
  }
}

}  // namespace

TEST_CASE("checkpoint: a user's optimizer with the protocol saves and resumes bit for bit", "[io][checkpoint]") {
  const xq::tensor x = xt::linspace<float>(-1.0f, 1.0f, 32).reshape({8, 4});
  const xq::tensor y = xt::linspace<float>(0.5f, -0.5f, 24).reshape({8, 3});
  auto a = make_model();
  user::signed_momentum opt_a(xq::trainable_parameters(a), 1e-2f);
  steps(a, opt_a, x, y, 3);
  const std::vector<std::uint8_t> bytes = xq::save_checkpoint_bytes(a, opt_a);

  auto b = make_model();  // the same structure, other weights until loaded
  user::signed_momentum opt_b(xq::trainable_parameters(b), 1e-2f);
  xq::load_checkpoint_bytes(bytes.data(), bytes.size(), "user.xqc", b, opt_b);
  CHECK(opt_b.iterations() == 3);
  steps(a, opt_a, x, y, 4);
  steps(b, opt_b, x, y, 4);
  const auto pa = xq::trainable_parameters(a), pb = xq::trainable_parameters(b);
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    const bool same = pa[i]->value == pb[i]->value;
    CHECK(same);
  }

  SECTION("another optimizer type is refused, naming both") {
    auto c = make_model();
    xq::sgd sgd(xq::trainable_parameters(c), {1e-2f});
    CHECK_THROWS_WITH(xq::load_checkpoint_bytes(bytes.data(), bytes.size(), "user.xqc", c, sgd),
                      Catch::Contains("sgd state") && Catch::Contains("user::signed_momentum state"));
  }
  SECTION("an optimizer stepping a parameter the checkpoint has no state for is refused, changing nothing") {
    auto d = make_model();
    const xq::tensor before = d.get<0>().kernel()->value;
    std::vector<xq::parameter_ptr> more = xq::trainable_parameters(d);
    more.push_back(xq::make_parameter("extra", xt::zeros<float>({2})));
    user::signed_momentum opt_d(more, 1e-2f);
    CHECK_THROWS_WITH(xq::load_checkpoint_bytes(bytes.data(), bytes.size(), "user.xqc", d, opt_d),
                      Catch::Contains("extra"));
    const bool unchanged = d.get<0>().kernel()->value == before;
    CHECK(unchanged);
    CHECK(opt_d.iterations() == 0);
  }
}
