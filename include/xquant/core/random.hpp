#pragma once
/// \file random.hpp
/// The seeded random engine behind weight initializers (like `tf.random.set_seed`):
/// the same seed and the same model give the same initial weights.

#include <cmath>
#include <cstdint>
#include <random>

#include "tensor.hpp"

namespace xq {

/// The engine initializers draw from (one per thread).
inline std::mt19937& random_engine() {
  thread_local std::mt19937 engine(20250101u);
  return engine;
}

/// Reseeds this thread's engine.
inline void set_seed(std::uint32_t seed) { random_engine().seed(seed); }

/// Uniform in [-limit, limit).
inline tensor random_uniform(const tensor::shape_type& shape, float limit, std::mt19937& rng = random_engine()) {
  tensor t = tensor::from_shape(shape);
  std::uniform_real_distribution<float> dist(-limit, limit);
  for (auto& v : t) v = dist(rng);
  return t;
}

/// Keras's default kernel initializer: uniform in ±sqrt(6 / (fan_in + fan_out)).
inline tensor glorot_uniform(const tensor::shape_type& shape, std::size_t fan_in, std::size_t fan_out,
                             std::mt19937& rng = random_engine()) {
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  return random_uniform(shape, limit, rng);
}

/// Keras's default embedding initializer: uniform in ±0.05.
inline tensor embedding_uniform(const tensor::shape_type& shape, std::mt19937& rng = random_engine()) {
  return random_uniform(shape, 0.05f, rng);
}

}  // namespace xq
