// fit / evaluate / predict on a small dense model: it learns a separable problem,
// the same seed gives bit-identical weights, the plain progress format, inference
// mode and no_grad in evaluate, batching (seeded order, gather, partial batches).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/kernels/threads.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/dataset.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/sgd.hpp>
#include <xquant/core/random.hpp>

#include "../test_support.hpp"

namespace {

// A ReLU written here (the layer library's own is tested elsewhere).
xq::var test_relu(const xq::var& x) {
  xq::tensor y = x.value();
  for (auto& v : y) v = std::max(v, 0.0f);
  return xq::make_result(std::move(y), xq::needs_grad(x), [x](const xq::tensor& dy) {
    xq::tensor dx = dy;
    for (std::size_t i = 0; i < dx.size(); ++i)
      if (!(x.value().data()[i] > 0.0f)) dx.data()[i] = 0.0f;
    xq::add_grad(x, std::move(dx));
  });
}

struct mlp {
  xq::dense hidden{16}, head{3};
  XQ_CHILDREN(hidden, head)
  xq::var operator()(const xq::var& x) { return head(test_relu(hidden(x))); }
};

// Records the mode and the tape state of each call.
struct probe {
  xq::dense d{3};
  std::vector<bool> training, recording;
  XQ_CHILDREN(d)
  xq::var operator()(const xq::var& x) {
    training.push_back(xq::is_training());
    recording.push_back(xq::recording_tape() != nullptr);
    return d(x);
  }
};

// Three classes in 4-d, label = argmax(x · w*), points near a boundary dropped:
// a linear model can separate them exactly.
xq::dataset separable(std::size_t n, unsigned seed) {
  const float w[4][3] = {{1.0f, -0.5f, 0.2f}, {-0.3f, 1.0f, 0.4f}, {0.5f, 0.3f, -1.0f}, {0.2f, -0.8f, 0.6f}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  xq::dataset d{xq::tensor::from_shape({n, 4}), xq::tensor::from_shape({n})};
  for (std::size_t i = 0; i < n;) {
    float x[4], s[3] = {0, 0, 0};
    for (float& v : x) v = u(rng);
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 4; ++j) s[k] += x[j] * w[j][k];
    const int best = static_cast<int>(std::max_element(s, s + 3) - s);
    float second = -1e9f;
    for (int k = 0; k < 3; ++k)
      if (k != best) second = std::max(second, s[k]);
    if (s[best] - second < 0.15f) continue;  // keep a margin
    for (int j = 0; j < 4; ++j) d.inputs(i, j) = x[j];
    d.targets(i) = static_cast<float>(best);
    ++i;
  }
  return d;
}

xq::fit_options quiet(std::size_t epochs, std::uint32_t seed = 1) {
  xq::fit_options o;
  o.epochs = epochs;
  o.seed = seed;
  o.verbose = false;
  return o;
}

template <class Model>
std::vector<xq::tensor> weights(Model& m) {
  std::vector<xq::tensor> out;
  for (auto& p : xq::parameters(m)) out.push_back(p->value);
  return out;
}


}  // namespace

TEST_CASE("fit learns a separable problem", "[train][fit]") {
  const xq::dataset train = separable(512, 1), test = separable(256, 2);
  xq::set_seed(42);
  mlp model;
  xq::build(model, {1, 4});
  xq::adam opt(xq::trainable_parameters(model), {0.01f});
  xq::fit_options o = quiet(12);
  o.validation = &test;
  const xq::fit_history h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);

  REQUIRE(h.size() == 12);
  CHECK(h.metric_name == "accuracy");
  CHECK(h.epochs.front().loss > 2 * h.last().loss);
  CHECK(*h.last().metric > 0.9);
  CHECK(*h.last().val_metric > 0.9);
  CHECK(h.last().val_loss.has_value());
  CHECK(h.last().steps == 16);
  CHECK(h.last().samples == 512);
  CHECK(h.last().seconds > 0);
  CHECK(h.last().samples_per_second > 0);
  CHECK(opt.iterations() == 12 * 16);
  CHECK(model.hidden.kernel()->name() == "hidden/kernel");  // fit set the paths
  CHECK_FALSE(model.hidden.kernel()->has_grad());           // zero_grad after the last step

  const xq::evaluation e = xq::evaluate(model, xq::sparse_softmax_cross_entropy, test);
  CHECK(e.samples == 256);
  CHECK(e.loss == *h.last().val_loss);  // the same model, data and batches
  CHECK(e.metric == h.last().val_metric);
  const xq::evaluation e64 = xq::evaluate(model, xq::sparse_softmax_cross_entropy, test, 64);
  CHECK(e64.loss == Approx(e.loss).epsilon(1e-6));  // batch means grouped differently
  CHECK(*e64.metric == *e.metric);
  UNSCOPED_INFO("final: loss " << h.last().loss << ", accuracy " << *h.last().metric << ", val accuracy "
                               << *h.last().val_metric);
}

