#pragma once
/// \file dropout.hpp
/// `xq::dropout`: inverted dropout (Keras Dropout). In training mode each value is
/// kept with probability 1 - rate and scaled by 1 / (1 - rate), so inference needs
/// no rescaling; outside training mode it is the identity. Each layer draws its
/// masks from its own `std::mt19937` seeded from `seed`, so a run is reproducible,
/// and `reseed` replays the same masks (what a gradient check needs). Checkpoints
/// keep the generator's state (`generator_state`), so a resumed run draws the masks
/// the uninterrupted run would have. Under data parallelism (a `sharded_batch` active for
/// dropout_masks, core/sharded_batch.hpp) each rank draws the whole batch's masks and keeps
/// its shard's: the masks one process of the whole batch draws.

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/random.hpp"
#include "../core/sharded_batch.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace detail {

XQ_DECL void require_dropout_rate(const std::string& path, float rate);

}  // namespace detail

namespace ops {

/// Drops each value with probability `rate` (drawing from `rng`) and scales the
/// kept ones by 1 / (1 - rate): always, whatever the mode (the layer decides
/// when to call it). The mask is kept for backward.
XQ_DECL var dropout(const var& x, float rate, std::mt19937& rng, const std::string& path = "dropout");

}  // namespace ops

/// Dropout layer: active only in training mode (`xq::is_training()`).
class dropout : public layer<dropout> {
 public:
  XQ_SPECIAL_MEMBERS(dropout)
  /// `rate` in [0, 1). The seed is drawn from `xq::random_engine()`, so
  /// `xq::set_seed` makes the masks reproducible too.
  explicit dropout(float rate = 0.5f) : dropout(rate, random_engine()()) {}
  /// `rate` in [0, 1) with an explicit `seed`.
  XQ_DECL dropout(float rate, std::uint32_t seed);

  XQ_DECL var call(const var& x);

  /// Restarts the mask sequence from `seed` (the next call draws the masks a
  /// layer freshly made with this seed would).
  XQ_DECL void reseed(std::uint32_t seed);
  /// Restarts the mask sequence from the current seed.
  XQ_DECL void reseed();

  /// The mask generator's state: `std::mt19937`'s text form (its 624 state words and
  /// position, as the standard writes them), which checkpoints store.
  XQ_DECL std::string generator_state() const;
  /// Continues the mask sequence from a state `generator_state()` gave; throws
  /// argument_error naming the layer on text that is not such a state (the generator
  /// is then left as it was).
  XQ_DECL void set_generator_state(const std::string& state);

  std::vector<parameter_ptr> parameters() const { return {}; }
  float rate() const noexcept { return rate_; }
  std::uint32_t seed() const noexcept { return seed_; }

 private:
  float rate_;
  std::uint32_t seed_;
  std::mt19937 rng_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/dropout.ipp"
#endif
