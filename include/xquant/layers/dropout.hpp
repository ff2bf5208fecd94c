#pragma once
/// \file dropout.hpp
/// `xq::dropout`: inverted dropout (Keras Dropout). In training mode each value is
/// kept with probability 1 - rate and scaled by 1 / (1 - rate), so inference needs
/// no rescaling; outside training mode it is the identity. Each layer draws its
/// masks from its own `std::mt19937` seeded from `seed`, so a run is reproducible,
/// and `reseed` replays the same masks (what a gradient check needs).

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/mode.hpp"
#include "../core/parameter.hpp"
#include "../core/random.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace detail {

inline void require_dropout_rate(const std::string& path, float rate) {
  if (!(rate >= 0.0f && rate < 1.0f)) throw argument_error(path, "a dropout rate in [0, 1)", concat(rate));
}

}  // namespace detail

namespace ops {

/// Drops each value with probability `rate` (drawing from `rng`) and scales the
/// kept ones by 1 / (1 - rate): always, whatever the mode (the layer decides
/// when to call it). The mask is kept for backward.
inline var dropout(const var& x, float rate, std::mt19937& rng, const std::string& path = "dropout") {
  detail::require_dropout_rate(path, rate);
  if (rate == 0.0f) return x;
  const float scale = 1.0f / (1.0f - rate);
  // Keep a value when a 32-bit draw is >= rate * 2^32: probability 1 - rate up to
  // 2^-32, one engine call per value and no float conversion.
  const std::uint64_t threshold = static_cast<std::uint64_t>(static_cast<double>(rate) * 4294967296.0);
  const std::size_t n = x.size();
  std::vector<unsigned char> keep(n);
  tensor y = tensor::from_shape(x.shape());
  const float* xp = x.value().data();
  float* yp = y.data();
  for (std::size_t i = 0; i < n; ++i) {
    keep[i] = static_cast<std::uint64_t>(rng()) >= threshold;
    // (x * scale) * mask, in TF's order of operations.
    yp[i] = (xp[i] * scale) * (keep[i] ? 1.0f : 0.0f);
  }
  return make_result(std::move(y), needs_grad(x), [x, keep = std::move(keep), scale](const tensor& dy) {
    tensor dx = tensor::from_shape(x.shape());
    const float* dyp = dy.data();
    float* dxp = dx.data();
    for (std::size_t i = 0, count = dx.size(); i < count; ++i)
      dxp[i] = (dyp[i] * scale) * (keep[i] ? 1.0f : 0.0f);
    add_grad(x, std::move(dx));
  });
}

}  // namespace ops

/// Dropout layer: active only in training mode (`xq::is_training()`).
class dropout : public layer<dropout> {
 public:
  /// `rate` in [0, 1). The seed is drawn from `xq::random_engine()`, so
  /// `xq::set_seed` makes the masks reproducible too.
  explicit dropout(float rate = 0.5f) : dropout(rate, random_engine()()) {}
  /// `rate` in [0, 1) with an explicit `seed`.
  dropout(float rate, std::uint32_t seed) : layer<dropout>("dropout"), rate_(rate), seed_(seed), rng_(seed) {
    detail::require_dropout_rate("dropout", rate);
  }

  var call(const var& x) {
    if (!is_training()) return x;
    return ops::dropout(x, rate_, rng_, path());
  }

  /// Restarts the mask sequence from `seed` (the next call draws the masks a
  /// layer freshly made with this seed would).
  void reseed(std::uint32_t seed) {
    seed_ = seed;
    rng_.seed(seed);
  }
  /// Restarts the mask sequence from the current seed.
  void reseed() { rng_.seed(seed_); }

  std::vector<parameter_ptr> parameters() const { return {}; }
  float rate() const noexcept { return rate_; }
  std::uint32_t seed() const noexcept { return seed_; }

 private:
  float rate_;
  std::uint32_t seed_;
  std::mt19937 rng_;
};

}  // namespace xq
