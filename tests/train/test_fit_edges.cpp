// Issue 34: fit at its edges. A batch size near SIZE_MAX (the step count wrapped to 0:
// nothing trained, nothing reported), batch size 0 (item 5); the default metric chosen from
// the loss (item 15); progress into a log (item 16).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/train/dataset.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/progress.hpp>
#include <xquant/train/sgd.hpp>

namespace {

// n rows of 4 inputs, labels 0..2.
xq::dataset small_classification(std::size_t n) {
  xq::dataset d{xq::tensor::from_shape({n, 4}), xq::tensor::from_shape({n})};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < 4; ++j) d.inputs(i, j) = static_cast<float>((i * 7 + j * 3) % 11) / 11.0f - 0.5f;
    d.targets(i) = static_cast<float>(i % 3);
  }
  return d;
}

xq::fit_options quiet(std::size_t epochs) {
  xq::fit_options o;
  o.epochs = epochs;
  o.verbose = false;
  return o;
}

}  // namespace

TEST_CASE("batch_count: a batch larger than the data is one batch, never zero", "[train][dataset][issue34]") {
  constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();
  CHECK(xq::batch_count(5, huge) == 1);
  CHECK(xq::batch_count(5, huge - 1) == 1);
  CHECK(xq::batch_count(1, huge) == 1);
  CHECK(xq::batch_count(0, huge) == 0);
  CHECK(xq::batch_count(huge, huge) == 1);
  CHECK(xq::batch_count(huge, 1) == huge);
  CHECK(xq::batch_count(10, 3) == 4);
  CHECK(xq::batch_count(9, 3) == 3);
  CHECK_THROWS_WITH(xq::batch_count(5, 0), Catch::Contains("batch_size >= 1") && Catch::Contains("batch_size = 0"));
}

TEST_CASE("fit with batch_size SIZE_MAX trains on the whole dataset as one batch", "[train][fit][issue34]") {
  const xq::dataset train = small_classification(20);
  xq::set_seed(3);
  xq::dense model(3);
  xq::build(model, {1, 4});
  const xq::tensor before = model.kernel()->value;
  xq::sgd opt(xq::trainable_parameters(model), {0.1f});
  xq::fit_options o = quiet(2);
  o.batch_size = std::numeric_limits<std::size_t>::max();
  const xq::fit_history h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
  REQUIRE(h.size() == 2);
  CHECK(h.last().steps == 1);
  CHECK(h.last().samples == 20);
  CHECK(opt.iterations() == 2);
  const bool changed = model.kernel()->value != before;
  CHECK(changed);
}

TEST_CASE("fit refuses batch_size 0, saying what is valid", "[train][fit][issue34]") {
  const xq::dataset train = small_classification(6);
  xq::dense model(3);
  xq::build(model, {1, 4});
  xq::sgd opt(xq::trainable_parameters(model));
  xq::fit_options o = quiet(1);
  o.batch_size = 0;
  CHECK_THROWS_WITH(xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o),
                    Catch::Contains("xq::fit") && Catch::Contains("batch_size >= 1") &&
                        Catch::Contains("given batch_size = 0"));
}

