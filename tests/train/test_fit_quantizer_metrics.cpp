// Quantizer metrics of a whole model (quantizers/model_metrics.hpp) and how fit reports
// them: reset at each epoch's start, read at its end into epoch_record, printed after the
// epoch line in both progress styles; the figures are the quantizers' own.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/quantizers/model_quantizers.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/dataset.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/sgd.hpp>
#include <xquant/core/random.hpp>

namespace {

using figures = std::vector<std::pair<std::string, double>>;

// Random inputs of scale 3 (so a dense layer's outputs often leave ste_sign's clip of
// 1) and random labels among 3 classes.
xq::dataset labelled_noise(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_int_distribution<int> label(0, 2);
  xq::dataset d{xq::tensor::from_shape({n, 4}), xq::tensor::from_shape({n})};
  for (auto& v : d.inputs) v = normal(rng);
  for (auto& v : d.targets) v = static_cast<float>(label(rng));
  return d;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

const double* find(const figures& f, const std::string& name) {
  for (const auto& [n, v] : f)
    if (n == name) return &v;
  return nullptr;
}

}  // namespace

TEST_CASE("fit reports flip ratio and gradient flow per epoch, the quantizer's own figures",
          "[train][fit][quantizer_metrics]") {
  xq::set_seed(3);
  xq::sequential model(xq::dense(8), xq::ste_sign(), xq::dense(3));
  model.get<1>().metrics(xq::quantizer_metric::flip_ratio | xq::quantizer_metric::gradient_flow);
  xq::build(model, {1, 4});
  xq::sgd opt(xq::trainable_parameters(model), {0.5f});
  const xq::dataset train = labelled_noise(64, 1), test = labelled_noise(16, 2);

  std::ostringstream out;
  xq::fit_options o;
  o.epochs = 3;
  o.batch_size = 8;
  o.max_steps_per_epoch = 5;
  o.validation = &test;  // evaluation must not touch the figures
  o.progress.stream = &out;
  o.progress.plain_updates = 0;  // epoch lines only
  std::vector<figures> own;      // what the quantizer's metric objects say at each epoch's end
  std::vector<std::size_t> counts;
  o.on_epoch_end = [&](const xq::epoch_record&) {
    const auto& q = model.get<1>();
    own.push_back({{"flip_ratio/ste_sign", q.flip_ratio_metric()->result()},
                   {"gradient_flow/ste_sign", q.gradient_flow_metric()->result()}});
    counts.push_back(q.gradient_flow_metric()->count());
    counts.push_back(static_cast<std::size_t>(q.flip_ratio_metric()->count()));
  };
  const xq::fit_history h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);

  REQUIRE(h.size() == 3);
  double flips = 0.0;
  for (std::size_t e = 0; e < 3; ++e) {
    INFO("epoch " << e + 1);
    const figures& f = h.epochs[e].quantizer_metrics;
    REQUIRE(f.size() == 2);
    CHECK(f[0].first == "flip_ratio/ste_sign");
    CHECK(f[1].first == "gradient_flow/ste_sign");
    CHECK(f == own[e]);
    for (const auto& [name, value] : f) {
      CHECK(value >= 0.0);
      CHECK(value <= 1.0);
    }
    // inputs of scale 3: many pre-activations outside [-1, 1] get no gradient
    CHECK(f[1].second < 1.0);
    CHECK(f[1].second > 0.0);
    flips += f[0].second;
    // reset at each epoch's start: only this epoch's 5 steps are in the figures
    CHECK(counts[2 * e] == 5);
    CHECK(counts[2 * e + 1] == 5);
  }
  CHECK(flips > 0.0);  // lr 0.5 moves the first layer enough to flip some signs

  // Progress: each epoch line is followed by one indented line per metric.
  const auto all = lines_of(out.str());
  REQUIRE(all.size() == 9);
  const std::regex flip_line(R"(    flip_ratio/ste_sign:     \d\.\d{4})");
  const std::regex flow_line(R"(    gradient_flow/ste_sign:  \d\.\d{4})");
  for (std::size_t e = 0; e < 3; ++e) {
    INFO(out.str());
    CHECK(all[3 * e].rfind("epoch " + std::to_string(e + 1) + "/3 - step 5/5 - loss: ", 0) == 0);
    CHECK(all[3 * e].find("val_loss") != std::string::npos);
    CHECK(std::regex_match(all[3 * e + 1], flip_line));
    CHECK(std::regex_match(all[3 * e + 2], flow_line));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", h.epochs[e].quantizer_metrics[1].second);
    CHECK(all[3 * e + 2].substr(all[3 * e + 2].size() - 6) == buf);
  }
}

