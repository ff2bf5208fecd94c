#pragma once
/// \file fit.hpp
/// The training loop (Keras's `fit`, `evaluate`, `predict`) for any model, any
/// optimizer with `step()`/`zero_grad()`, and any loss `var(const var& output,
/// const var& targets)`.
///
/// \code
///   xq::adam opt(xq::trainable_parameters(model));
///   xq::fit_options options;
///   options.epochs = 5;
///   options.batch_size = 64;
///   options.validation = &test;
///   xq::fit_history h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, options);
///   xq::evaluation e = xq::evaluate(model, xq::sparse_softmax_cross_entropy, test);
/// \endcode
///
/// Models whose parameters are built on the first call can be handed to `fit`
/// unbuilt, but an optimizer needs the parameter list first: build them with
/// `xq::build(model, input_shape)` before making the optimizer.
///
/// Several inputs and outputs (core/model_call.hpp): the dataset's `extra_inputs` are
/// the model's second, third, ... inputs. A loss taking two `var`s is applied to each
/// output and its target and the results summed (Keras's one loss for every output); a
/// loss taking `(const var_list& outputs, const var_list& targets)` gets them all (a
/// weighted sum, a loss between outputs); a loss taking `(outputs, targets, inputs)` also
/// reads the batch's inputs (train/distillation.hpp's teacher runs on them). The metric
/// scores the first output.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/mode.hpp"
#include "../core/layer_ref.hpp"
#include "../core/model.hpp"
#include "../core/tape.hpp"
#include "../core/var.hpp"
#include "../core/tensor.hpp"
#include "../kernels/thread_governor.hpp"
#include "../quantizers/model_quantizers.hpp"
#include "dataset.hpp"
#include "default_metric.hpp"
#include "distributed_training.hpp"
#include "fit_callback.hpp"
#include "fit_history.hpp"
#include "metrics.hpp"
#include "progress.hpp"

namespace xq {

/// A metric: the model's outputs and the targets of a batch in, a score in [0, 1]
/// out (the batch mean). An empty function means no metric.
using metric_function = std::function<double(const tensor& outputs, const tensor& targets)>;

/// Called after each epoch with its record. A callable returning `bool` stops
/// training by returning false (early stopping); one returning void never stops it.
class epoch_callback {
 public:
  epoch_callback() = default;
  epoch_callback(std::nullptr_t) {}  // NOLINT: "no callback"
  template <class F, std::enable_if_t<!std::is_same_v<std::decay_t<F>, epoch_callback> &&
                                          std::is_invocable_v<std::decay_t<F>&, const epoch_record&>,
                                      int> = 0>
  epoch_callback(F&& f) {  // NOLINT: implicit on purpose
    using G = std::decay_t<F>;
    if constexpr (std::is_void_v<std::invoke_result_t<G&, const epoch_record&>>)
      fn_ = [g = G(std::forward<F>(f))](const epoch_record& r) mutable {
        g(r);
        return true;
      };
    else
      fn_ = [g = G(std::forward<F>(f))](const epoch_record& r) mutable { return static_cast<bool>(g(r)); };
  }
  explicit operator bool() const noexcept { return static_cast<bool>(fn_); }
  /// True: go on.
  bool operator()(const epoch_record& r) const { return fn_ ? fn_(r) : true; }

