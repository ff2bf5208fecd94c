// Losses and metrics: values against formulas written out in double and against
// Keras 3.15 (TF 2.21) on the same inputs, numerical stability, tape gradients
// against central differences, and the errors bad labels and shapes raise.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <xquant/train/losses.hpp>
#include <xquant/train/metrics.hpp>

#include "../gradient_check.hpp"

using xq::testing::check_gradients;
using xq::testing::uniform;

namespace {

xq::tensor make(const xq::tensor::shape_type& shape, const std::vector<float>& values) {
  xq::tensor t = xq::tensor::from_shape(shape);
  if (t.size() != values.size()) throw std::logic_error("make: wrong number of values");  // runs before Catch2
  std::copy(values.begin(), values.end(), t.begin());
  return t;
}

float scalar(const xq::var& v) {
  REQUIRE(v.dimension() == 0);
  REQUIRE(v.size() == 1);
  return v.value().data()[0];
}

double log_sum_exp(const std::vector<double>& row) {
  double top = row[0];
  for (double v : row) top = std::max(top, v);
  double s = 0;
  for (double v : row) s += std::exp(v - top);
  return top + std::log(s);
}

// The Keras reference inputs (values from keras.losses.* on the same arrays).
const xq::tensor logits4 = make({4, 3}, {2, -1, 0.5f, 0.1f, 0.2f, 0.3f, 1000, -1000, 0, -3, 4, 4});
const xq::tensor labels4 = make({4}, {0, 2, 1, 2});
const xq::tensor probs = make({3, 2}, {0.9f, 0.2f, 0.0f, 1.0f, 0.5f, 1e-9f});
const xq::tensor binary = make({3, 2}, {1, 0, 1, 0, 0, 1});

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const xq::error& e) {
    return e.what();
  }
  return "no exception";
}

}  // namespace

TEST_CASE("sparse_softmax_cross_entropy: value, stability, Keras", "[train][losses]") {
  const xq::var loss = xq::sparse_softmax_cross_entropy(xq::var(logits4), labels4);
  // Keras SparseCategoricalCrossentropy(from_logits=True): 500.4842224121094.
  CHECK(scalar(loss) == Approx(500.4842224121094).epsilon(1e-7));
  const double want = (log_sum_exp({2, -1, 0.5}) - 2 + log_sum_exp({0.1f, 0.2f, 0.3f}) - 0.3f +
                       log_sum_exp({1000, -1000, 0}) + 1000 + log_sum_exp({-3, 4, 4}) - 4) /
                      4;
  CHECK(scalar(loss) == Approx(want).epsilon(1e-7));
  CHECK(std::isfinite(scalar(loss)));  // 1000 and -1000 do not overflow exp

  // Labels may also be a column (N, 1).
  CHECK(scalar(xq::sparse_softmax_cross_entropy(xq::var(logits4), make({4, 1}, {0, 2, 1, 2}))) ==
        scalar(loss));
}

TEST_CASE("sparse_softmax_cross_entropy: gradient (softmax - onehot) / N", "[train][losses]") {
  xq::var logits(uniform({5, 4}, -3, 3, 21), true);
  const xq::tensor labels = make({5}, {0, 3, 1, 1, 2});
  {
    xq::tape t;
    const xq::var loss = xq::sparse_softmax_cross_entropy(logits, labels);
    CHECK(t.size() == 1);
    CHECK(loss.requires_grad());
    t.backward(loss);
  }
  for (std::size_t i = 0; i < 5; ++i) {
    std::vector<double> row(4);
    for (std::size_t j = 0; j < 4; ++j) row[j] = logits.value()(i, j);
    const double lse = log_sum_exp(row);
    for (std::size_t j = 0; j < 4; ++j) {
      const double want = (std::exp(row[j] - lse) - (j == labels(i) ? 1.0 : 0.0)) / 5.0;
      CHECK(logits.grad()(i, j) == Approx(want).margin(1e-7));
    }
  }
  check_gradients([&] { return xq::sparse_softmax_cross_entropy(logits, labels); }, {logits.state()}, {},
                  "sparse_softmax_cross_entropy");
  // Huge logits: the gradient is still finite (a saturated softmax).
  xq::var big(make({1, 3}, {1000, -1000, 0}), true);
  {
    xq::tape t;
    t.backward(xq::sparse_softmax_cross_entropy(big, make({1}, {1})));
  }
  CHECK(big.grad()(0, 0) == Approx(1.0));
  CHECK(big.grad()(0, 1) == Approx(-1.0));
  CHECK(big.grad()(0, 2) == Approx(0.0).margin(1e-30));
}