TEST_CASE("fit with quant layers: metrics of every quantizer, named by path, terminal style too",
          "[train][fit][quantizer_metrics][quant]") {
  xq::set_seed(5);
  xq::sequential model(xq::dense(6), xq::quant_dense(5, xq::ste_sign(), xq::ste_sign()), xq::ste_sign(),
                       xq::dense(3));
  xq::build(model, {1, 4});
  CHECK(xq::count_quantizers(model) == 3);
  CHECK(xq::quantizer_metrics(model).empty());  // none turned on
  xq::enable_quantizer_metrics(model, xq::quantizer_metric::flip_ratio | xq::quantizer_metric::gradient_flow);

  std::vector<std::string> paths;
  xq::for_each_quantizer(model, [&](const auto& q) { paths.push_back(q.path()); });
  CHECK(paths == std::vector<std::string>{"quant_dense/input_quantizer", "quant_dense/kernel_quantizer", "ste_sign"});

  xq::adam opt(xq::trainable_parameters(model), {0.01f});
  const xq::dataset train = labelled_noise(40, 3);
  std::ostringstream out;
  xq::fit_options o;
  o.epochs = 2;
  o.batch_size = 10;
  o.progress.stream = &out;
  o.progress.style = xq::progress_style::terminal;
  const auto h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);

  const std::vector<std::string> names = {
      "flip_ratio/quant_dense/input_quantizer", "gradient_flow/quant_dense/input_quantizer",
      "flip_ratio/quant_dense/kernel_quantizer", "gradient_flow/quant_dense/kernel_quantizer",
      "flip_ratio/ste_sign", "gradient_flow/ste_sign"};
  for (const auto& r : h.epochs) {
    REQUIRE(r.quantizer_metrics.size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      CHECK(r.quantizer_metrics[i].first == names[i]);
      CHECK(r.quantizer_metrics[i].second >= 0.0);
      CHECK(r.quantizer_metrics[i].second <= 1.0);
    }
  }
  CHECK(h.last().quantizer_metrics == xq::quantizer_metrics(model));
  const auto& qd = model.get<1>();
  CHECK(*find(h.last().quantizer_metrics, "gradient_flow/quant_dense/kernel_quantizer") ==
        qd.kernel_quantizer.gradient_flow_metric()->result());
  CHECK(*find(h.last().quantizer_metrics, "flip_ratio/quant_dense/input_quantizer") ==
        qd.input_quantizer.flip_ratio_metric()->result());
  CHECK(*find(h.last().quantizer_metrics, "gradient_flow/quant_dense/kernel_quantizer") > 0.0);

  // Terminal: each epoch's line ends with '\n', then the metric lines, values aligned.
  const std::string text = out.str();
  for (const auto& n : names) CHECK(text.find("\n    " + n + ":") != std::string::npos);
  const auto all = lines_of(text);
  std::size_t column = 0;
  for (const auto& line : all) {
    if (line.rfind("    ", 0) != 0) continue;
    const std::size_t value_at = line.find_first_not_of(' ', line.find(':') + 1);
    if (column == 0) column = value_at;
    CHECK(value_at == column);
  }
  CHECK(column > 0);

  xq::reset_quantizer_metrics(model);
  for (const auto& [name, value] : xq::quantizer_metrics(model)) CHECK(value == 0.0);
  xq::enable_quantizer_metrics(model, xq::quantizer_metric::none);
  CHECK(xq::quantizer_metrics(model).empty());
}

TEST_CASE("fit on a model without quantizers reports no quantizer metrics and prints nothing more",
          "[train][fit][quantizer_metrics]") {
  xq::set_seed(2);
  xq::sequential model(xq::dense(4), xq::dense(3));
  xq::build(model, {1, 4});
  CHECK(xq::count_quantizers(model) == 0);
  xq::sgd opt(xq::trainable_parameters(model), {0.1f});
  std::ostringstream out;
  xq::fit_options o;
  o.epochs = 2;
  o.batch_size = 16;
  o.progress.stream = &out;
  o.progress.plain_updates = 0;
  const auto h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, labelled_noise(32, 4), o);
  CHECK(h.last().quantizer_metrics.empty());
  CHECK(lines_of(out.str()).size() == 2);

  // a quantizer without metrics on: nothing either
  xq::sequential with_sign(xq::dense(4), xq::ste_sign(), xq::dense(3));
  xq::build(with_sign, {1, 4});
  xq::sgd opt2(xq::trainable_parameters(with_sign), {0.1f});
  std::ostringstream out2;
  o.progress.stream = &out2;
  const auto h2 = xq::fit(with_sign, opt2, xq::sparse_softmax_cross_entropy, labelled_noise(32, 4), o);
  CHECK(h2.last().quantizer_metrics.empty());
  CHECK(lines_of(out2.str()).size() == 2);
}
