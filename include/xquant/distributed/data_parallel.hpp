#pragma once
/// \file data_parallel.hpp
/// Data-parallel QAT over MPI (issue 17): each rank runs the same model on its shard of
/// every batch, and together they take the step one process of the whole batch takes.
///
/// The pieces, usable on their own in a loop of your own:
///  - `broadcast_parameters`: every rank starts from rank 0's weights and state;
///  - `shard`: a rank's rows of a batch;
///  - synchronized_batch.hpp: what layers compute from the batch (quantizer ranges,
///    batch-norm moments, dropout masks) of the whole batch, inside the forward and
///    backward passes;
///  - gradient_averaging.hpp: the gradients averaged in fused buckets, overlapped with the
///    backward pass;
///  - `sync_quantizer_ranges`: stored ranges brought together after a step, by policy;
///  - distributed_checkpoint.hpp and distributed_calibration.hpp: checkpoints written by
///    rank 0, rank 0's state sent to every rank, post-training calibration over the ranks.
///
/// And `data_parallel`, which puts them together for `xq::fit` (fit_options::distributed):
///
/// \code
///   xq::dist::environment mpi(argc, argv);
///   xq::dist::communicator world;
///   xq::dist::data_parallel ranks(world);          // the defaults below
///   xq::fit_options o;
///   o.batch_size = 32;                             // per rank: 2 ranks take batches of 64
///   o.distributed = &ranks;
///   xq::fit(qat, opt, xq::sparse_softmax_cross_entropy, train, o);
/// \endcode
///
/// Each kind of state has a policy; the defaults make N ranks of batch B compute what one
/// process of batch N·B computes (up to float summation's order):
///  - quantizer ranges, `range_sync`:
///      - `allreduce` (default): every range a tracker measures is the minimum and maximum
///        over the ranks before it updates and rounds (synchronized_batch). Every tracker
///        here updates its minimum (and maximum) by a nondecreasing function of the
///        batch's (last value, running min / max, tfmot's and PyTorch's moving averages, a
///        symmetric amax), so the stored ranges are the whole batch's too;
///      - `rank0_broadcast`: each rank rounds on its own shard's grid, and rank 0's ranges
///        are copied to every rank after each step (PyTorch DDP's buffer broadcast: the
///        other ranks' batches never count);
///      - `local`: each rank keeps its own.
///  - batch-norm statistics, `batch_norm_sync`: `synchronized` (default: SyncBatchNorm's
///    whole-batch mean and variance in training, so the moving statistics agree) or
///    `local` (each rank its shard's, as PyTorch's BatchNorm under DDP).
///  - dropout masks: always the whole batch's (each rank draws them all and keeps its
///    shard's), so ranks do not repeat one mask and the run is one process's.
///  - learned scales (LSQ) and every other trainable parameter: gradients averaged.
///  - Larq's flip ratio and gradient flow: `fit` averages them over the ranks for the
///    epoch's record (each rank's weights are the same, so the flip ratio agrees anyway).

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/layer_ref.hpp"
#include "../core/model.hpp"
#include "../core/parameter.hpp"
#include "../quantizers/fake_quantizer.hpp"
#include "../quantizers/model_quantizers.hpp"
#include "../train/distributed_training.hpp"
#include "communicator.hpp"
#include "gradient_averaging.hpp"
#include "synchronized_batch.hpp"

