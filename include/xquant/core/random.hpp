#pragma once
/// \file random.hpp
/// The seeded random engine behind weight initializers (like `tf.random.set_seed`):
/// the same seed and the same model give the same initial weights.

#include <cstdint>
#include <random>

#include "../config.hpp"
#include "tensor.hpp"

namespace xq {

/// The engine initializers draw from (one per thread).
XQ_DECL std::mt19937& random_engine();

/// Reseeds this thread's engine.
XQ_DECL void set_seed(std::uint32_t seed);

/// Uniform in [-limit, limit).
XQ_DECL tensor random_uniform(const tensor::shape_type& shape, float limit, std::mt19937& rng = random_engine());

/// Keras's default kernel initializer: uniform in ±sqrt(6 / (fan_in + fan_out)).
XQ_DECL tensor glorot_uniform(const tensor::shape_type& shape, std::size_t fan_in, std::size_t fan_out,
                              std::mt19937& rng = random_engine());

/// Keras's default embedding initializer: uniform in ±0.05.
XQ_DECL tensor embedding_uniform(const tensor::shape_type& shape, std::mt19937& rng = random_engine());

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/random.ipp"
#endif