TEST_CASE("the same seed gives bit-identical weights, another seed others", "[train][fit]") {
  const xq::dataset train = separable(200, 3);
  auto run = [&](std::uint32_t seed) {
    xq::set_seed(9);  // the same initial weights every time
    mlp model;
    xq::build(model, {1, 4});
    xq::sgd opt(xq::trainable_parameters(model), {0.05f, 0.9});
    xq::fit_options o = quiet(3, seed);
    o.batch_size = 16;
    xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
    return weights(model);
  };
  const auto a = run(7), b = run(7), c = run(8);
  CHECK(xq::testing::same_bits(a, b));
  CHECK_FALSE(xq::testing::same_bits(a, c));
}

TEST_CASE("fit's adaptive thread policy trains to the fixed policy's bits in deterministic mode",
          "[train][fit][threads]") {
  const xq::deterministic_mode on;
  const xq::dataset train = separable(512, 4);
  auto run = [&](xq::thread_policy policy) {
    xq::set_seed(9);
    mlp model;
    xq::build(model, {1, 4});
    xq::adam opt(xq::trainable_parameters(model), {0.01f});
    xq::fit_options o = quiet(3, 5);
    o.batch_size = 8;  // 64 steps per epoch: the governor probes 2 and 1 threads, then keeps one
    o.threads = policy;
    xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
    return weights(model);
  };
  CHECK(xq::testing::same_bits(run(xq::thread_policy::fixed), run(xq::thread_policy::adaptive)));
  CHECK(xq::testing::same_bits(run(xq::thread_policy::fixed), run(xq::thread_policy::automatic)));
}

TEST_CASE("fit's plain progress: whole lines with every field", "[train][fit][progress]") {
  const xq::dataset train = separable(100, 4), test = separable(40, 5);
  xq::set_seed(1);
  mlp model;
  xq::build(model, {1, 4});
  xq::adam opt(xq::trainable_parameters(model));
  std::ostringstream out;
  xq::fit_options o;
  o.epochs = 2;
  o.batch_size = 10;  // 10 steps: a line every step (10 per epoch), the last one an epoch end
  o.validation = &test;
  o.progress.stream = &out;  // not a terminal: plain lines
  o.progress.plain_updates = 10;  // intermediate lines too (the default is epoch ends only)
  xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);

  const std::string text = out.str();
  CHECK(text.find('\r') == std::string::npos);
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  REQUIRE(all.size() == 20);
  const std::regex step_line(
      R"(epoch [12]/2 - step [1-9]/10 - loss: \d+\.\d{4} - accuracy: \d\.\d{4} - \d+ samples/s - ETA \S+)");
  const std::regex end_line(
      R"(epoch [12]/2 - step 10/10 - loss: \d+\.\d{4} - accuracy: \d\.\d{4} - \d+ samples/s - \S+s)"
      R"( - val_loss: \d+\.\d{4} - val_accuracy: \d\.\d{4})");
  for (std::size_t i = 0; i < all.size(); ++i) {
    INFO("line " << i << ": " << all[i]);
    CHECK(std::regex_match(all[i], i % 10 == 9 ? end_line : step_line));
  }
  CHECK(all[0].rfind("epoch 1/2 - step 1/10 - ", 0) == 0);
  CHECK(all[19].rfind("epoch 2/2 - step 10/10 - ", 0) == 0);

  SECTION("no metric, fewer intermediate lines") {
    std::ostringstream out2;
    o.metric = nullptr;
    o.validation = nullptr;
    o.batch_size = 5;              // 20 steps
    o.progress.plain_updates = 4;  // every 5 steps
    o.progress.stream = &out2;
    const auto h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
    CHECK_FALSE(h.last().metric.has_value());
    const std::regex no_metric(R"(epoch [12]/2 - step (5|10|15|20)/20 - loss: \d+\.\d{4} - \d+ samples/s - (ETA \S+|\S+s))");
    std::istringstream l2(out2.str());
    std::size_t n = 0;
    while (std::getline(l2, line)) {
      INFO(line);
      CHECK(std::regex_match(line, no_metric));
      ++n;
    }
    CHECK(n == 8);
  }
}

