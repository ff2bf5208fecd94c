#pragma once
/// \file distributed_training.hpp
/// What `fit` asks of data-parallel training (fit_options::distributed): the ranks of a job
/// each train on their shard of every batch and take the same step. The interface needs no
/// MPI; include/xquant/distributed/'s `xq::dist::data_parallel` implements it over MPI.
///
/// With one given, `fit` on each rank:
///  - checks that every rank has the same model (parameters: names, shapes), data (sizes,
///    sample shapes) and options (batch size, steps, epochs, seed, shuffle), and throws the
///    same error on every rank, naming each rank's value, when they differ
///    (train/rank_agreement.hpp);
///  - calls `begin_training` (every rank starts from the first rank's parameters);
///  - draws the same seeded order every rank draws, cuts it into global batches of
///    `batch_size` × ranks rows, and trains on its shard of each (xq::dist::shard's split;
///    a last batch with fewer rows than ranks is dropped). Each shard's loss is weighted by
///    its share of the batch, so unequal shards (a last, partial batch) still average to
///    the whole batch's gradient;
///  - runs each step's forward and backward passes between `begin_step` and `end_step`,
///    and calls `average_gradients` after the backward pass, before the optimizer's step;
///  - sums the loss, the metric and the sample counts over the ranks (`sum`) for the
///    progress line and the history, and stops every rank when any rank's loss is not
///    finite;
///  - evaluates the validation data in shards, the sums combined the same way;
///  - averages the quantizer metrics (flip ratio, gradient flow) over the ranks;
///  - stops every rank after an epoch when any rank's `on_epoch_end` asks to stop;
///  - prints progress on the first rank only.
/// So N ranks of batch B compute what one process of batch N·B computes.

#include <algorithm>
#include <cstddef>
#include <utility>

#include "../core/layer_ref.hpp"

namespace xq {

/// Rank `rank`'s rows [begin, end) of `n` rows split over `ranks` ranks, in rank order:
/// equal shares, the first n % ranks ranks one row more (a rank in [0, ranks) assumed).
inline std::pair<std::size_t, std::size_t> shard_rows(std::size_t n, std::size_t rank, std::size_t ranks) noexcept {
  const std::size_t base = n / ranks, extra = n % ranks, begin = rank * base + std::min(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

/// A data-parallel runtime, as `fit` drives it (see the file comment).
class distributed_training {
 public:
  virtual ~distributed_training() = default;
  /// This process's rank, from 0, and the number of ranks.
  virtual int rank() const noexcept = 0;
  virtual int ranks() const noexcept = 0;
  /// Before the first step: every rank's parameters and state made the first rank's.
  virtual void begin_training(layer_ref model) = 0;
  /// values[i] = the sum over the ranks of values[i], on every rank.
  virtual void sum(double* values, std::size_t n) = 0;
  /// A training step's forward and backward passes run between these two.
  virtual void begin_step(layer_ref model) = 0;
  virtual void end_step() noexcept = 0;
  /// After the backward pass: every trainable parameter's gradient averaged over the ranks.
  virtual void average_gradients(layer_ref model) = 0;
  /// After the optimizer's step (before the next forward pass).
  virtual void after_update(layer_ref model) = 0;
};

}  // namespace xq
