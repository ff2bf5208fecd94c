#pragma once
/// \file batch_range_reduction.hpp
/// Where data-parallel training makes every rank's range trackers see the whole batch.
///
/// A range tracker (range_tracker.hpp) measures each training batch's minimum and maximum
/// per channel, then updates the stored range from them — and the fake quantizer rounds
/// the same batch on the grid of that range. Under data parallelism each rank holds a part
/// of the batch: a rank that used its own part's range would round with a grid of its own,
/// and its gradients and every later activation would differ from one process's on the
/// whole batch. So, while a `batch_range_reduction` is active on the thread (RAII:
/// `batch_range_reduction_scope`), the trackers pass each measured batch range through it
/// first: include/xquant/distributed/'s `synchronized_ranges` takes the minimum and maximum
/// over the ranks there (SyncBatchNorm's idea, for quantizer ranges). Every tracker then
/// updates from the whole batch's range on every rank, exactly as one process would.
///
/// Without one active (the default) nothing changes; this header needs no MPI.

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "../numerics/range_statistics.hpp"

namespace xq {

/// Combines a training batch's measured range with the other ranks'.
class batch_range_reduction {
 public:
  virtual ~batch_range_reduction() = default;
  /// `min` and `max` (one value per channel) become the whole batch's; `finite` false if
  /// any rank's part held NaN or ±Inf.
  virtual void reduce(vector& min, vector& max, bool& finite) = 0;

  /// The reduction active on this thread, or null.
  static batch_range_reduction* active() noexcept { return slot(); }

 private:
  friend class batch_range_reduction_scope;
  static batch_range_reduction*& slot() noexcept {
    thread_local batch_range_reduction* r = nullptr;
    return r;
  }
};

/// Makes `r` the active reduction on this thread while alive (restores the previous one).
class batch_range_reduction_scope {
 public:
  explicit batch_range_reduction_scope(batch_range_reduction& r) noexcept : previous_(batch_range_reduction::slot()) {
    batch_range_reduction::slot() = &r;
  }
  ~batch_range_reduction_scope() { batch_range_reduction::slot() = previous_; }
  batch_range_reduction_scope(const batch_range_reduction_scope&) = delete;
  batch_range_reduction_scope& operator=(const batch_range_reduction_scope&) = delete;

 private:
  batch_range_reduction* previous_;
};

/// The range trackers' step between measuring a batch and updating from it: `s` through
/// the active reduction, if any. Returns whether this rank's own part was finite (`s.finite`
/// then tells whether every rank's was), so a tracker can name the right culprit.
inline bool reduce_batch_range(range_statistics& s) {
  const bool local_finite = s.finite;
  if (batch_range_reduction* r = batch_range_reduction::active()) r->reduce(s.min, s.max, s.finite);
  return local_finite;
}

}  // namespace xq