// Issue 34, item 15: the default metric comes from the loss, as Keras resolves "accuracy":
// a regression reports no accuracy (it used to fail at the first batch with "expected labels
// of shape ..."), the cross-entropies their accuracy.
TEST_CASE("fit's default metric is chosen from the loss", "[train][fit][metric][issue34]") {
  const std::size_t n = 12;
  xq::set_seed(5);
  SECTION("mean squared error: no metric, regression targets of any shape") {
    // A dense layer on sequences (N, 6, 4) -> (N, 6, 2), regression targets (N, 6, 2).
    xq::dataset seq{xq::tensor::from_shape({n, 6, 4}), xq::tensor::from_shape({n, 6, 2})};
    for (std::size_t i = 0; i < seq.inputs.size(); ++i) seq.inputs.data()[i] = static_cast<float>(i % 5) * 0.1f;
    for (std::size_t i = 0; i < seq.targets.size(); ++i) seq.targets.data()[i] = static_cast<float>(i % 7) * 0.3f;
    xq::dense model(2);
    xq::build(model, {1, 6, 4});
    xq::sgd opt(xq::trainable_parameters(model), {0.01f});
    const xq::fit_history h = xq::fit(model, opt, xq::mean_squared_error, seq, quiet(1));
    CHECK(h.metric_name.empty());
    CHECK_FALSE(h.last().metric.has_value());
    const xq::evaluation e = xq::evaluate(model, xq::mean_squared_error, seq);
    CHECK_FALSE(e.metric.has_value());
    CHECK(std::isfinite(e.loss));
  }
  SECTION("sparse softmax cross-entropy: sparse categorical accuracy") {
    const xq::dataset d = small_classification(n);
    xq::dense model(3);
    xq::build(model, {1, 4});
    xq::sgd opt(xq::trainable_parameters(model), {0.01f});
    const xq::fit_history h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, d, quiet(1));
    CHECK(h.metric_name == "accuracy");
    REQUIRE(h.last().metric.has_value());
    const xq::evaluation e = xq::evaluate(model, xq::sparse_softmax_cross_entropy, d);
    REQUIRE(e.metric.has_value());
    CHECK(*e.metric == xq::sparse_categorical_accuracy(xq::predict(model, d.inputs), d.targets));
  }
  SECTION("binary cross-entropy: binary accuracy") {
    xq::dataset d{xq::tensor::from_shape({n, 4}), xq::tensor::from_shape({n, 1})};
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < 4; ++j) d.inputs(i, j) = static_cast<float>((i + j) % 3) * 0.2f;
      d.targets(i, 0) = i % 3 == 0 ? 0.0f : 1.0f;
    }
    xq::dense model(1);
    xq::build(model, {1, 4});
    model.kernel()->value.fill(0.0f);
    model.bias()->value.fill(0.9f);  // every prediction 0.9: binary accuracy 8/12 (sparse categorical: 4/12)
    const xq::evaluation e = xq::evaluate(model, xq::binary_cross_entropy, d);
    REQUIRE(e.metric.has_value());
    CHECK(*e.metric == Approx(8.0 / 12.0));
  }
  SECTION("a loss xquant does not know, on regression shapes: an error that says how to choose") {
    xq::dataset d{xq::tensor::from_shape({n, 4}), xq::tensor::from_shape({n, 2})};
    d.inputs.fill(0.5f);
    d.targets.fill(1.0f);
    xq::dense model(2);
    xq::build(model, {1, 4});
    xq::sgd opt(xq::trainable_parameters(model), {0.01f});
    auto my_loss = [](const xq::var& y, const xq::var& t) { return xq::mean_squared_error(y, t); };
    CHECK_THROWS_WITH(xq::fit(model, opt, my_loss, d, quiet(1)),
                      Catch::Contains("default metric") && Catch::Contains("fit_options::metric = nullptr") &&
                          Catch::Contains("outputs (12, 2) and targets (12, 2)"));
    xq::fit_options none = quiet(1);
    none.metric = nullptr;
    CHECK_NOTHROW(xq::fit(model, opt, my_loss, d, none));
  }
}

// Issue 34, item 16: progress into a log (no terminal) is one line per epoch, as Keras's;
// the style can be forced either way.
TEST_CASE("fit's progress into a log file: one line per epoch, either style on request", "[train][progress][issue34]") {
  const xq::dataset train = small_classification(30);
  xq::dense model(3);
  xq::build(model, {1, 4});
  xq::sgd opt(xq::trainable_parameters(model), {0.01f});
  xq::fit_options o;
  o.epochs = 3;
  o.batch_size = 1;  // 30 steps an epoch
  const auto count = [](const std::string& text, char c) {
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), c));
  };
  SECTION("not a terminal: one line per epoch") {
    std::ostringstream log;
    o.progress.stream = &log;
    xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
    const std::string text = log.str();
    INFO(text);
    CHECK(count(text, '\n') == 3);
    CHECK(count(text, '\r') == 0);
    CHECK(text.find("epoch 1/3 - step 30/30 - loss: ") == 0);
  }
  SECTION("forced to the terminal style") {
    std::ostringstream log;
    o.progress.stream = &log;
    o.progress.style = xq::progress_style::terminal;
    o.progress.refresh_seconds = 0;
    xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
    CHECK(count(log.str(), '\n') == 3);
    CHECK(count(log.str(), '\r') >= 30 * 3);
  }
  SECTION("plain, with intermediate lines on request") {
    std::ostringstream log;
    o.progress.stream = &log;
    o.progress.style = xq::progress_style::plain;
    o.progress.plain_updates = 3;  // every 10 steps: steps 10 and 20, then the epoch's end
    xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
    CHECK(count(log.str(), '\n') == 3 * 3);
  }
}
