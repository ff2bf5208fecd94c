// Distillation in QAT (train/distillation.hpp): the softened KL divergence against its closed
// form and finite differences, a loss that reads the batch's inputs through fit and evaluate,
// and a student that learns a frozen teacher.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/random.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/distillation.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/sgd.hpp>

#include "../gradient_check.hpp"

using xq::testing::uniform;

namespace {

double closed_form_kl(const xq::tensor& s, const xq::tensor& t, double temperature) {
  const std::size_t k = s.shape().back(), rows = s.size() / k;
  double total = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double zs = 0, zt = 0;
    for (std::size_t j = 0; j < k; ++j) {
      zs += std::exp(s.data()[r * k + j] / temperature);
      zt += std::exp(t.data()[r * k + j] / temperature);
    }
    for (std::size_t j = 0; j < k; ++j) {
      const double pt = std::exp(t.data()[r * k + j] / temperature) / zt;
      const double ps = std::exp(s.data()[r * k + j] / temperature) / zs;
      total += pt * std::log(pt / ps);
    }
  }
  return total / double(rows) * temperature * temperature;
}

}  // namespace

TEST_CASE("softened_kl_divergence: T^2 KL of the softened distributions, and its gradient", "[distillation]") {
  const xq::tensor s = uniform({5, 7}, -3.0f, 3.0f, 1), t = uniform({5, 7}, -3.0f, 3.0f, 2);
  for (const float temperature : {1.0f, 2.5f}) {
    INFO(temperature);
    CHECK(xq::softened_kl_divergence(xq::var(s), t, temperature).value()() ==
          Approx(closed_form_kl(s, t, temperature)).epsilon(1e-6));
    const auto student = xq::make_parameter("logits", s);
    xq::testing::check_gradients([&] { return xq::softened_kl_divergence(xq::var(student), t, temperature); },
                                 {xq::testing::state_of(student)}, {1e-2f, 2e-2, 1e-4});
  }
  CHECK(xq::softened_kl_divergence(xq::var(s), s, 3.0f).value()() == Approx(0.0).margin(1e-9));
  // Huge logits do not overflow.
  xq::tensor big = s * 1000.0f;
  CHECK(std::isfinite(xq::softened_kl_divergence(xq::var(big), t, 1.0f).value()()));
  CHECK_THROWS_AS(xq::softened_kl_divergence(xq::var(s), t, 0.0f), xq::argument_error);
  CHECK_THROWS_AS(xq::softened_kl_divergence(xq::var(s), uniform({5, 6}), 1.0f), xq::shape_error);
}

TEST_CASE("fit hands a loss that takes them the batch's inputs", "[distillation][fit]") {
  auto model = xq::sequential(xq::dense(3));
  xq::build(model, {1, 4});
  const xq::tensor x = uniform({10, 4}, -1.0f, 1.0f, 3);
  const xq::dataset data{x, uniform({10, 3}, -1.0f, 1.0f, 4)};
  std::size_t rows_seen = 0, calls = 0;
  auto loss = [&](const xq::var_list& y, const xq::var_list& targets, const xq::var_list& inputs) {
    REQUIRE(inputs.size() == 1);
    CHECK(inputs[0].shape()[0] == y[0].shape()[0]);
    CHECK(inputs[0].shape()[1] == 4);
    rows_seen += inputs[0].shape()[0];
    ++calls;
    return xq::mean_squared_error(y[0], targets[0]);
  };
  xq::sgd opt(xq::trainable_parameters(model));
  xq::fit_options fo;
  fo.batch_size = 4;
  fo.shuffle = false;
  fo.verbose = false;
  fo.metric = nullptr;  // a regression
  xq::fit(model, opt, loss, data, fo);
  CHECK(calls == 3);
  CHECK(rows_seen == 10);
  xq::evaluate(model, loss, data, 5, nullptr);
  CHECK(rows_seen == 20);
}

TEST_CASE("a student learns a frozen teacher: KL at a temperature, MSE on logits, beside the task", "[distillation]") {
  auto teacher_net = xq::sequential(xq::dense(12), xq::relu(), xq::dense(5));
  xq::set_seed(5);
  xq::build(teacher_net, {1, 6});
  auto teacher = xq::clone_model(teacher_net);
  const xq::tensor x = uniform({128, 6}, -1.0f, 1.0f, 6);
  xq::tensor labels = xt::zeros<float>({128});
  for (std::size_t i = 0; i < 128; ++i) labels(i) = float(i % 5);
  const xq::dataset data{x, labels};
  const auto teacher_weights = xq::parameters(teacher)[0]->value;

  for (const auto kind : {xq::distillation_kind::kl, xq::distillation_kind::mse}) {
    auto student = xq::sequential(xq::dense(12), xq::relu(), xq::dense(5));
    xq::set_seed(9);
    xq::build(student, {1, 6});
    xq::distillation_options o;
    o.temperature = 2.0f;
    o.kind = kind;
    xq::distillation_loss distill(teacher, xq::sparse_softmax_cross_entropy, o);
    const double start = xq::evaluate(student, distill, data).loss;
    xq::adam_options ao;
    ao.learning_rate = 1e-2f;
    xq::adam opt(xq::trainable_parameters(student), ao);
    xq::fit_options fo;
    fo.epochs = 40;
    fo.batch_size = 32;
    fo.verbose = false;
    xq::fit(student, opt, distill, data, fo);
    const double end = xq::evaluate(student, distill, data).loss;
    INFO(int(kind) << ": " << start << " -> " << end);
    CHECK(end < 0.2 * start);
    // The teacher is only read.
    CHECK(bool(xq::parameters(teacher)[0]->value == teacher_weights));
    CHECK_FALSE(xq::parameters(teacher)[0]->has_grad());
  }

  // Beside the task's loss: weight * D + task_weight * CE.
  auto student = xq::sequential(xq::dense(12), xq::relu(), xq::dense(5));
  xq::build(student, {1, 6});
  xq::distillation_options o;
  o.weight = 0.25f;
  o.task_weight = 0.75f;
  xq::distillation_loss both(teacher, xq::sparse_softmax_cross_entropy, o);
  const xq::no_grad off;
  const xq::training_mode inference(false);
  const xq::var s = student(xq::var(x)), t = teacher(xq::var(x));
  const double expected = 0.25 * closed_form_kl(s.value(), t.value(), 1.0) +
                          0.75 * xq::sparse_softmax_cross_entropy(s, labels).value()();
  CHECK(xq::evaluate(student, both, data, 128).loss == Approx(expected).epsilon(1e-5));
}