 private:
  std::function<bool(const epoch_record&)> fn_;
};

/// How `fit` picks the thread count of each training step. Every policy but `fixed` keeps
/// each parallel region to the cores other processes leave idle (kernels/idle_cores.hpp,
/// on by default for every entry point) and times the steps (kernels/thread_governor.hpp),
/// keeping the faster count: two threads are never slower than one, on a machine where
/// another process keeps a core busy, or on a model too small to gain from a second thread.
/// `predict` and `evaluate` time their batches the same way when they have enough of them.
enum class thread_policy {
  /// `adaptive` (issue 34; before it, only in deterministic mode).
  automatic,
  /// The calling thread's OpenMP count (OMP_NUM_THREADS, omp_set_num_threads) throughout,
  /// the idle-core limit off for the run: two runs of the same program give the same bits
  /// however busy the machine (and run as slowly as its busiest core makes them).
  fixed,
  /// Timed: the fastest count, measured again as the machine's load changes, within the
  /// idle-core limit. Outside deterministic mode the bits then depend on the counts the
  /// timing chose (the last bits of OpenBLAS's large GEMMs and oneDNN's large kernel
  /// gradients).
  adaptive,
};

/// Options of `fit`.
struct fit_options {
  /// The epoch to stop after, counted from the start of training (Keras's `epochs`):
  /// a call runs epochs initial_epoch + 1 ... epochs.
  std::size_t epochs = 1;
  /// Epochs already run (Keras's `initial_epoch`): to resume from a checkpoint saved after
  /// epoch k, pass k. The shuffled orders are those the uninterrupted run would draw for
  /// these epochs, so with the model, optimizer and dropout state restored the resumed
  /// run gives the uninterrupted run's weights bit for bit.
  std::size_t initial_epoch = 0;
  std::size_t batch_size = 32;
  std::uint32_t seed = 0;  ///< seeds the shuffle (initializers and dropout use xq::random_engine())
  bool shuffle = true;     ///< a new order each epoch; false: the dataset's order
  bool verbose = true;     ///< false: no progress output
  const dataset* validation = nullptr;  ///< evaluated after each epoch; not owned, must outlive fit
  /// nullptr: none. The default is chosen from the loss (train/default_metric.hpp): accuracy
  /// for the cross-entropies, none for mean squared error.
  metric_function metric = automatic_metric;
  std::string metric_name = "accuracy";  ///< shown when there is a metric
  std::size_t max_steps_per_epoch = 0;  ///< 0: every batch
  epoch_callback on_epoch_end;
  /// Keras's callbacks (train/fit_callback.hpp), called in this order at each hook: TensorBoard
  /// logging (io/tensorboard.hpp), a user's own.
  std::vector<std::shared_ptr<fit_callback>> callbacks;
  progress_options progress;  ///< where and how progress is shown
  thread_policy threads = thread_policy::automatic;  ///< how each step's thread count is chosen (fixed: same bits)
  /// Data-parallel training (train/distributed_training.hpp; xq::dist::data_parallel over
  /// MPI): `batch_size` is then each rank's share, and every rank trains on its shard of
  /// global batches of batch_size × ranks rows. Not owned; null: this process alone.
  distributed_training* distributed = nullptr;
};

/// What `evaluate` measured.
struct evaluation {
  double loss = 0.0;
  std::optional<double> metric;
  std::size_t samples = 0;
};

namespace detail {

/// The loss's value as a double, after checking it is one number.
XQ_DECL double loss_value(const var& loss, const char* where);

/// Rows [first, first + count) of `source`, one memcpy.
XQ_DECL tensor slice_rows(const tensor& source, std::size_t first, std::size_t count);

/// Seconds from `start` until now.
XQ_DECL double seconds_since(std::chrono::steady_clock::time_point start);

/// Two scalar losses added (the multi-output sum).
XQ_DECL var sum_losses(const var& a, const var& b);

/// `fit`'s checks of its data and options, before anything is done.
XQ_DECL void check_fit_arguments(const dataset& train, const fit_options& opts);

/// A model's forward call without its type (inputs and outputs as lists,
/// core/model_call.hpp): what `predict` needs, compiled once (train/impl/fit.ipp).
struct forward_target {
  layer_ref model;
  var_list (*forward)(void* model, const var_list& inputs, const char* where);

  var_list operator()(const var_list& inputs, const char* where) const { return forward(model.object, inputs, where); }
};

template <class Model>
forward_target forward_target_of(Model& model) {
  static_assert(!std::is_const_v<Model>, "xquant: fit, evaluate and predict name the model's layers; they need a non-const model");
  return {as_layer_ref(model), [](void* m, const var_list& x, const char* where) -> var_list {
            return call_model(*static_cast<Model*>(m), x, where);
          }};
}

/// What the training loops need of a model and a loss, without their types: `fit` and
/// `evaluate` are compiled once (train/impl/fit.ipp) instead of once per model type in
/// every program (core/layer_ref.hpp says why). Valid while the model and loss live.
struct training_target : forward_target {
  void* loss;
  var (*loss_of)(void* loss, const var_list& outputs, const var_list& targets, const var_list& inputs,
                 const char* where);

