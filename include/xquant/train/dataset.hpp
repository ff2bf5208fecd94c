#pragma once
/// \file dataset.hpp
/// In-memory datasets and mini-batches: inputs and targets whose first axis
/// counts the samples, a seeded shuffled order, and a gather that copies the
/// rows of a batch into contiguous (B, ...) tensors.
///
/// \code
///   xq::dataset train{images, labels};                  // (60000, 28, 28, 1), (60000,)
///   std::mt19937 rng(seed);
///   auto order = xq::shuffled_order(train.size(), rng); // a new order per epoch
///   xq::batch b = xq::make_batch(train, order, 0, 32);  // rows order[0..32)
/// \endcode
///
/// A model with several inputs or outputs (core/model_call.hpp) takes its second, third,
/// ... inputs from `extra_inputs`, and a loss its second, third, ... targets from
/// `extra_targets`; every tensor has the same number of rows, and a batch gathers the same
/// rows of each:
///
/// \code
///   xq::dataset pairs = xq::dataset::of({left, right}, {same});  // a siamese pair, a label
/// \endcode

#include <cstddef>
#include <random>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"

namespace xq {

/// Inputs (N, ...) and targets (N, ...): sample i is row i of every tensor.
struct dataset {
  tensor inputs;                     ///< the model's input (its first, when it has several)
  tensor targets;                    ///< the loss's target (for the first output)
  std::vector<tensor> extra_inputs{};  ///< the model's second, third, ... inputs
  std::vector<tensor> extra_targets{}; ///< the targets of its second, third, ... outputs

  /// A dataset of several inputs and targets (at least one of each), in the model's order.
  XQ_DECL static dataset of(std::vector<tensor> inputs, std::vector<tensor> targets);

  /// Number of samples (0 for a default dataset, whose tensors are 0-d).
  std::size_t size() const noexcept { return inputs.dimension() == 0 ? 0 : inputs.shape()[0]; }
  std::size_t input_count() const noexcept { return 1 + extra_inputs.size(); }
  std::size_t target_count() const noexcept { return 1 + extra_targets.size(); }
  /// Input `k` (0: `inputs`); target `k` (0: `targets`).
  const tensor& input(std::size_t k) const { return k == 0 ? inputs : extra_inputs.at(k - 1); }
  const tensor& target(std::size_t k) const { return k == 0 ? targets : extra_targets.at(k - 1); }

  /// Throws unless every tensor has a sample axis, all of the same length.
  void validate(const char* where) const;
};

/// One mini-batch: contiguous copies of some rows of a dataset.
struct batch {
  tensor inputs;
  tensor targets;
  std::vector<tensor> extra_inputs{};
  std::vector<tensor> extra_targets{};
  std::size_t size() const noexcept { return inputs.dimension() == 0 ? 0 : inputs.shape()[0]; }
};

/// Number of batches of `batch_size` covering `n` samples (the last one may be partial; a
/// batch size above `n` gives one batch of all of them). argument_error for batch_size 0.
XQ_DECL std::size_t batch_count(std::size_t n, std::size_t batch_size);

namespace detail {
/// Uniform in [0, bound), by rejection on the engine's 32-bit outputs: unlike
/// std::uniform_int_distribution (whose algorithm each standard library picks),
/// it gives the same numbers everywhere, so a seed means the same batches on any
/// platform.
XQ_DECL std::size_t uniform_index(std::mt19937& rng, std::size_t bound);
}  // namespace detail

/// 0, 1, ..., n - 1.
XQ_DECL std::vector<std::size_t> sequential_order(std::size_t n);

/// A random permutation of 0..n-1 (Fisher-Yates driven by `rng`; the same engine
/// state gives the same order on every platform).
XQ_DECL std::vector<std::size_t> shuffled_order(std::size_t n, std::mt19937& rng);

/// Copies rows `rows[0..count)` of `source` (N, ...) into a new contiguous
/// (count, ...) tensor, one memcpy per row.
XQ_DECL tensor gather_rows(const tensor& source, const std::size_t* rows, std::size_t count);

/// The batch of rows `order[first .. first + count)` (clipped to the order's end).
XQ_DECL batch make_batch(const dataset& data, const std::vector<std::size_t>& order, std::size_t first,
                         std::size_t count);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/dataset.ipp"
#endif
