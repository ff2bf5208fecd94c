#pragma once
/// \file synchronized_batch.hpp
/// `xq::dist::synchronized_batch` (RAII, around a training step's forward and backward
/// passes): what every rank's layers compute from the batch is computed from the whole
/// batch, over every rank's shard (core/sharded_batch.hpp), for the kinds chosen:
///  - quantizer ranges: each range a fake quantizer's tracker measures becomes the minimum
///    and maximum over the ranks before it updates and rounds, so every rank rounds on the
///    grid one process of the whole batch would (quantizers/training_batch_range.hpp);
///  - batch normalization: batch_norm's mean and variance, and its backward's sums, are the
///    whole batch's (SyncBatchNorm), so the moving statistics move identically everywhere;
///  - dropout: each rank draws the whole batch's masks and keeps its shard's, so the masks
///    are one process's (not the same mask on every rank, as equal seeds would give).
/// With all three, N ranks of batch B compute what one process of batch N·B computes:
/// activations, gradients, ranges, statistics, up to float summation's order.

#include <cstddef>
#include <optional>
#include <vector>

#include "../core/sharded_batch.hpp"
#include "communicator.hpp"

namespace xq::dist {

/// Which of what layers compute from the batch is the whole batch's (true) or each rank's
/// shard's (false).
struct whole_batch_kinds {
  bool quantizer_ranges = true;
  bool batch_norm = true;
  bool dropout = true;
};

/// While alive, the chosen batch statistics on this thread are the whole batch's (see the
/// file comment). Every rank must run the same layers in the same order, as data
/// parallelism does; keep it alive until the backward pass has run (batch_norm's backward
/// sums over the ranks too).
class synchronized_batch final : private sharded_batch {
 public:
  explicit synchronized_batch(const communicator& c, whole_batch_kinds which = {}) : c_(c) {
    if (c_.size() == 1) return;  // one rank holds the whole batch
    sharded_batch& self = *this;  // a private base: the scopes cannot convert it themselves
    if (which.quantizer_ranges) ranges_.emplace(self, batch_dependence::quantizer_range);
    if (which.batch_norm) norms_.emplace(self, batch_dependence::normalization);
    if (which.dropout) masks_.emplace(self, batch_dependence::dropout_masks);
  }

 private:
  void min(float* values, std::size_t n) override { c_.allreduce(values, n, reduction::min); }
  void sum(double* values, std::size_t n) override { c_.allreduce(values, n, reduction::sum); }
  void from_first(double* values, std::size_t n) override { c_.broadcast(values, n, 0); }
  std::size_t position(std::size_t count, std::size_t& total) override {
    // Every rank's count at its own index, summed: all the counts on every rank.
    counts_.assign(std::size_t(c_.size()), 0.0);
    counts_[std::size_t(c_.rank())] = double(count);
    c_.allreduce(counts_.data(), counts_.size(), reduction::sum);
    double before = 0, all = 0;
    for (std::size_t r = 0; r < counts_.size(); ++r) {
      if (r < std::size_t(c_.rank())) before += counts_[r];
      all += counts_[r];
    }
    total = std::size_t(all);
    return std::size_t(before);
  }

  const communicator& c_;
  std::vector<double> counts_;
  std::optional<sharded_batch_scope> ranges_, norms_, masks_;
};

}  // namespace xq::dist