  var loss_value_of(const var_list& outputs, const var_list& targets, const var_list& inputs,
                    const char* where) const {
    return loss_of(loss, outputs, targets, inputs, where);
  }
};

/// The sum over the outputs of `loss(output k, target k)`, or `loss(outputs, targets)`
/// for a loss that takes the lists, or `loss(outputs, targets, inputs)` for one that also
/// reads the batch's inputs (see the file comment).
template <class Loss>
var apply_loss(Loss& loss, const var_list& outputs, const var_list& targets, const var_list& inputs, const char* where) {
  if constexpr (std::is_invocable_r_v<var, Loss&, const var_list&, const var_list&, const var_list&>) {
    return loss(outputs, targets, inputs);
  } else if constexpr (std::is_invocable_r_v<var, Loss&, const var_list&, const var_list&>) {
    return loss(outputs, targets);
  } else {
    if (outputs.size() != targets.size())
      throw argument_error(where, concat("one target per model output (", outputs.size(), ")"),
                           concat(targets.size(), targets.size() == 1 ? " target" : " targets"));
    var total = loss(outputs[0], targets[0]);
    for (std::size_t k = 1; k < outputs.size(); ++k) total = sum_losses(total, loss(outputs[k], targets[k]));
    return total;
  }
}

/// `loss_call(outputs, targets, where)`: a lambda over apply_loss (a loss may be a function).
template <class Model, class LossCall>
training_target training_target_of(Model& model, LossCall& loss_call) {
  training_target t;
  static_cast<forward_target&>(t) = forward_target_of(model);
  t.loss = &loss_call;
  t.loss_of = [](void* l, const var_list& y, const var_list& targets, const var_list& x, const char* where) -> var {
    return (*static_cast<LossCall*>(l))(y, targets, x, where);
  };
  return t;
}

/// The lambda `training_target_of` takes, for `loss`.
template <class Loss>
auto loss_call_of(Loss& loss) {
  return [&loss](const var_list& y, const var_list& targets, const var_list& x, const char* where) -> var {
    return apply_loss(loss, y, targets, x, where);
  };
}

/// The metric the loss chooses when `metric` is `automatic_metric` and the loss has a
/// `default_metric` (an empty function for `void`: none); nullopt to keep `metric`.
template <class Loss>
std::optional<metric_function> chosen_metric(const metric_function& metric) {
  using L = std::remove_cv_t<std::remove_reference_t<Loss>>;
  if constexpr (has_default_metric_v<L>) {
    if (metric && metric.template target<automatic_metric_fn>()) {
      if constexpr (std::is_void_v<default_metric_t<L>>) return metric_function();
      else return metric_function(default_metric_t<L>{});
    }
  }
  return std::nullopt;
}

/// An optimizer's step and zero_grad, without its type; `learning_rate` null where the
/// optimizer has no `learning_rate()`.
struct optimizer_ref {
  void* object;
  void (*step)(void*);
  void (*zero_grad)(void*);
  double (*learning_rate)(void*) = nullptr;
};

template <class T>
using learning_rate_op = decltype(static_cast<double>(std::declval<T&>().learning_rate()));

/// `opt` as an optimizer_ref.
template <class Optimizer>
optimizer_ref optimizer_ref_of(Optimizer& opt) {
  optimizer_ref o{&opt, [](void* p) { static_cast<Optimizer*>(p)->step(); },
                  [](void* p) { static_cast<Optimizer*>(p)->zero_grad(); }};
  if constexpr (detect<Optimizer, learning_rate_op>::value)
    o.learning_rate = [](void* p) { return static_cast<double>(static_cast<Optimizer*>(p)->learning_rate()); };
  return o;
}

XQ_DECL evaluation run_evaluate(const training_target& t, const dataset& data, std::size_t batch_size,
                                const metric_function& metric);
XQ_DECL std::vector<tensor> run_predict(const forward_target& t, const std::vector<const tensor*>& inputs,
                                        std::size_t batch_size);
XQ_DECL fit_history run_fit(const training_target& t, const optimizer_ref& opt, const dataset& train,
                            const fit_options& opts);

}  // namespace detail

/// Mean loss (and metric: by default the loss's, as in `fit`) of `model` on `data`, in inference mode (batch_norm uses
/// its moving statistics, dropout passes everything) and under `no_grad`, so
/// nothing is recorded on any tape.
template <class Model, class Loss>
evaluation evaluate(Model& model, Loss&& loss, const dataset& data, std::size_t batch_size = 32,
                    const metric_function& metric = automatic_metric) {
  auto loss_call = detail::loss_call_of(loss);
  const std::optional<metric_function> chosen = detail::chosen_metric<Loss>(metric);
  return detail::run_evaluate(detail::training_target_of(model, loss_call), data, batch_size,
                              chosen ? *chosen : metric);
}

/// The model's outputs for `inputs` (N, ...), computed in batches in inference
/// mode under `no_grad` and stacked into one (N, ...) tensor. A model with several
/// outputs: the overload below.
template <class Model>
tensor predict(Model& model, const tensor& inputs, std::size_t batch_size = 32) {
  std::vector<tensor> out = detail::run_predict(detail::forward_target_of(model), {&inputs}, batch_size);
  if (out.size() != 1)
    throw argument_error("xq::predict", "a model with one output (several: predict with a list of inputs)",
                         detail::concat("a model with ", out.size(), " outputs"));
  return std::move(out.front());
}

/// The outputs of a model with several inputs (or outputs), each (N, ...): inputs in
/// the order the model takes them (core/model_call.hpp), all with N rows.
template <class Model>
std::vector<tensor> predict(Model& model, const std::vector<tensor>& inputs, std::size_t batch_size = 32) {
  std::vector<const tensor*> list;
  for (const tensor& t : inputs) list.push_back(&t);
  return detail::run_predict(detail::forward_target_of(model), list, batch_size);
}

/// Trains `model` on `train` for epochs `opts.initial_epoch + 1` to `opts.epochs`. Each
/// batch: training mode on, a fresh tape, forward, `loss(output, targets)`, backward,
/// `opt.step()`, `opt.zero_grad()`. The same seed (and the same initial weights) gives
/// the same batches and so bit-identical weights: on one thread count, or on any in
/// deterministic mode (`xq::set_deterministic(true)`; README's "Threads"). Returns the
/// per-epoch history.
///
/// Nothing is lost to a bad step: a loss that is NaN or infinite stops training (Keras's
/// TerminateOnNaN; `fit_history::non_finite_loss` says where), and an exception from a
/// step (an optimizer refusing a non-finite gradient, a quantizer refusing a non-finite
/// batch) propagates; either way the step is not applied, and the model's non-trainable
/// state that its forward moved (batch-norm moving statistics, quantizer ranges) is put
/// back as it was before that step. (Only a parameter created by that very step, on a
/// model's first call, has no earlier value to go back to.) The first step checks that the forward
/// code calls only layers the model reaches through its children (core/layer_call.hpp).
///
/// The metric is `opts.metric`; by default the loss's (train/default_metric.hpp: accuracy
/// for the cross-entropies, none for mean squared error), as Keras resolves "accuracy".
///
/// The quantizers' metrics (flip ratio, gradient flow; those turned on) are reset at
/// each epoch's start and read at its end, after the training steps and before
/// validation, into `epoch_record::quantizer_metrics` and the progress output (as
/// Keras resets a model's metrics each epoch and reports Larq's with the others).
template <class Model, class Optimizer, class Loss>
fit_history fit(Model& model, Optimizer& opt, Loss&& loss, const dataset& train, const fit_options& opts = {}) {
  const detail::optimizer_ref o = detail::optimizer_ref_of(opt);
  auto loss_call = detail::loss_call_of(loss);
  const detail::training_target target = detail::training_target_of(model, loss_call);
  std::optional<metric_function> metric = detail::chosen_metric<Loss>(opts.metric);
  if (!metric) return detail::run_fit(target, o, train, opts);
  // The loss chose the metric (or none): options with it, the callback still the caller's.
  fit_options chosen = opts;
  chosen.metric = std::move(*metric);
  if (opts.on_epoch_end) chosen.on_epoch_end = [&opts](const epoch_record& r) { return opts.on_epoch_end(r); };
  return detail::run_fit(target, o, train, chosen);
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/fit.ipp"
#endif
