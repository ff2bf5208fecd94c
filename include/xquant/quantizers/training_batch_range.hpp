#pragma once
/// \file training_batch_range.hpp
/// What a range tracker measures of a training batch: its minimum and maximum per channel,
/// over the whole batch — under data parallelism, over every rank's shard of it.
///
/// A range tracker (range_tracker.hpp) measures each training batch's range, updates the
/// stored range from it, and the fake quantizer rounds the same batch on the grid of that
/// range. A rank of a data-parallel job that used its own shard's range would round on a
/// grid of its own, and its gradients and every later activation would differ from one
/// process's on the whole batch. So, while a `sharded_batch` is active (core/sharded_batch.hpp;
/// include/xquant/distributed/'s `synchronized_batch`), each measured range becomes the
/// minimum and maximum over the ranks first: every tracker then updates from the whole
/// batch's range on every rank, exactly as one process would.

#include <cstddef>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/sharded_batch.hpp"
#include "../core/tensor.hpp"
#include "../kernels/channel_layout.hpp"
#include "../numerics/range_statistics.hpp"

namespace xq {

/// The training batch `x`'s range per channel of `layout`, over every rank's shard when a
/// sharded_batch is active. argument_error, naming `where`, for NaN or ±Inf in the batch:
/// the value and its index when it is in this rank's shard, "another rank's part" otherwise.
inline range_statistics measure_training_batch_range(const tensor& x, const kernels::channel_layout& layout,
                                                     const std::string& where) {
  range_statistics s = measure_range(x, layout);
  const bool own_part_finite = s.finite;
  if (sharded_batch* shards = sharded_batch::active(batch_dependence::quantizer_range)) {
    // One minimum over [min..., -max..., finite]: negation is exact.
    const std::size_t n = s.min.size(), m = s.max.size();
    std::vector<float> packed(n + m + 1);
    for (std::size_t i = 0; i < n; ++i) packed[i] = s.min.data()[i];
    for (std::size_t i = 0; i < m; ++i) packed[n + i] = -s.max.data()[i];
    packed[n + m] = s.finite ? 1.0f : 0.0f;
    shards->min(packed.data(), packed.size());
    for (std::size_t i = 0; i < n; ++i) s.min.data()[i] = packed[i];
    for (std::size_t i = 0; i < m; ++i) s.max.data()[i] = -packed[n + i];
    s.finite = packed[n + m] == 1.0f;
  }
  if (!s.finite) {
    constexpr const char* expected = "finite values in the training batch (the range is left as it was)";
    if (own_part_finite) throw argument_error(where, expected, "NaN or Inf in another rank's part of the batch");
    const std::size_t at = first_non_finite(x);
    throw argument_error(where, expected, detail::concat(x.data()[at], " at flat index ", at));
  }
  return s;
}

}  // namespace xq
