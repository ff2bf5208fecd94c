#pragma once
/// \file data_parallel.hpp
/// Data-parallel QAT over MPI, the first pieces (issue 17): each rank runs the same model on
/// its own share of every batch, and
///  - `broadcast_parameters` makes every rank start from rank 0's weights and state;
///  - `average_gradients` averages the gradients after each backward pass, packed into
///    fused buffers of at most `bucket_bytes` (Horovod's tensor fusion: one allreduce per
///    bucket instead of one per tensor), so that N ranks of batch B take the step one
///    process of batch N·B takes (the loss being a mean over the batch);
///  - `synchronized_ranges` (RAII, around the training step's forward pass) makes every
///    fake quantizer's range tracker measure the whole batch: each batch range it measures
///    becomes the minimum and maximum over the ranks before it updates and rounds
///    (quantizers/batch_range_reduction.hpp), so every rank rounds on the grid one process
///    of the whole batch would, and N ranks of batch B compute what one process of batch
///    N·B computes: gradients, ranges and parameters, up to float summation's order;
///  - `sync_quantizer_ranges` brings the stored ranges together after a step, by policy:
///      - `range_sync::allreduce`: each range's minimum the minimum over the ranks, its
///        maximum the maximum. Every tracker here updates its minimum (and maximum) by a
///        nondecreasing function of the batch's — last value, running min / max, tfmot's
///        and PyTorch's moving averages, a symmetric amax — so this gives the whole
///        batch's stored range; but the step itself rounded on each rank's own grid (use
///        synchronized_ranges for that);
///      - `range_sync::rank0_broadcast`: rank 0's ranges everywhere (PyTorch DDP's buffer
///        broadcast: the other ranks' batches never count);
///      - `range_sync::local`: each rank keeps its own.
///  - `shard` gives a rank its part of a batch.
/// Still to come (issue 17): the allreduce overlapped with the backward pass, a `fit`
/// option, SyncBatchNorm's statistics, calibrators' histograms, and checkpoints resumed on
/// a different number of ranks.

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/model.hpp"
#include "../core/parameter.hpp"
#include "../quantizers/batch_range_reduction.hpp"
#include "../quantizers/fake_quantizer.hpp"
#include "../quantizers/model_quantizers.hpp"
#include "communicator.hpp"

namespace xq::dist {

/// Horovod's default fusion buffer: 64 MiB.
inline constexpr std::size_t default_bucket_bytes = std::size_t(64) << 20;

/// Every rank's parameters (values, trainable or not: weights, batch-norm statistics,
/// quantizer ranges) set to rank `root`'s. The ranks must hold the same model.
inline void broadcast_parameters(const std::vector<parameter_ptr>& params, const communicator& c, int root = 0) {
  for (const parameter_ptr& p : params)
    if (p && p->value.size()) c.broadcast(p->value.data(), p->value.size(), root);
}

/// Averages every parameter's gradient over the ranks (see the file comment): a parameter
/// that no rank has a gradient for keeps none; one that some rank lacks counts zeros there.
/// The ranks must pass the same parameters in the same order.
inline void average_gradients(const std::vector<parameter_ptr>& params, const communicator& c,
                              std::size_t bucket_bytes = default_bucket_bytes) {
  if (c.size() == 1) return;
  // Which parameters have a gradient on some rank: one small allreduce first.
  std::vector<float> present(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) present[i] = params[i] && params[i]->has_grad() ? 1.0f : 0.0f;
  c.allreduce(present.data(), present.size(), reduction::max);
  const std::size_t bucket = std::max<std::size_t>(bucket_bytes / sizeof(float), 1);
  const float inverse = 1.0f / float(c.size());
  std::vector<float> fused;
  std::vector<std::size_t> members;  // parameters in the bucket
  auto flush = [&] {
    if (members.empty()) return;
    c.allreduce(fused.data(), fused.size(), reduction::sum);
    std::size_t at = 0;
    for (std::size_t i : members) {
      variable_state& p = *params[i];
      if (!p.has_grad()) p.grad = tensor::from_shape(p.value.shape());
      for (float& g : p.grad) g = fused[at++] * inverse;
    }
    fused.clear();
    members.clear();
  };
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (present[i] == 0.0f) continue;
    const variable_state& p = *params[i];
    if (!fused.empty() && fused.size() + p.value.size() > bucket) flush();
    if (p.has_grad()) fused.insert(fused.end(), p.grad.begin(), p.grad.end());
    else fused.insert(fused.end(), p.value.size(), 0.0f);
    members.push_back(i);
  }
  flush();
}

