// Inference on one model from several threads at once (issue 34, finding 1): predict,
// evaluate's forward and a plain call under no_grad, on a float CNN (batch norm, dropout)
// and on its quantized twins, give each thread the single-thread outputs, bit for bit.
// predict used to rename every layer (set_paths) on every call, so the threads raced on
// the layers' path strings (a heap use-after-free under ASan). This file is also part of
// the ThreadSanitizer test (tests/CMakeLists.txt, XQ_TSAN_TESTS).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstddef>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/dropout.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/max_pool2d.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/dataset.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/transform/quantize_model.hpp>

#include "../test_support.hpp"

namespace {

template <class Conv = xq::conv2d, class Norm = xq::batch_norm, class Relu = xq::relu, class Pool = xq::max_pool2d>
struct conv_block {
  Conv convolution{xq::conv2d(4, 3).padding(xq::padding::same).use_bias(false)};
  Norm norm;
  Relu act;
  Pool pool{xq::max_pool2d(2)};
  XQ_CHILDREN(convolution, norm, act, pool)
  xq::var operator()(const xq::var& x) { return pool(act(norm(convolution(x)))); }
};

using cnn = xq::sequential<conv_block<>, xq::flatten, xq::dense, xq::relu, xq::dropout, xq::dense>;

cnn make_cnn() {
  xq::set_seed(11);
  return cnn(conv_block<>(), xq::flatten(), xq::dense(8), xq::relu(), xq::dropout(0.25f, 5), xq::dense(3));
}

/// `n` 8x8 images, labels 0..2 by the brightest third of the rows.
xq::dataset stripes(std::size_t n) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 0.5f);
  xq::tensor x = xq::tensor::from_shape({n, 8, 8, 1});
  xq::tensor y = xq::tensor::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t label = i % 3;
    for (std::size_t r = 0; r < 8; ++r)
      for (std::size_t c = 0; c < 8; ++c) x(i, r, c, 0) = u(rng) + (r * 3 / 8 == label ? 0.5f : 0.0f);
    y(i) = float(label);
  }
  return xq::dataset{x, y};
}

template <class Model>
void train_briefly(Model& model, const xq::dataset& data) {
  xq::adam opt(xq::trainable_parameters(model), {1e-2f});
  xq::fit_options fo;
  fo.epochs = 1;
  fo.batch_size = 16;
  fo.verbose = false;
  xq::fit(model, opt, xq::sparse_softmax_cross_entropy, data, fo);
}

constexpr int threads = 4;
constexpr int repeats = 3;

/// Runs `f(thread index)` on `threads` threads at once (released together).
template <class F>
void on_threads(F&& f) {
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      f(t);
    });
  for (auto& th : pool) th.join();
}

/// predict, evaluate and a plain no_grad call of `model` on `threads` threads at once
/// give every thread the outputs of one thread alone, bit for bit.
template <class Model>
void check_concurrent_inference(Model& model, const xq::dataset& data) {
  const xq::tensor& x = data.input(0);
  const xq::tensor alone = xq::predict(model, x, 16);
  const xq::evaluation alone_eval = xq::evaluate(model, xq::sparse_softmax_cross_entropy, data, 16);
  xq::tensor alone_call;
  {
    xq::no_grad off;
    alone_call = model(xq::var(x)).value();
  }
  std::vector<int> same_predict(threads, 0), same_eval(threads, 0), same_call(threads, 0);
  on_threads([&](int t) {
    for (int r = 0; r < repeats; ++r) {
      same_predict[t] += xq::testing::same_bits(xq::predict(model, x, 16), alone) ? 1 : 0;
      const xq::evaluation e = xq::evaluate(model, xq::sparse_softmax_cross_entropy, data, 16);
      same_eval[t] += e.loss == alone_eval.loss && e.metric == alone_eval.metric ? 1 : 0;
      xq::no_grad off;
      same_call[t] += xq::testing::same_bits(model(xq::var(x)).value(), alone_call) ? 1 : 0;
    }
  });
  for (int t = 0; t < threads; ++t) {
    CAPTURE(t);
    CHECK(same_predict[t] == repeats);
    CHECK(same_eval[t] == repeats);
    CHECK(same_call[t] == repeats);
  }
}

}  // namespace

TEST_CASE("predict, evaluate and no_grad calls from several threads on one float model give the one-thread outputs",
          "[train][concurrency]") {
  const xq::dataset data = stripes(48);
  cnn model = make_cnn();
  xq::build(model, {1, 8, 8, 1});
  train_briefly(model, data);
  check_concurrent_inference(model, data);
}

TEST_CASE("predict and evaluate write nothing to a model whose layers have their paths", "[train][concurrency]") {
  // The strings are longer than the small-string buffer: renaming would replace their storage.
  const xq::dataset data = stripes(24);
  cnn model = make_cnn();
  xq::build(model, {1, 8, 8, 1});
  const std::string& path = model.get<0>().convolution.path();
  REQUIRE(path == "conv_block/convolution");
  const char* storage = path.data();
  xq::predict(model, data.input(0), 8);
  xq::evaluate(model, xq::sparse_softmax_cross_entropy, data, 8);
  CHECK(model.get<0>().convolution.path().data() == storage);
}

TEST_CASE("predict on several threads names the layers of a model whose paths are stale, once",
          "[train][concurrency]") {
  const xq::dataset data = stripes(24);
  cnn model = make_cnn();
  xq::build(model, {1, 8, 8, 1});
  xq::set_paths(model, "old");
  REQUIRE(model.get<0>().convolution.path() == "old/conv_block/convolution");
  std::vector<xq::tensor> out(threads);
  on_threads([&](int t) { out[t] = xq::predict(model, data.input(0), 8); });
  CHECK(model.get<0>().convolution.path() == "conv_block/convolution");
  for (int t = 1; t < threads; ++t) CHECK(xq::testing::same_bits(out[t], out[0]));
}

TEST_CASE("predict and evaluate from several threads on one quantized twin give the one-thread outputs",
          "[train][concurrency]") {
  const xq::dataset data = stripes(48);
  cnn model = make_cnn();
  xq::build(model, {1, 8, 8, 1});
  train_briefly(model, data);
  SECTION("NVIDIA's scheme, batch norm folded") {
    xq::quantize_options qo;
    qo.fold_batch_norm = true;
    auto qat = xq::quantize_model(model, qo, {1, 8, 8, 1});
    train_briefly(qat, data);
    check_concurrent_inference(qat, data);
  }
  SECTION("tfmot's scheme (moving-average ranges)") {
    xq::quantize_options qo;
    qo.scheme = xq::schemes::tfmot();
    auto qat = xq::quantize_model(model, qo, {1, 8, 8, 1});
    train_briefly(qat, data);
    check_concurrent_inference(qat, data);
  }
  SECTION("PyTorch's scheme (observers)") {
    xq::quantize_options qo;
    qo.scheme = xq::schemes::pytorch();
    auto qat = xq::quantize_model(model, qo, {1, 8, 8, 1});
    train_briefly(qat, data);
    check_concurrent_inference(qat, data);
  }
}
