// xq::moving_average_quantizer: tfmot's MovingAverageQuantizer as a quantizer layer.
// Bit for bit with the golden-tested operators (tfmot::range_quantizer and TF's
// FakeQuantWithMinMaxVarsGradient) over a state sequence; its running range as
// non-trainable parameters through paths, checkpoints, clones and the summary;
// standalone in a sequential; metrics; errors naming the path.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/mode.hpp>
#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/io/checkpoint.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/numerics/tf_fake_quant.hpp>
#include <xquant/numerics/tfmot_quantizers.hpp>
#include <xquant/quantizers/model_quantizers.hpp>
#include <xquant/quantizers/moving_average_quantizer.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/train/adam.hpp>

#include "../gradient_check.hpp"

using xq::tensor;
using xq::var;
using xq::testing::uniform;

namespace {

template <class A, class B>
bool same_bits(const A& a, const B& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

float min_of(const xq::moving_average_quantizer& q) { return q.min_var()->value(0); }
float max_of(const xq::moving_average_quantizer& q) { return q.max_var()->value(0); }

/// One call of q on x (training or not) with a backward pass of dy: output and dx.
struct call_result {
  tensor y, dx;
};
call_result call(xq::moving_average_quantizer& q, const tensor& x, const tensor& dy, bool training) {
  xq::training_mode mode(training);
  xq::tape t;
  var xv(x, true);
  var y = q(xv);
  t.backward(y, dy);
  return {y.value(), xv.grad()};
}

auto quant_net() {
  return xq::sequential(xq::quant_dense(4, xq::moving_average_quantizer(), xq::ste_sign()).name("fc"));
}

template <class Net>
void train_steps(Net& net, int steps, unsigned seed) {
  xq::adam opt(xq::trainable_parameters(net), xq::adam_options{0.05f});
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    xq::training_mode training(true);
    xq::tape t;
    // Values beyond ±6 so the range and the gradient mask both matter; the input
    // wants a gradient so that the input quantizer's gradient flow sees one.
    const var y = net(var(uniform({3, 5}, -9.0f, 4.0f, seed + unsigned(i)), true));
    t.backward(y, uniform(y.shape(), -1.0f, 1.0f, 99u));
    opt.step();
  }
}

template <class Net>
tensor infer(Net& net) {
  xq::training_mode inference(false);
  xq::no_grad off;
  return net(var(uniform({3, 5}, -9.0f, 4.0f, 5u))).value();
}

}  // namespace

TEST_CASE("moving_average_quantizer: bit for bit with tfmot's operator over training calls then inference",
          "[quantizers][tfmot]") {
  struct config {
    int bits;
    bool symmetric, narrow;
  };
  for (const config c :
       {config{8, false, false}, config{4, false, true}, config{8, true, false}, config{3, true, true}}) {
    CAPTURE(c.bits, c.symmetric, c.narrow);
    xq::moving_average_quantizer q(c.bits, c.symmetric, c.narrow);
    auto ref = xq::tfmot::moving_average_quantizer(c.bits, c.symmetric, c.narrow);
    CHECK(min_of(q) == -6.0f);
    CHECK(max_of(q) == 6.0f);
    float previous_min = min_of(q);
    for (unsigned s = 0; s < 4; ++s) {
      // Wide batches (beyond ±6) pull the range outward, so it moves every step.
      const tensor x = uniform({4, 6}, -40.0f, 30.0f, 10u + s);
      const tensor dy = uniform({4, 6}, -1.0f, 1.0f, 20u + s);
      const call_result got = call(q, x, dy, true);
      const tensor want = ref(x, true);
      const tensor want_dx = xq::tf::fake_quant_with_min_max_vars_gradient(dy, x, ref.state().min(0),
                                                                           ref.state().max(0), c.bits, c.narrow)
                                 .dx;
      CHECK(same_bits(got.y, want));
      CHECK(same_bits(got.dx, want_dx));
      CHECK(same_bits(q.min_var()->value, ref.state().min));  // the state sequence
      CHECK(same_bits(q.max_var()->value, ref.state().max));
      CHECK(min_of(q) < previous_min);
      previous_min = min_of(q);
    }
    // Some gradient entries are cut (outside the range) and some pass (an inference call).
    const call_result last = call(q, uniform({4, 6}, -40.0f, 30.0f, 30u), xt::ones<float>({4, 6}), false);
    std::size_t zeros = 0;
    for (float g : last.dx) zeros += g == 0.0f;
    CHECK(zeros > 0);
    CHECK(zeros < last.dx.size());

    // Inference: the stored range, nothing updated.
    const tensor before_min = q.min_var()->value, before_max = q.max_var()->value;
    const tensor x = uniform({2, 3}, -50.0f, 50.0f, 77u);
    const tensor dy = uniform({2, 3}, -1.0f, 1.0f, 78u);
    const call_result got = call(q, x, dy, false);
    CHECK(same_bits(got.y, ref(x, false)));
    CHECK(same_bits(got.dx, xq::tf::fake_quant_with_min_max_vars_gradient(dy, x, ref.state().min(0),
                                                                          ref.state().max(0), c.bits, c.narrow)
                                .dx));
    CHECK(same_bits(q.min_var()->value, before_min));
    CHECK(same_bits(q.max_var()->value, before_max));
  }
}

