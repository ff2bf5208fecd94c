#pragma once
/// \file random.ipp
/// The random engine's and the initializers' code (core/random.hpp).

#include <cmath>
#include <cstdint>
#include <random>

#include "../random.hpp"

namespace xq {

XQ_DECL std::mt19937& random_engine() {
  thread_local std::mt19937 engine(20250101u);
  return engine;
}

XQ_DECL void set_seed(std::uint32_t seed) { random_engine().seed(seed); }

XQ_DECL tensor random_uniform(const tensor::shape_type& shape, float limit, std::mt19937& rng) {
  tensor t = tensor::from_shape(shape);
  std::uniform_real_distribution<float> dist(-limit, limit);
  for (auto& v : t) v = dist(rng);
  return t;
}

XQ_DECL tensor glorot_uniform(const tensor::shape_type& shape, std::size_t fan_in, std::size_t fan_out,
                              std::mt19937& rng) {
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  return random_uniform(shape, limit, rng);
}

XQ_DECL tensor embedding_uniform(const tensor::shape_type& shape, std::mt19937& rng) {
  return random_uniform(shape, 0.05f, rng);
}

}  // namespace xq