TEST_CASE("sparse_softmax_cross_entropy: bad labels and shapes", "[train][losses][errors]") {
  const xq::var logits(uniform({2, 3}));
  CHECK_THROWS_AS(xq::sparse_softmax_cross_entropy(logits, make({2}, {0, 3})), xq::argument_error);
  CHECK(message_of([&] { xq::sparse_softmax_cross_entropy(logits, make({2}, {0, 3})); }) ==
        "sparse_softmax_cross_entropy: expected labels that are integers in [0, 3), given 3 at index 1");
  CHECK(message_of([&] { xq::sparse_softmax_cross_entropy(logits, make({2}, {1.5f, 0})); }) ==
        "sparse_softmax_cross_entropy: expected labels that are integers in [0, 3), given 1.5 at index 0");
  CHECK_THROWS_AS(xq::sparse_softmax_cross_entropy(logits, make({2}, {-1, 0})), xq::argument_error);
  CHECK_THROWS_AS(xq::sparse_softmax_cross_entropy(logits, make({2}, {NAN, 0})), xq::argument_error);
  CHECK_THROWS_AS(xq::sparse_softmax_cross_entropy(logits, make({3}, {0, 0, 0})), xq::shape_error);
  CHECK(message_of([&] { xq::sparse_softmax_cross_entropy(logits, make({3}, {0, 0, 0})); }) ==
        "sparse_softmax_cross_entropy: expected labels of shape (2,) for logits of shape (2, 3), given (3,)");
  CHECK(message_of([&] { xq::sparse_softmax_cross_entropy(xq::var(uniform({2, 3, 1})), make({2}, {0, 0})); }) ==
        "sparse_softmax_cross_entropy: expected labels of shape (2, 3) for logits of shape (2, 3, 1), given (2,)");
  CHECK(message_of([&] { xq::sparse_softmax_cross_entropy(xq::var(uniform({3})), make({3}, {0, 0, 0})); }) ==
        "sparse_softmax_cross_entropy: expected logits of shape (N, K) or (..., K), given (3,)");
}

TEST_CASE("sparse_softmax_cross_entropy and accuracy: a sequence model's (B, T, K) logits are B*T rows",
          "[train][losses]") {
  // Keras's SparseCategoricalCrossentropy on (B, T, K) with labels (B, T): the mean over
  // every position, the same as the (B*T, K) rows; the gradient keeps the 3-D shape.
  const xq::tensor flat_logits = uniform({6, 4});
  const xq::tensor flat_labels = make({6}, {0, 3, 1, 1, 2, 0});
  xq::tensor seq_logits = flat_logits;
  seq_logits.reshape({2, 3, 4});
  xq::tensor seq_labels = flat_labels;
  seq_labels.reshape({2, 3});
  xq::var flat(flat_logits, true), seq(seq_logits, true);
  {
    xq::tape t;
    t.backward(xq::sparse_softmax_cross_entropy(flat, flat_labels));
  }
  float seq_loss = 0;
  {
    xq::tape t;
    const xq::var loss = xq::sparse_softmax_cross_entropy(seq, seq_labels);
    seq_loss = scalar(loss);
    t.backward(loss);
  }
  CHECK(seq_loss == scalar(xq::sparse_softmax_cross_entropy(xq::var(flat_logits), flat_labels)));
  REQUIRE(seq.grad().shape() == seq_logits.shape());
  for (std::size_t i = 0; i < 24; ++i) CHECK(seq.grad().data()[i] == flat.grad().data()[i]);
  xq::tensor with_one = flat_labels;
  with_one.reshape({2, 3, 1});
  CHECK(scalar(xq::sparse_softmax_cross_entropy(xq::var(seq_logits), with_one)) == seq_loss);
  CHECK(xq::sparse_categorical_accuracy(seq_logits, seq_labels) ==
        xq::sparse_categorical_accuracy(flat_logits, flat_labels));
  CHECK(message_of([&] { xq::sparse_categorical_accuracy(seq_logits, flat_labels); }) ==
        "sparse_categorical_accuracy: expected labels of shape (2, 3) for scores of shape (2, 3, 4), given (6,)");
}

TEST_CASE("binary_cross_entropy: Keras's clipping and the stable logits form", "[train][losses]") {
  // Keras BinaryCrossentropy(): 8.200037956237793 (0 and 1 are clipped to 1e-7 and 1 - 1e-7).
  const float from_probs = scalar(xq::binary_cross_entropy(xq::var(probs), binary));
  CHECK(from_probs == Approx(8.200037956237793).epsilon(1e-6));
  double want = 0;
  const double eps = 1e-7, hi = 1.0f - 1e-7f;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    const double p = std::min(std::max(static_cast<double>(probs.data()[i]), eps), hi);
    const double z = binary.data()[i];
    want -= z * std::log(p) + (1 - z) * std::log(1 - p);
  }
  CHECK(from_probs == Approx(want / 6).epsilon(1e-7));

  // Keras BinaryCrossentropy(from_logits=True): 0.21197478473186493; 100 and -100 stay finite.
  const xq::tensor logits = make({3, 2}, {3, -2, 100, -100, 0, 0.7f});
  const float from_logits = scalar(xq::binary_cross_entropy(xq::var(logits), binary, true));
  CHECK(from_logits == Approx(0.21197478473186493).epsilon(1e-6));
  want = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const double x = logits.data()[i], z = binary.data()[i];
    want += std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::abs(x)));
  }
  CHECK(from_logits == Approx(want / 6).epsilon(1e-7));
}