TEST_CASE("moving_average_quantizer: a training call's gradient uses the updated range", "[quantizers][tfmot]") {
  // From ±6 (nudged 8-bit max about 5.98), a batch reaching ±1000 moves the max to
  // 6 + 0.001 * 994 = 6.994: 6.5 was outside the old range and is inside the new one,
  // so its gradient passes, as tfmot's FakeQuant runs on the assigned variables.
  xq::moving_average_quantizer q;
  const call_result r = call(q, tensor{-1000, 1000, 6.5f}, tensor{1, 1, 1}, true);
  CHECK(max_of(q) == Approx(6.994f));
  CHECK(r.dx(2) == 1.0f);
  CHECK(r.dx(1) == 0.0f);
  CHECK(r.y(2) == Approx(6.5f).margin(0.03f));
}

TEST_CASE("moving_average_quantizer: tfmot's quant_ops_test moving-average vectors", "[quantizers][tfmot]") {
  // quant_ops_test starts the variables at 0: [-1, 1] then [0, 0] gives ±0.000999 (§3).
  xq::moving_average_quantizer q;
  q.min_var()->value(0) = 0.0f;
  q.max_var()->value(0) = 0.0f;
  xq::training_mode training;
  (void)q(var(tensor{-1, 1}));
  (void)q(var(tensor{0, 0}));
  CHECK(min_of(q) == Approx(-0.000999).epsilon(1e-4));
  CHECK(max_of(q) == Approx(0.000999).epsilon(1e-4));
}

TEST_CASE("moving_average_quantizer: defaults, precision and non-trainable range parameters",
          "[quantizers][tfmot]") {
  xq::moving_average_quantizer q;
  CHECK(q.precision() == 8);
  CHECK(q.num_bits() == 8);
  CHECK_FALSE(q.symmetric());
  CHECK_FALSE(q.narrow_range());
  CHECK(q.ema_decay() == 0.999);
  CHECK(xq::moving_average_quantizer(4, true, true).precision() == 4);
  CHECK(xq::is_quantizer_layer_v<xq::moving_average_quantizer>);
  const auto params = q.parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0]->name() == "moving_average_quantizer/min_var");
  CHECK(params[1]->name() == "moving_average_quantizer/max_var");
  for (const auto& p : params) {
    CHECK_FALSE(p->trainable());
    CHECK(p->value.shape() == tensor::shape_type{1});
  }
  std::vector<xq::parameter_ptr> slots;
  q.for_each_parameter_slot([&](xq::parameter_ptr& p) { slots.push_back(p); });
  CHECK(slots == params);
  // A backward pass reaches x, never the range.
  (void)call(q, tensor{-7, 0.5f, 7}, tensor{1, 1, 1}, true);
  CHECK_FALSE(q.min_var()->has_grad());
  CHECK_FALSE(q.max_var()->has_grad());
}