TEST_CASE("progress on a terminal redraws one line per epoch", "[train][progress]") {
  std::ostringstream out;
  xq::progress_options po;
  po.stream = &out;
  po.style = xq::progress_style::terminal;
  po.refresh_seconds = 0;
  xq::progress bar(3, 4, "accuracy", po);
  CHECK(bar.style() == xq::progress_style::terminal);
  bar.begin_epoch(1);
  for (std::size_t s = 1; s <= 4; ++s) bar.update(s, s * 8, 1.0 / static_cast<double>(s), 0.5);
  bar.end_epoch(32, 0.25, 0.5, 1.5, 0.3, 0.4);
  const std::string text = out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK(std::count(text.begin(), text.end(), '\r') == 5);
  CHECK(text.find("Epoch 1/3 - 2/4 [===============>..............] - loss: 0.5000 - accuracy: 0.5000") !=
        std::string::npos);
  CHECK(text.find("ETA") != std::string::npos);
  CHECK(text.find("[==============================] - loss: 0.2500 - accuracy: 0.5000") != std::string::npos);
  CHECK(text.find("1.5s - val_loss: 0.3000 - val_accuracy: 0.4000\n") != std::string::npos);

  std::ostringstream silent_out;
  xq::progress_options so;
  so.stream = &silent_out;
  so.style = xq::progress_style::silent;
  xq::progress silent(1, 1, "accuracy", so);
  silent.begin_epoch(1);
  silent.update(1, 1, 0.5);
  silent.end_epoch(1, 0.5, {}, 0.1);
  CHECK(silent_out.str().empty());
  // automatic: a string stream is no terminal.
  xq::progress_options ao;
  ao.stream = &silent_out;
  CHECK(xq::progress(1, 1, "", ao).style() == xq::progress_style::plain);
}

TEST_CASE("fit trains in training mode on a tape, evaluate and predict record nothing", "[train][fit]") {
  const xq::dataset data = separable(20, 6);
  probe model;
  xq::build(model, {1, 4});
  model.training.clear();
  model.recording.clear();
  xq::sgd opt(xq::trainable_parameters(model));
  xq::fit_options o = quiet(1);
  o.batch_size = 8;
  xq::fit(model, opt, xq::sparse_softmax_cross_entropy, data, o);
  CHECK(model.training == std::vector<bool>{true, true, true});
  CHECK(model.recording == std::vector<bool>{true, true, true});
  CHECK_FALSE(xq::is_training());  // restored

  model.training.clear();
  model.recording.clear();
  xq::tape outer;  // a tape alive around evaluate: nothing may land on it
  xq::training_mode on(true);
  const auto e = xq::evaluate(model, xq::sparse_softmax_cross_entropy, data, 8);
  CHECK(outer.size() == 0);
  CHECK(model.training == std::vector<bool>{false, false, false});
  CHECK(model.recording == std::vector<bool>{false, false, false});
  CHECK(xq::is_training());  // restored
  CHECK(e.samples == 20);

  const xq::tensor out = xq::predict(model, data.inputs, 8);
  CHECK(outer.size() == 0);
  REQUIRE(out.shape() == xq::tensor::shape_type{20, 3});
  xq::no_grad off;
  xq::training_mode inference(false);
  const xq::var direct = model(xq::var(data.inputs));
  CHECK(std::memcmp(out.data(), direct.value().data(), out.size() * sizeof(float)) == 0);
  CHECK(xq::predict(model, data.inputs, 100).shape() == out.shape());  // one batch larger than the data
}

