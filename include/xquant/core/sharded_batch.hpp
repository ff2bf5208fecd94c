#pragma once
/// \file sharded_batch.hpp
/// Where data-parallel training makes the layers that depend on the whole batch see it.
///
/// Under data parallelism each rank runs the model on its shard of every batch. Most layers
/// compute each row from that row alone and do not care; a few depend on the batch:
///  - a fake quantizer's range tracker measures the batch's minimum and maximum and rounds
///    on the grid of the updated range (quantizers/training_batch_range.hpp);
///  - batch_norm in training normalizes with the batch's mean and variance and
///    differentiates through them (layers/batch_norm.hpp);
///  - dropout draws its masks from one generator, value after value over the batch
///    (layers/dropout.hpp).
/// A rank that used its own shard's statistics, or drew its masks as if its shard were the
/// batch, would compute something no single process computes. So, while a `sharded_batch`
/// is active on the thread for that dependence (RAII: `sharded_batch_scope`), those layers
/// combine their per-shard sums and extremes with the other ranks' through it
/// (SyncBatchNorm's idea, for every batch statistic), and dropout draws the whole batch's
/// masks and keeps its shard's: include/xquant/distributed/'s `synchronized_batch`
/// implements it with MPI collectives. Every rank must then make the same calls in the
/// same order, as data parallelism does.
///
/// A layer's backward that needs the whole batch too (batch_norm's) keeps the active one
/// from its forward: keep the scope alive until the backward pass has run.
///
/// Without one active (the default) nothing changes; this header needs no MPI.

#include <cstddef>
#include <vector>

namespace xq {

/// What a layer computes from the whole batch; each has its own policy under data
/// parallelism (the whole batch's, or each rank's shard's).
enum class batch_dependence {
  quantizer_range,  ///< range trackers' minimum and maximum
  normalization,    ///< batch_norm's mean and variance (and its backward's sums)
  dropout_masks,    ///< dropout's masks, drawn in order over the batch
};

/// The ranks that hold the other shards of the batch this thread's forward pass sees.
class sharded_batch {
 public:
  virtual ~sharded_batch() = default;
  /// values[i] = the minimum over the ranks of values[i], on every rank.
  virtual void min(float* values, std::size_t n) = 0;
  /// values[i] = the sum over the ranks of values[i], on every rank.
  virtual void sum(double* values, std::size_t n) = 0;
  /// values = the first rank's values, on every rank (a common reference point).
  virtual void from_first(double* values, std::size_t n) = 0;
  /// With `count` items (values, rows) here: how many the ranks before this one hold; and
  /// in `total`, how many all of them hold. The shards are in rank order.
  virtual std::size_t position(std::size_t count, std::size_t& total) = 0;

  /// The one active on this thread for dependence `k`, or null.
  static sharded_batch* active(batch_dependence k) noexcept { return slot(k); }

 private:
  friend class sharded_batch_scope;
  static sharded_batch*& slot(batch_dependence k) noexcept {
    thread_local sharded_batch* s[3] = {nullptr, nullptr, nullptr};
    return s[static_cast<int>(k)];
  }
};

/// Counts (a histogram of this rank's shard) summed over the ranks, in place: exact while
/// each total is below 2^53 (2^24 for float counts).
template <class T>
void sum_over_shards(sharded_batch& shards, std::vector<T>& counts) {
  std::vector<double> wide(counts.begin(), counts.end());
  shards.sum(wide.data(), wide.size());
  for (std::size_t k = 0; k < counts.size(); ++k) counts[k] = static_cast<T>(wide[k]);
}

/// Makes `s` the active sharded_batch for dependence `k` on this thread while alive
/// (restores the previous one).
class sharded_batch_scope {
 public:
  sharded_batch_scope(sharded_batch& s, batch_dependence k) noexcept : kind_(k), previous_(sharded_batch::slot(k)) {
    sharded_batch::slot(k) = &s;
  }
  ~sharded_batch_scope() { sharded_batch::slot(kind_) = previous_; }
  sharded_batch_scope(const sharded_batch_scope&) = delete;
  sharded_batch_scope& operator=(const sharded_batch_scope&) = delete;

 private:
  batch_dependence kind_;
  sharded_batch* previous_;
};

}  // namespace xq