TEST_CASE("moving_average_quantizer in a quant_dense: paths, non-trainable and updated by training only",
          "[quantizers][tfmot][quant_layers]") {
  auto net = quant_net();
  xq::set_paths(net, "net");
  auto& fc = net.get<0>();
  CHECK(fc.input_precision() == std::optional<int>(8));
  xq::build(net, {3, 5});  // an inference call on zeros: the range stays
  xq::set_paths(net, "net");
  CHECK(min_of(fc.input_quantizer) == -6.0f);
  CHECK(max_of(fc.input_quantizer) == 6.0f);
  std::vector<std::string> names;
  for (const auto& p : xq::parameters(net)) names.push_back(p->name());
  CHECK(names == std::vector<std::string>{"net/fc/kernel", "net/fc/bias", "net/fc/input_quantizer/min_var",
                                          "net/fc/input_quantizer/max_var"});
  std::vector<std::string> trainable;
  for (const auto& p : xq::trainable_parameters(net)) trainable.push_back(p->name());
  CHECK(trainable == std::vector<std::string>{"net/fc/kernel", "net/fc/bias"});

  (void)infer(net);
  CHECK(min_of(fc.input_quantizer) == -6.0f);
  train_steps(net, 1, 1u);
  CHECK(min_of(fc.input_quantizer) < -6.0f);  // batches reach -9
  CHECK(fc.kernel()->has_grad());

  // The summary counts the range as 2 non-trainable 32-bit parameters.
  const xq::model_summary s = xq::summarize(net, {3, 5});
  CHECK(s.non_trainable_params() == 2);
  CHECK(s.trainable_params() == 5 * 4 + 4);
}

TEST_CASE("moving_average_quantizer: a checkpoint restores the ranges into a fresh model",
          "[quantizers][tfmot][checkpoint]") {
  xq::set_seed(11);
  auto net = quant_net();
  xq::build(net, {3, 5});
  train_steps(net, 3, 1u);
  const tensor y = infer(net);
  const auto bytes = xq::save_checkpoint_bytes(net);

  xq::set_seed(12);  // other initial weights, the initial range
  auto fresh = quant_net();
  xq::build(fresh, {3, 5});
  CHECK(min_of(fresh.get<0>().input_quantizer) == -6.0f);
  CHECK_FALSE(same_bits(infer(fresh), y));
  xq::load_checkpoint_bytes(bytes.data(), bytes.size(), "memory", fresh);
  const auto& q = net.get<0>().input_quantizer;
  const auto& restored = fresh.get<0>().input_quantizer;
  CHECK(min_of(q) != -6.0f);
  CHECK(same_bits(restored.min_var()->value, q.min_var()->value));
  CHECK(same_bits(restored.max_var()->value, q.max_var()->value));
  CHECK_FALSE(restored.min_var()->trainable());
  CHECK(same_bits(infer(fresh), y));
  CHECK(xq::save_checkpoint_bytes(fresh) == bytes);
}

TEST_CASE("moving_average_quantizer: clone_model copies the range independently", "[quantizers][tfmot][clone]") {
  xq::set_seed(13);
  auto net = quant_net();
  xq::build(net, {3, 5});
  train_steps(net, 2, 1u);
  const tensor y = infer(net);
  auto copy = xq::clone_model(net);
  const auto& q = net.get<0>().input_quantizer;
  const auto& c = copy.get<0>().input_quantizer;
  CHECK(c.min_var() != q.min_var());
  CHECK(c.max_var() != q.max_var());
  CHECK(same_bits(c.min_var()->value, q.min_var()->value));
  CHECK(same_bits(c.max_var()->value, q.max_var()->value));
  CHECK_FALSE(c.min_var()->trainable());
  CHECK(c.min_var()->name() == q.min_var()->name());
  CHECK(same_bits(infer(copy), y));

  // Training the clone moves its range only.
  const tensor q_min = q.min_var()->value;
  train_steps(copy, 2, 50u);
  CHECK(same_bits(q.min_var()->value, q_min));
  CHECK_FALSE(same_bits(c.min_var()->value, q_min));
  CHECK(same_bits(infer(net), y));
}