TEST_CASE("batches: seeded order, gathered rows, the last partial batch kept", "[train][dataset]") {
  std::mt19937 a(5), b(5), c(6);
  const auto oa = xq::shuffled_order(10, a), ob = xq::shuffled_order(10, b), oc = xq::shuffled_order(10, c);
  CHECK(oa == ob);
  CHECK(oa != oc);
  std::vector<std::size_t> sorted = oa;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == xq::sequential_order(10));
  // Fisher-Yates on the engine's raw 32-bit outputs: the same order on every platform
  // (this one recomputed with numpy's MT19937 seeded the same way).
  std::mt19937 fixed(5);
  CHECK(xq::shuffled_order(5, fixed) == std::vector<std::size_t>{0, 3, 4, 2, 1});

  xq::dataset d{xq::tensor::from_shape({5, 2, 3}), xq::tensor::from_shape({5})};
  for (std::size_t i = 0; i < d.inputs.size(); ++i) d.inputs.data()[i] = static_cast<float>(i);
  for (std::size_t i = 0; i < 5; ++i) d.targets(i) = static_cast<float>(10 * i);
  CHECK(d.size() == 5);
  CHECK(xq::dataset{}.size() == 0);
  const std::vector<std::size_t> order{4, 1, 3, 0, 2};
  const xq::batch first = xq::make_batch(d, order, 0, 2), last = xq::make_batch(d, order, 4, 2);
  REQUIRE(first.inputs.shape() == xq::tensor::shape_type{2, 2, 3});
  CHECK(first.inputs(0, 0, 0) == 24.0f);
  CHECK(first.inputs(1, 1, 2) == 11.0f);
  CHECK(first.targets(0) == 40.0f);
  CHECK(last.size() == 1);  // kept, partial
  CHECK(last.targets(0) == 20.0f);
  CHECK(xq::batch_count(5, 2) == 3);
  CHECK(xq::batch_count(4, 2) == 2);

  // fit: 70 samples in batches of 32 -> 3 steps, all 70 samples; max_steps_per_epoch caps it.
  const xq::dataset train = separable(70, 7);
  xq::dense model(3);
  xq::build(model, {1, 4});
  xq::sgd opt(xq::trainable_parameters(model));
  auto h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, quiet(1));
  CHECK(h.last().steps == 3);
  CHECK(h.last().samples == 70);
  xq::fit_options capped = quiet(2);
  capped.max_steps_per_epoch = 2;
  h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, capped);
  CHECK(h.last().steps == 2);
  CHECK(h.last().samples == 64);
  CHECK(opt.iterations() == 3 + 4);
}

TEST_CASE("fit: callbacks, early stopping, errors", "[train][fit]") {
  const xq::dataset train = separable(40, 8);
  xq::dense model(3);
  xq::build(model, {1, 4});
  xq::sgd opt(xq::trainable_parameters(model));

  std::vector<std::size_t> seen;
  xq::fit_options o = quiet(4);
  o.on_epoch_end = [&](const xq::epoch_record& r) { seen.push_back(r.epoch); };
  auto h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
  CHECK(seen == std::vector<std::size_t>{1, 2, 3, 4});
  CHECK_FALSE(h.stopped_early);

  o.on_epoch_end = [](const xq::epoch_record& r) { return r.epoch < 2; };  // stop after epoch 2
  h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
  CHECK(h.size() == 2);
  CHECK(h.stopped_early);

  // A loss that is not one number.
  auto not_scalar = [](const xq::var& out, const xq::var&) { return out; };
  CHECK_THROWS_AS(xq::fit(model, opt, not_scalar, train, quiet(1)), xq::argument_error);
  // Targets that do not match the inputs.
  const xq::dataset bad{train.inputs, xq::tensor::from_shape({39})};
  try {
    xq::fit(model, opt, xq::sparse_softmax_cross_entropy, bad, quiet(1));
    FAIL("no exception");
  } catch (const xq::shape_error& e) {
    CHECK(std::string(e.what()) == "xq::fit: expected targets of shape (40, ...) for inputs of shape (40, 4), given (39,)");
  }
  xq::fit_options zero = quiet(1);
  zero.batch_size = 0;
  CHECK_THROWS_AS(xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, zero), xq::argument_error);
  // Any loss: mean squared error on one-hot targets, with no metric.
  xq::dataset onehot{train.inputs, xq::tensor::from_shape({40, 3})};
  onehot.targets.fill(0.0f);
  for (std::size_t i = 0; i < 40; ++i) onehot.targets(i, static_cast<std::size_t>(train.targets(i))) = 1.0f;
  xq::fit_options mse = quiet(2);
  mse.metric = nullptr;
  h = xq::fit(model, opt, xq::mean_squared_error, onehot, mse);
  CHECK(h.metric_name.empty());
  CHECK(std::isfinite(h.last().loss));
}
