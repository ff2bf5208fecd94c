#pragma once
// What the training-step benchmarks share (cnn_bench.cpp, binary_bench.cpp): seeded
// random data and one training step set up once, as fit runs it.

#include <array>
#include <cstddef>
#include <random>

#include <benchmark/benchmark.h>

#include <xquant/core/mode.hpp>
#include <xquant/core/model.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/losses.hpp>

namespace bench {

/// Uniform values in [low, high) from a seeded engine.
inline xq::tensor uniform_tensor(const xq::tensor::shape_type& shape, float low, float high, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(low, high);
  xq::tensor t = xq::tensor::from_shape(shape);
  for (auto& v : t) v = d(rng);
  return t;
}

/// n class labels in [0, 10).
inline xq::tensor random_labels(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  xq::tensor t = xq::tensor::from_shape({n});
  for (auto& v : t) v = static_cast<float>(rng() % 10);
  return t;
}

/// One training step of a model (forward, sparse softmax cross-entropy, backward, Adam) on
/// a fixed random batch of `image`-shaped inputs (Fashion-MNIST's 28x28x1 by default) and
/// labels in [0, classes).
template <class Model>
struct train_step {
  Model& model;
  xq::adam opt;
  xq::var x;
  xq::tensor y;
  train_step(Model& m, std::size_t batch, unsigned seed = 2, std::array<std::size_t, 3> image = {28, 28, 1},
             std::size_t classes = 10)
      : model(m),
        opt(xq::trainable_parameters(m)),
        x(uniform_tensor({batch, image[0], image[1], image[2]}, 0.0f, 1.0f, seed)),
        y(random_labels(batch, seed + 1)) {
    for (auto& v : y) v = float(int(v) % int(classes));
  }
  void operator()() {
    const xq::training_mode train(true);
    xq::tape tape;
    auto loss = xq::sparse_softmax_cross_entropy(model(x), y);
    tape.backward(loss);
    opt.step();
    opt.zero_grad();
    benchmark::DoNotOptimize(loss.value().data());
  }
};

}  // namespace bench