TEST_CASE("moving_average_quantizer standalone in a sequential", "[quantizers][tfmot]") {
  xq::set_seed(14);
  auto net = xq::sequential(xq::dense(3).name("d1"), xq::moving_average_quantizer(4).name("act_q"),
                            xq::dense(2).name("d2"));
  xq::build(net, {2, 5});
  xq::set_paths(net, "net");
  std::vector<std::string> names;
  for (const auto& p : xq::parameters(net)) names.push_back(p->name());
  CHECK(names == std::vector<std::string>{"net/d1/kernel", "net/d1/bias", "net/act_q/min_var",
                                          "net/act_q/max_var", "net/d2/kernel", "net/d2/bias"});
  auto& q = net.get<1>();
  CHECK(q.path() == "net/act_q");
  {
    xq::training_mode training;
    xq::tape t;
    t.backward(net(var(uniform({2, 5}, -1.0f, 1.0f, 3u))));
  }
  CHECK(min_of(q) != -6.0f);  // the EMA moved
  CHECK(net.get<0>().kernel()->has_grad());  // through the quantizer's STE

  // The quantizer's output (inference) lies on its 4-bit grid: at most 16 values.
  const xq::var h = net.get<0>()(var(uniform({50, 5}, -3.0f, 3.0f, 4u)));
  const tensor qh = q(h).value();
  std::vector<float> levels(qh.begin(), qh.end());
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  CHECK(levels.size() <= 16);
  CHECK(levels.size() > 2);
}

TEST_CASE("moving_average_quantizer: flip ratio and gradient flow", "[quantizers][tfmot][metrics]") {
  // A standalone call with a known gradient mask: 2 of 4 inputs outside ±6 (the
  // nudged 8-bit range of [-6, 6] is about [-6.0235, 5.9765]).
  xq::moving_average_quantizer alone;
  alone.metrics(xq::quantizer_metric::gradient_flow);
  (void)call(alone, tensor{-100, 0.5f, 1.0f, 100}, tensor{1, 1, 1, 1}, true);
  REQUIRE(alone.gradient_flow_metric() != nullptr);
  CHECK(alone.gradient_flow_metric()->count() == 1);
  CHECK(alone.gradient_flow_metric()->result() == 0.5);

  auto net = quant_net();
  xq::build(net, {3, 5});
  xq::set_paths(net, "net");
  xq::enable_quantizer_metrics(net, xq::quantizer_metric::flip_ratio | xq::quantizer_metric::gradient_flow);
  auto& q = net.get<0>().input_quantizer;
  train_steps(net, 3, 1u);
  (void)infer(net);  // inference calls are not counted
  CHECK(q.flip_ratio_metric()->count() == 3.0f);
  CHECK(q.gradient_flow_metric()->count() == 3);
  const auto figures = xq::quantizer_metrics(net);
  std::vector<std::string> names;
  for (const auto& [name, value] : figures) {
    names.push_back(name);
    CHECK(value >= 0.0);
    CHECK(value <= 1.0);
  }
  CHECK(names == std::vector<std::string>{"flip_ratio/net/fc/input_quantizer", "gradient_flow/net/fc/input_quantizer",
                                          "flip_ratio/net/fc/kernel_quantizer",
                                          "gradient_flow/net/fc/kernel_quantizer"});
  // A copy keeps metrics of its own.
  xq::moving_average_quantizer copy = q;
  CHECK(copy.gradient_flow_metric() != q.gradient_flow_metric());
}

TEST_CASE("moving_average_quantizer: errors name the path", "[quantizers][tfmot][errors]") {
  for (int bits : {1, 17, 0, -3}) {
    CAPTURE(bits);
    try {
      xq::moving_average_quantizer q(bits);
      FAIL("no error for num_bits " << bits);
    } catch (const xq::argument_error& e) {
      CHECK(e.where() == "moving_average_quantizer");
      CHECK(std::string(e.what()).find("num_bits") != std::string::npos);
    }
  }
  // A training batch with NaN is rejected naming the path, and the range stays.
  xq::moving_average_quantizer q;
  q.set_path("net/act_q");
  xq::training_mode training;
  try {
    (void)q(var(tensor{1.0f, std::numeric_limits<float>::quiet_NaN()}));
    FAIL("no error for a NaN batch");
  } catch (const xq::argument_error& e) {
    CHECK(e.where() == "net/act_q");
  }
  CHECK(min_of(q) == -6.0f);
  CHECK(max_of(q) == 6.0f);
  // An empty training batch leaves the range alone.
  const tensor y = q(var(tensor::from_shape({0, 3}))).value();
  CHECK(y.size() == 0);
  CHECK(min_of(q) == -6.0f);
}