TEST_CASE("binary_cross_entropy: gradients", "[train][losses]") {
  xq::var p(uniform({4, 3}, 0.05f, 0.95f, 5), true);
  xq::var z(uniform({4, 3}, 0.0f, 1.0f, 6), true);  // soft targets, to check their gradient too
  check_gradients([&] { return xq::binary_cross_entropy(p, z); }, {p.state(), z.state()}, {}, "bce");
  xq::var x(uniform({4, 3}, -4, 4, 7), true);
  check_gradients([&] { return xq::binary_cross_entropy(x, z, true); }, {x.state(), z.state()}, {}, "bce logits");

  // Outside the clip range the probabilities get no gradient (TF's clip_by_value).
  xq::var clipped(make({1, 2}, {0.0f, 0.5f}), true);
  {
    xq::tape t;
    t.backward(xq::binary_cross_entropy(clipped, make({1, 2}, {1, 1})));
  }
  CHECK(clipped.grad()(0, 0) == 0.0f);
  CHECK(clipped.grad()(0, 1) == Approx(-1.0 / 0.5 / 2));
  CHECK_THROWS_AS(xq::binary_cross_entropy(p, make({3, 4}, std::vector<float>(12, 0))), xq::shape_error);
}

TEST_CASE("mean_squared_error", "[train][losses]") {
  const xq::tensor t = make({3, 2}, {0.5f, 0.25f, 1, -1, 0, 2});
  // Keras MeanSquaredError(): 1.568750023841858.
  CHECK(scalar(xq::mean_squared_error(xq::var(probs), t)) == Approx(1.568750023841858).epsilon(1e-7));
  xq::var pred(uniform({3, 4}, -1, 1, 8), true);
  xq::var target(uniform({3, 4}, -1, 1, 9), true);
  check_gradients([&] { return xq::mean_squared_error(pred, target); }, {pred.state(), target.state()}, {}, "mse");
  CHECK(message_of([&] { xq::mean_squared_error(pred, make({4, 3}, std::vector<float>(12, 0))); }) ==
        "mean_squared_error: expected targets of shape (3, 4) (the predictions' shape), given (4, 3)");
}

TEST_CASE("losses record nothing without a tape or under no_grad", "[train][losses]") {
  xq::var x(uniform({2, 3}), true);
  const xq::tensor labels = make({2}, {0, 1});
  CHECK_FALSE(xq::sparse_softmax_cross_entropy(x, labels).requires_grad());
  xq::tape t;
  {
    xq::no_grad off;
    CHECK_FALSE(xq::mean_squared_error(x, xq::tensor(uniform({2, 3}))).requires_grad());
    CHECK_FALSE(xq::binary_cross_entropy(x, xq::tensor(uniform({2, 3}, 0, 1))).requires_grad());
  }
  CHECK(t.size() == 0);
}

TEST_CASE("accuracy metrics and the running mean", "[train][metrics]") {
  // Keras sparse_categorical_accuracy: 0.5 (row 3 ties 4, 4: the first maximum, class 1, wins).
  CHECK(xq::sparse_categorical_accuracy(logits4, labels4) == 0.5);
  CHECK(xq::sparse_categorical_accuracy(logits4, make({4}, {0, 2, 0, 1})) == 1.0);
  CHECK(xq::sparse_categorical_accuracy(logits4, make({4, 1}, {0, 2, 0, 1})) == 1.0);
  CHECK_THROWS_AS(xq::sparse_categorical_accuracy(logits4, make({3}, {0, 0, 0})), xq::shape_error);
  // Keras binary_accuracy: 0.5.
  CHECK(xq::binary_accuracy(probs, binary) == 0.5);
  CHECK(xq::binary_accuracy(make({2}, {-0.5f, 2}), make({2}, {0, 1}), 0.0f) == 1.0);  // logits: threshold 0

  xq::running_mean m;
  CHECK(m.empty());
  CHECK(m.mean() == 0.0);
  m.add(1.0, 32);
  m.add(0.5, 8);  // a last partial batch counts for its size
  CHECK(m.mean() == Approx(0.9));
  CHECK(m.weight() == 40);
  m.reset();
  CHECK(m.empty());
}
