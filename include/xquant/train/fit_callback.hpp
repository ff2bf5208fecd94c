#pragma once
/// \file fit_callback.hpp
/// Keras's callbacks, for `fit`: an object told where training is — its start, each step's
/// start and end, each epoch's end, its end — with what `fit` measured there. TensorBoard
/// logging (io/tensorboard.hpp) is one; a user's is a class overriding the hooks it needs.
///
/// \code
///   struct print_steps final : xq::fit_callback {
///     void on_step_end(const xq::fit_step& s) override { std::printf("%zu %g\n", s.global_step, s.loss); }
///   };
///   xq::fit_options options;
///   options.callbacks.push_back(std::make_shared<print_steps>());
/// \endcode
///
/// Every rank of data-parallel training calls its callbacks (`fit_context::rank` says which
/// rank this is; a callback that writes files writes on rank 0). An exception from a hook
/// ends `fit` as one from a step does.

#include <cstddef>
#include <optional>
#include <string>

#include "../core/layer_ref.hpp"
#include "fit_history.hpp"

namespace xq {

/// What a callback learns when training starts.
struct fit_context {
  layer_ref model;                 ///< the model `fit` trains (valid during `fit`)
  std::size_t initial_epoch = 0;   ///< epochs already run (fit_options::initial_epoch)
  std::size_t epochs = 0;          ///< the last epoch to run
  std::size_t steps_per_epoch = 0;
  std::size_t batch_size = 0;      ///< rows of a step, every rank's together
  std::string metric_name;         ///< empty: no metric
  int rank = 0, ranks = 1;         ///< data parallelism: this process's rank of `ranks`
};

/// What one training step measured.
struct fit_step {
  std::size_t epoch = 0;        ///< 1-based
  std::size_t step = 0;         ///< 1-based within the epoch
  std::size_t global_step = 0;  ///< 1-based, counted over every epoch from the first (resumed runs continue it)
  std::size_t samples = 0;      ///< rows of the step, every rank's together
  double loss = 0.0;            ///< the batch's mean loss
  std::optional<double> metric;
  double seconds = 0.0;         ///< the step's wall time: batch, forward, backward, update
  /// The learning rate the optimizer applied in this step, where it tells one (a
  /// `learning_rate()` member, as xq::adam and xq::sgd have).
  std::optional<double> learning_rate;
};

/// The hooks `fit` calls (each does nothing unless overridden), in this order: on_train_begin;
/// per epoch on_epoch_begin, per step on_step_begin and on_step_end, then on_epoch_end (after
/// validation); on_train_end. A step whose loss was not finite was not applied and has no
/// on_step_end.
class fit_callback {
 public:
  virtual ~fit_callback() = default;
  virtual void on_train_begin(const fit_context& context) { (void)context; }
  virtual void on_epoch_begin(std::size_t epoch) { (void)epoch; }
  /// `global_step` as fit_step counts it; called before the step's batch is made.
  virtual void on_step_begin(std::size_t global_step) { (void)global_step; }
  virtual void on_step_end(const fit_step& step) { (void)step; }
  virtual void on_epoch_end(const epoch_record& record) { (void)record; }
  virtual void on_train_end(const fit_history& history) { (void)history; }
};

}  // namespace xq