/// While alive, every fake quantizer's range tracker on this thread updates from the
/// whole batch's range: the minimum and maximum over the ranks of what each measured on
/// its part (one allreduce per quantizer call; see the file comment). Every rank must run
/// the same quantizer calls in the same order, as data parallelism does.
class synchronized_ranges final : private batch_range_reduction {
 public:
  explicit synchronized_ranges(const communicator& c) : c_(c), scope_(*this) {}

 private:
  void reduce(vector& min, vector& max, bool& finite) override {
    if (c_.size() == 1) return;
    // One MPI_MIN over [min..., -max..., finite]: negation is exact.
    const std::size_t n = min.size(), m = max.size();
    buffer_.resize(n + m + 1);
    std::copy(min.begin(), min.end(), buffer_.begin());
    for (std::size_t i = 0; i < m; ++i) buffer_[n + i] = -max.data()[i];
    buffer_[n + m] = finite ? 1.0f : 0.0f;
    c_.allreduce(buffer_.data(), buffer_.size(), reduction::min);
    std::copy(buffer_.begin(), buffer_.begin() + std::ptrdiff_t(n), min.begin());
    for (std::size_t i = 0; i < m; ++i) max.data()[i] = -buffer_[n + i];
    finite = buffer_[n + m] == 1.0f;
  }

  const communicator& c_;
  std::vector<float> buffer_;
  batch_range_reduction_scope scope_;
};

/// How the ranks' fake-quantizer ranges are brought together (see the file comment).
enum class range_sync { allreduce, rank0_broadcast, local };

/// "allreduce", "rank0_broadcast", "local".
inline const char* to_string(range_sync s) noexcept {
  return s == range_sync::allreduce ? "allreduce" : s == range_sync::rank0_broadcast ? "rank0_broadcast" : "local";
}

/// Applies `policy` to every fake quantizer of `model` that has a range (after a training
/// step's forward pass has updated them, before the next one).
template <class Model>
void sync_quantizer_ranges(Model& model, const communicator& c, range_sync policy = range_sync::allreduce) {
  if (policy == range_sync::local || c.size() == 1) return;
  for_each_quantizer(model, [&](fake_quantizer& q) {
    vector lo = q.min(), hi = q.max();
    if (policy == range_sync::allreduce) {
      c.allreduce(lo.data(), lo.size(), reduction::min);
      c.allreduce(hi.data(), hi.size(), reduction::max);
    } else {
      c.broadcast(lo.data(), lo.size(), 0);
      c.broadcast(hi.data(), hi.size(), 0);
    }
    q.set_range(std::move(lo), std::move(hi));
  });
}

/// Rank `rank`'s rows [begin, end) of a batch of `n` rows split over `ranks` ranks: equal
/// shares, the first n % ranks ranks one row more.
inline std::pair<std::size_t, std::size_t> shard(std::size_t n, int rank, int ranks) {
  if (ranks <= 0 || rank < 0 || rank >= ranks)
    throw argument_error("xq::dist::shard", "a rank in [0, ranks)", std::to_string(rank) + " of " + std::to_string(ranks));
  const std::size_t r = std::size_t(rank), k = std::size_t(ranks), base = n / k, extra = n % k;
  const std::size_t begin = r * base + std::min(r, extra);
  return {begin, begin + base + (r < extra ? 1 : 0)};
}

}  // namespace xq::dist
