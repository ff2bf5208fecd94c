#pragma once
/// \file fit_history.hpp
/// What `fit` measured: one `epoch_record` per epoch, and why training stopped.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"

namespace xq {

/// What one epoch of `fit` measured.
struct epoch_record {
  std::size_t epoch = 0;  ///< 1-based
  std::size_t steps = 0;
  std::size_t samples = 0;
  double loss = 0.0;  ///< mean over the epoch's samples (batches weighted by size)
  std::optional<double> metric;
  std::optional<double> val_loss;
  std::optional<double> val_metric;
  double seconds = 0.0;  ///< training time of the epoch (validation not included)
  double samples_per_second = 0.0;
  /// The model's quantizer metrics over the epoch's training steps, in model order:
  /// ("flip_ratio/<path>", value), ("gradient_flow/<path>", value) for every quantizer
  /// that keeps them (quantizers/model_quantizers.hpp); empty when none does.
  std::vector<std::pair<std::string, double>> quantizer_metrics;
};

/// Where `fit` stopped on a loss that was not finite (Keras's TerminateOnNaN).
struct non_finite_loss_stop {
  std::size_t epoch = 0;  ///< 1-based, counted as `epoch_record::epoch`
  std::size_t step = 0;   ///< 1-based within the epoch; the steps before it were applied
  double loss = 0.0;      ///< NaN or an infinity
};

/// Everything `fit` measured, one record per epoch run.
struct fit_history {
  std::string metric_name;
  std::vector<epoch_record> epochs;
  bool stopped_early = false;  ///< the epoch callback asked to stop
  /// Set when a batch's loss was NaN or infinite: training stopped there, with the model
  /// and the optimizer as they were before that step. That epoch's record covers the
  /// steps before it.
  std::optional<non_finite_loss_stop> non_finite_loss;

  std::size_t size() const noexcept { return epochs.size(); }
  const epoch_record& last() const;
};

}  // namespace xq