namespace xq::dist {

/// Every rank's parameters (values, trainable or not: weights, batch-norm statistics,
/// quantizer ranges) set to rank `root`'s. The ranks must hold the same model.
inline void broadcast_parameters(const std::vector<parameter_ptr>& params, const communicator& c, int root = 0) {
  for (const parameter_ptr& p : params)
    if (p && p->value.size()) c.broadcast(p->value.data(), p->value.size(), root);
}

/// How the ranks' fake-quantizer ranges are brought together (see the file comment).
enum class range_sync { allreduce, rank0_broadcast, local };

/// "allreduce", "rank0_broadcast", "local".
inline const char* to_string(range_sync s) noexcept {
  return s == range_sync::allreduce ? "allreduce" : s == range_sync::rank0_broadcast ? "rank0_broadcast" : "local";
}

/// Applies `policy` to the stored range of every fake quantizer of `model` that has one
/// (after a training step, before the next): `allreduce` takes the minimum of the minimums
/// and the maximum of the maximums, `rank0_broadcast` rank 0's, `local` leaves them.
inline void sync_quantizer_ranges(layer_ref model, const communicator& c, range_sync policy = range_sync::allreduce) {
  if (policy == range_sync::local || c.size() == 1) return;
  struct walk {
    const communicator& c;
    range_sync policy;
  } w{c, policy};
  xq::detail::for_each_quantizer_ref(
      model,
      [](void* f, quantizer_base& base) {
        auto* q = dynamic_cast<fake_quantizer*>(&base);
        if (!q) return;
        const walk& w = *static_cast<const walk*>(f);
        vector lo = q->min(), hi = q->max();
        if (w.policy == range_sync::allreduce) {
          w.c.allreduce(lo.data(), lo.size(), reduction::min);
          w.c.allreduce(hi.data(), hi.size(), reduction::max);
        } else {
          w.c.broadcast(lo.data(), lo.size(), 0);
          w.c.broadcast(hi.data(), hi.size(), 0);
        }
        q->set_range(std::move(lo), std::move(hi));
      },
      &w);
}
template <class Model>
void sync_quantizer_ranges(Model& model, const communicator& c, range_sync policy = range_sync::allreduce) {
  sync_quantizer_ranges(as_layer_ref(model), c, policy);
}

/// Rank `rank`'s rows [begin, end) of a batch of `n` rows split over `ranks` ranks: equal
/// shares, the first n % ranks ranks one row more.
inline std::pair<std::size_t, std::size_t> shard(std::size_t n, int rank, int ranks) {
  if (ranks <= 0 || rank < 0 || rank >= ranks)
    throw argument_error("xq::dist::shard", "a rank in [0, ranks)", std::to_string(rank) + " of " + std::to_string(ranks));
  return shard_rows(n, std::size_t(rank), std::size_t(ranks));
}

/// How batch_norm's training statistics are computed under data parallelism.
enum class batch_norm_sync { synchronized, local };

/// "synchronized", "local".
inline const char* to_string(batch_norm_sync s) noexcept {
  return s == batch_norm_sync::synchronized ? "synchronized" : "local";
}

/// The policies of `data_parallel` (see the file comment for each).
struct data_parallel_options {
  range_sync quantizer_ranges = range_sync::allreduce;
  batch_norm_sync batch_norm = batch_norm_sync::synchronized;
  /// Send gradient buckets while the backward pass runs (false: all after it).
  bool overlap = true;
  std::size_t bucket_bytes = default_bucket_bytes;
};

/// Data-parallel training over `c`'s ranks, as `fit` drives it (fit_options::distributed;
/// train/distributed_training.hpp): each step's forward and backward passes run under a
/// synchronized_batch of the chosen statistics, the gradients are averaged in buckets
/// (overlapped with the backward pass), and the ranges are brought together by policy.
class data_parallel final : public distributed_training {
 public:
  explicit data_parallel(const communicator& c, data_parallel_options o = {}) : c_(c), options_(o) {}

  int rank() const noexcept override { return c_.rank(); }
  int ranks() const noexcept override { return c_.size(); }
  const communicator& comm() const noexcept { return c_; }
  const data_parallel_options& options() const noexcept { return options_; }
  /// The overlapped averaging's counts (null before training, or without overlap).
  const overlapped_gradient_averaging* overlap() const noexcept { return overlapped_.get(); }

  void begin_training(layer_ref model) override {
    const std::vector<parameter_ptr> all = xq::detail::parameters(model);
    broadcast_parameters(all, c_);
    trainable_.clear();
    for (const parameter_ptr& p : all)
      if (p && p->trainable()) trainable_.push_back(p);
    if (options_.overlap) overlapped_ = std::make_unique<overlapped_gradient_averaging>(c_, trainable_, options_.bucket_bytes);
  }

  void sum(double* values, std::size_t n) override { c_.allreduce(values, n, reduction::sum); }

  void begin_step(layer_ref) override {
    whole_batch_kinds which;
    which.quantizer_ranges = options_.quantizer_ranges == range_sync::allreduce;
    which.batch_norm = options_.batch_norm == batch_norm_sync::synchronized;
    statistics_.emplace(c_, which);
    if (overlapped_) overlapped_->begin();
  }

  void end_step() noexcept override {
    statistics_.reset();
    if (overlapped_) overlapped_->abandon();
  }

  void average_gradients(layer_ref) override {
    if (overlapped_) overlapped_->finish();
    else dist::average_gradients(trainable_, c_, options_.bucket_bytes);
  }

  void after_update(layer_ref model) override {
    // allreduce's ranges already agree (the forward pass measured the whole batch).
    if (options_.quantizer_ranges == range_sync::rank0_broadcast) sync_quantizer_ranges(model, c_, range_sync::rank0_broadcast);
  }

 private:
  communicator c_;
  data_parallel_options options_;
  std::vector<parameter_ptr> trainable_;
  std::unique_ptr<overlapped_gradient_averaging> overlapped_;
  std::optional<synchronized_batch> statistics_;
};

}  // namespace xq::dist
