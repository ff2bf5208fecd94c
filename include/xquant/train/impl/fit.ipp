#pragma once
/// \file fit.ipp
/// The training loop's code that does not depend on the model's type (train/fit.hpp).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../../layers/add.hpp"
#include "../fit.hpp"
#include "../rank_agreement.hpp"

namespace xq {

XQ_DECL const epoch_record& fit_history::last() const {
  if (epochs.empty()) throw argument_error("xq::fit_history::last", "at least one epoch", "none");
  return epochs.back();
}

namespace detail {

XQ_DECL double loss_value(const var& loss, const char* where) {
  if (!loss.defined() || loss.size() != 1)
    throw argument_error(where, "a loss that is one number (shape ())",
                         loss.defined() ? shape_string(loss.shape()) : std::string("an empty var"));
  return static_cast<double>(loss.value().data()[0]);
}

XQ_DECL tensor slice_rows(const tensor& source, std::size_t first, std::size_t count) {
  const std::size_t row = source.shape()[0] ? source.size() / source.shape()[0] : 0;
  tensor::shape_type shape = source.shape();
  shape[0] = count;
  tensor out = tensor::from_shape(shape);
  if (row != 0 && count != 0) std::memcpy(out.data(), source.data() + first * row, row * count * sizeof(float));
  return out;
}

XQ_DECL var sum_losses(const var& a, const var& b) { return ops::add(a, b, "xq::fit (the sum of the outputs' losses)"); }

/// Rows [first, first + count) of each of `tensors`, as a model's inputs or targets.
inline var_list slice_rows_of(const std::vector<const tensor*>& tensors, std::size_t first, std::size_t count) {
  var_list out;
  out.reserve(tensors.size());
  for (const tensor* t : tensors) out.emplace_back(slice_rows(*t, first, count));
  return out;
}

/// The dataset's inputs, or its targets, as a list.
inline std::vector<const tensor*> inputs_of(const dataset& d) {
  std::vector<const tensor*> out;
  for (std::size_t k = 0; k < d.input_count(); ++k) out.push_back(&d.input(k));
  return out;
}
inline std::vector<const tensor*> targets_of(const dataset& d) {
  std::vector<const tensor*> out;
  for (std::size_t k = 0; k < d.target_count(); ++k) out.push_back(&d.target(k));
  return out;
}

/// A batch's inputs, or targets, as lists (moved out of the batch).
inline var_list take_inputs(batch& b) {
  var_list out;
  out.emplace_back(std::move(b.inputs));
  for (tensor& t : b.extra_inputs) out.emplace_back(std::move(t));
  return out;
}
inline var_list take_targets(batch& b) {
  var_list out;
  out.emplace_back(std::move(b.targets));
  for (tensor& t : b.extra_targets) out.emplace_back(std::move(t));
  return out;
}

XQ_DECL double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

XQ_DECL void check_fit_arguments(const dataset& train, const fit_options& opts) {
  train.validate("xq::fit");
  if (opts.validation) opts.validation->validate("xq::fit (validation data)");
  if (opts.batch_size == 0)
    throw argument_error("xq::fit", "batch_size >= 1 (a size above the sample count trains on all of them at once)",
                         "batch_size = 0");
  if (train.size() == 0) throw argument_error("xq::fit", "at least one training sample", "an empty dataset");
  if (opts.initial_epoch > opts.epochs)
    throw argument_error("xq::fit", concat("initial_epoch <= epochs (", opts.epochs, ")"), concat(opts.initial_epoch));
  for (std::size_t k = 0; k < opts.callbacks.size(); ++k)
    if (!opts.callbacks[k]) throw argument_error("xq::fit", "callbacks that are objects", concat("callbacks[", k, "] null"));
}

/// `pass()` under the reachability check of the model `target` holds (core/model.hpp's checked_calls).
template <class Pass>
decltype(auto) checked_calls(const training_target& target, Pass&& pass) {
  const reachable_layers reachable = reachable_from(target.model);
  return with_reachability_check(reachable, std::forward<Pass>(pass));
}

/// A thread governor (kernels/thread_governor.hpp) for an inference loop of `batches`
/// batches, when it has enough of them to pay for its probes (a warm-up and probe_steps at
/// each count, twice over): on a small model two threads can be slower than one on an idle
/// machine too (issue 34); the loop then keeps the faster count. Each call has its own, so
/// concurrent calls share nothing. None where the idle-core limit is off for the calling
/// thread (set_idle_core_limit(false), XQ_IDLE_CORE_LIMIT=0, fit's thread_policy::fixed):
/// the OpenMP count throughout, as asked.
inline std::optional<kernels::thread_governor> inference_governor(std::size_t batches) {
  std::optional<kernels::thread_governor> g;
  if (kernels::openmp_threads() <= 1 || !idle_core_limit()) return g;
  g.emplace();
  const kernels::thread_governor_options o;
  if (batches < 2 * (1 + o.probe_steps * g->candidates().size())) g.reset();
  return g;
}

XQ_DECL evaluation run_evaluate(const training_target& target, const dataset& data, std::size_t batch_size,
                                const metric_function& metric) {
  data.validate("xq::evaluate");
  if (batch_size == 0) throw argument_error("xq::evaluate", "batch_size >= 1", "0");
  set_stale_paths(target.model, "");  // writes nothing once named: concurrent calls are safe
  no_grad off;
  training_mode inference(false);
  running_mean loss_mean, metric_mean;
  const std::size_t n = data.size();
  const std::vector<const tensor*> inputs = inputs_of(data), targets = targets_of(data);
  std::optional<kernels::thread_governor> governor = inference_governor(batch_count(n, batch_size));
  for (std::size_t first = 0; first < n; first += batch_size) {
    const std::size_t count = std::min(batch_size, n - first);
    std::optional<kernels::thread_governor::step_scope> timed;
    if (governor) timed.emplace(*governor);
    const var_list t = slice_rows_of(targets, first, count);
    const var_list x = slice_rows_of(inputs, first, count);
    const var_list out = target(x, "xq::evaluate");
    var l = target.loss_value_of(out, t, x, "xq::evaluate");
    loss_mean.add(loss_value(l, "xq::evaluate"), static_cast<double>(count));
    if (metric) metric_mean.add(metric(out.at(0).value(), t[0].value()), static_cast<double>(count));
  }
  evaluation e;
  e.loss = loss_mean.mean();
  if (metric) e.metric = metric_mean.mean();
  e.samples = n;
  return e;
}

XQ_DECL std::vector<tensor> run_predict(const forward_target& target, const std::vector<const tensor*>& inputs,
                                        std::size_t batch_size) {
  if (inputs.empty()) throw argument_error("xq::predict", "at least one input", "none");
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k]->dimension() == 0 || inputs[k]->shape()[0] != inputs[0]->shape()[0])
      throw shape_error("xq::predict",
                        k == 0 ? std::string("inputs of shape (N, ...)")
                               : concat("input ", k, " of shape (", inputs[0]->shape()[0], ", ...)"),
                        shape_string(inputs[k]->shape()));
  if (batch_size == 0) throw argument_error("xq::predict", "batch_size >= 1", "0");
  set_stale_paths(target.model, "");  // writes nothing once named: concurrent calls are safe
  no_grad off;
  training_mode inference(false);
  const std::size_t n = inputs[0]->shape()[0];
  std::vector<tensor> result;
  std::vector<std::size_t> row;  // elements per sample of each output
  std::optional<kernels::thread_governor> governor = inference_governor(batch_count(n, batch_size));
  for (std::size_t first = 0; first < n; first += batch_size) {
    const std::size_t count = std::min(batch_size, n - first);
    std::optional<kernels::thread_governor::step_scope> timed;
    if (governor) timed.emplace(*governor);
    const var_list out = target(slice_rows_of(inputs, first, count), "xq::predict");
    if (first == 0) {
      for (const var& o : out) {
        if (o.dimension() == 0 || o.shape()[0] != count)
          throw shape_error("xq::predict", concat("outputs of shape (", count, ", ...)"), shape_string(o.shape()));
        tensor::shape_type shape = o.shape();
        shape[0] = n;
        result.push_back(tensor::from_shape(shape));
        row.push_back(o.size() / count);
      }
    }
    if (out.size() != result.size())
      throw argument_error("xq::predict", concat(result.size(), " outputs on every batch"), concat(out.size()));
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (out[k].size() != row[k] * count) {
        tensor::shape_type want = result[k].shape();
        want[0] = count;
        throw shape_error("xq::predict", concat("outputs of shape ", shape_string(want)), shape_string(out[k].shape()));
      }
      std::copy(out[k].value().data(), out[k].value().data() + out[k].size(), result[k].data() + first * row[k]);
    }
  }
  if (n == 0) result.assign(1, tensor::from_shape(tensor::shape_type{0}));
  return result;
}

/// The values of a model's non-trainable parameters (batch-norm moving statistics,
/// quantizer ranges): what a training forward moves before its step is known to be
/// good. `take` copies them into buffers kept from the previous step; `restore` puts
/// them back.
class non_trainable_snapshot {
 public:
  void take(layer_ref model) {
    std::size_t k = 0;
    for (const auto& p : parameters(model)) {
      if (p->trainable()) continue;
      if (k == saved_.size()) saved_.emplace_back();
      auto& [owner, copy] = saved_[k++];
      owner = p;
      if (copy.shape() == p->value.shape()) std::copy(p->value.begin(), p->value.end(), copy.begin());
      else copy = p->value;
    }
    saved_.resize(k);
  }
  void restore() {
    for (auto& [owner, copy] : saved_)
      if (owner->value.shape() == copy.shape()) std::copy(copy.begin(), copy.end(), owner->value.begin());
  }

 private:
  std::vector<std::pair<parameter_ptr, tensor>> saved_;
};

/// Rank `d.rank()`'s rows [begin, end) of `n`.
XQ_DECL std::pair<std::size_t, std::size_t> rows_of_rank(std::size_t n, const distributed_training& d) {
  return shard_rows(n, static_cast<std::size_t>(d.rank()), static_cast<std::size_t>(d.ranks()));
}

/// This rank's shard of `data` (a copy of its rows).
XQ_DECL dataset shard_of(const dataset& data, const distributed_training& d) {
  const auto [begin, end] = rows_of_rank(data.size(), d);
  std::vector<tensor> inputs, targets;
  for (std::size_t k = 0; k < data.input_count(); ++k) inputs.push_back(slice_rows(data.input(k), begin, end - begin));
  for (std::size_t k = 0; k < data.target_count(); ++k) targets.push_back(slice_rows(data.target(k), begin, end - begin));
  return dataset::of(std::move(inputs), std::move(targets));
}

/// A rank's batch loss, metric (means over its `count` rows) and count become the whole
/// batch's; the loss is NaN on every rank when it is not finite on some rank.
XQ_DECL void combine_over_ranks(distributed_training& d, double& loss, double& metric, std::size_t& count) {
  const bool finite = std::isfinite(loss);
  const double c = static_cast<double>(count);
  double sums[4] = {finite ? loss * c : 0.0, finite ? metric * c : 0.0, c, finite ? 0.0 : 1.0};
  d.sum(sums, 4);
  count = static_cast<std::size_t>(sums[2]);
  if (sums[3] > 0.0) {
    if (finite) loss = std::numeric_limits<double>::quiet_NaN();  // another rank's
    return;
  }
  loss = sums[2] > 0.0 ? sums[0] / sums[2] : 0.0;
  metric = sums[2] > 0.0 ? sums[1] / sums[2] : 0.0;
}

/// A rank's evaluation of its shard becomes the whole data's.
XQ_DECL void combine_over_ranks(distributed_training& d, evaluation& e) {
  const double c = static_cast<double>(e.samples);
  double sums[3] = {e.loss * c, e.metric.value_or(0.0) * c, c};
  d.sum(sums, 3);
  e.samples = static_cast<std::size_t>(sums[2]);
  e.loss = sums[2] > 0.0 ? sums[0] / sums[2] : 0.0;
  if (e.metric) e.metric = sums[2] > 0.0 ? sums[1] / sums[2] : 0.0;
}

/// Each value the mean of the ranks' values (every rank has the same names in the same order).
XQ_DECL void average_over_ranks(distributed_training& d, std::vector<std::pair<std::string, double>>& values) {
  if (values.empty()) return;
  std::vector<double> v;
  for (const auto& [name, value] : values) v.push_back(value);
  d.sum(v.data(), v.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i].second = v[i] / static_cast<double>(d.ranks());
}

/// begin_step / end_step around a training step, when training is distributed.
class distributed_step_scope {
 public:
  distributed_step_scope(distributed_training* d, layer_ref model) : d_(d) {
    if (d_) d_->begin_step(model);
  }
  ~distributed_step_scope() {
    if (d_) d_->end_step();
  }
  distributed_step_scope(const distributed_step_scope&) = delete;
  distributed_step_scope& operator=(const distributed_step_scope&) = delete;

 private:
  distributed_training* d_;
};

XQ_DECL fit_history run_fit(const training_target& target, const optimizer_ref& opt, const dataset& train,
                            const fit_options& opts) {
  check_fit_arguments(train, opts);
  const std::size_t n = train.size();
  set_paths(target.model, "");
  distributed_training* const dist = opts.distributed;
  const std::size_t ranks = dist ? static_cast<std::size_t>(dist->ranks()) : 1;
  // Every rank's shard together; saturated, so that a huge batch_size cannot wrap to a small one.
  const std::size_t global_batch =
      opts.batch_size > std::numeric_limits<std::size_t>::max() / ranks ? std::numeric_limits<std::size_t>::max()
                                                                         : opts.batch_size * ranks;

  std::size_t steps = batch_count(n, global_batch);
  // Under data parallelism a last batch with fewer rows than ranks cannot be split: dropped.
  if (dist && steps > 0 && n - (steps - 1) * global_batch < ranks) --steps;
  if (opts.max_steps_per_epoch) steps = std::min(steps, opts.max_steps_per_epoch);
  const bool has_metric = static_cast<bool>(opts.metric);

  fit_history history;
  history.metric_name = has_metric ? opts.metric_name : std::string();
  progress_options shown = opts.progress;
  if (!opts.verbose || (dist && dist->rank() != 0)) shown.style = progress_style::silent;
  progress bar(opts.epochs, steps, history.metric_name, shown);

  std::mt19937 rng(opts.seed);
  // A resumed run draws (and drops) the orders of the epochs already run, so each of its
  // epochs gets the order the uninterrupted run gave it.
  if (opts.shuffle)
    for (std::size_t epoch = 1; epoch <= opts.initial_epoch; ++epoch) shuffled_order(n, rng);
  non_trainable_snapshot before_step;
  // Timed by default (issue 34): on a small model two threads can be slower than one even
  // on an idle machine; fixed keeps the OpenMP count.
  std::optional<kernels::thread_governor> governor;
  if (opts.threads != thread_policy::fixed) governor.emplace();
  // fixed: the OpenMP count throughout, however busy the machine (kernels/idle_cores.hpp).
  std::optional<idle_core_limit_scope> exact_threads;
  if (opts.threads == thread_policy::fixed) exact_threads.emplace(false);
  // Under data parallelism each rank validates its shard of the validation data.
  std::optional<dataset> validation_shard;
  if (dist && opts.validation) validation_shard = shard_of(*opts.validation, *dist);
  const dataset* validation = validation_shard ? &*validation_shard : opts.validation;
  // Every rank the same model, data and options, or every rank throws: ranks that differ
  // would wait for each other forever or train on garbage (issue 34).
  if (dist) check_ranks_agree(*dist, target.model, fit_rank_values(train, opts, steps), "xq::fit (data parallel)");
  if (dist) dist->begin_training(target.model);
  fit_context context;
  context.model = target.model;
  context.initial_epoch = opts.initial_epoch;
  context.epochs = opts.epochs;
  context.steps_per_epoch = steps;
  context.batch_size = global_batch;
  context.metric_name = history.metric_name;
  context.rank = dist ? dist->rank() : 0;
  context.ranks = static_cast<int>(ranks);
  for (const auto& c : opts.callbacks) c->on_train_begin(context);
  opt.zero_grad(opt.object);
  for (std::size_t epoch = opts.initial_epoch + 1; epoch <= opts.epochs; ++epoch) {
    const std::vector<std::size_t> order = opts.shuffle ? shuffled_order(n, rng) : sequential_order(n);
    running_mean loss_mean, metric_mean;
    std::size_t samples = 0, steps_run = 0;
    bar.begin_epoch(epoch);
    reset_quantizer_metrics(target.model);
    for (const auto& c : opts.callbacks) c->on_epoch_begin(epoch);
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t s = 0; s < steps; ++s) {
      const std::size_t global_step = (epoch - 1) * steps + s + 1;
      for (const auto& c : opts.callbacks) c->on_step_begin(global_step);
      const auto step_start = std::chrono::steady_clock::now();
      // For the callbacks: the rate this step applies (read before the step moves the
      // optimizer's schedule on).
      const std::optional<double> learning_rate = !opts.callbacks.empty() && opt.learning_rate
                                                      ? std::optional<double>(opt.learning_rate(opt.object))
                                                      : std::nullopt;
      const std::size_t first = s * global_batch, global_count = std::min(global_batch, n - first);
      const auto [shard_begin, shard_end] =
          dist ? rows_of_rank(global_count, *dist) : std::pair<std::size_t, std::size_t>{0, global_count};
      batch b = make_batch(train, order, first + shard_begin, shard_end - shard_begin);
      std::size_t count = b.size();
      double batch_loss = 0.0, batch_metric = 0.0;
      std::optional<kernels::thread_governor::step_scope> timed;
      if (governor) timed.emplace(*governor);
      before_step.take(target.model);
      try {
        {
          distributed_step_scope distributed_step(dist, target.model);
          training_mode training(true);
          tape t;
          // The first step also checks that the forward code calls only the model's children.
          const bool first = epoch == opts.initial_epoch + 1 && s == 0;
          const var_list targets = take_targets(b);
          var_list inputs = take_inputs(b);
          const var_list out = first ? checked_calls(target, [&] { return target(inputs, "xq::fit"); })
                                     : target(inputs, "xq::fit");
          var l = target.loss_value_of(out, targets, inputs, "xq::fit");
          inputs.clear();
          batch_loss = loss_value(l, "xq::fit");
          if (has_metric && std::isfinite(batch_loss)) batch_metric = opts.metric(out.at(0).value(), targets[0].value());
          // Under data parallelism: the whole batch's loss and metric, and every rank stops
          // when any rank's loss is not finite.
          const std::size_t shard_rows = count;
          if (dist) combine_over_ranks(*dist, batch_loss, batch_metric, count);
          if (!std::isfinite(batch_loss)) {
            history.non_finite_loss = non_finite_loss_stop{epoch, s + 1, batch_loss};
          } else {
            if (has_metric) metric_mean.add(batch_metric, static_cast<double>(count));
            if (dist) {
              // The shard's mean loss weighted by its share of the batch (times the ranks,
              // whose average follows): with unequal shards the gradients are still the
              // whole batch's mean's, in batch_norm's backward sums too.
              const double weight = static_cast<double>(shard_rows * ranks) / static_cast<double>(count);
              tensor seed = tensor::from_shape(l.value().shape());
              std::fill(seed.begin(), seed.end(), static_cast<float>(weight));
              t.backward(l, std::move(seed));
              dist->average_gradients(target.model);
            } else {
              t.backward(l);
            }
          }
        }
        if (!history.non_finite_loss) {
          opt.step(opt.object);
          if (dist) dist->after_update(target.model);
        }
      } catch (...) {
        before_step.restore();
        opt.zero_grad(opt.object);
        throw;
      }
      if (history.non_finite_loss) {
        before_step.restore();
        opt.zero_grad(opt.object);
        break;
      }
      opt.zero_grad(opt.object);
      loss_mean.add(batch_loss, static_cast<double>(count));
      samples += count;
      ++steps_run;
      if (!opts.callbacks.empty()) {
        fit_step done;
        done.epoch = epoch;
        done.step = s + 1;
        done.global_step = global_step;
        done.samples = count;
        done.loss = batch_loss;
        if (has_metric) done.metric = batch_metric;
        done.seconds = seconds_since(step_start);
        done.learning_rate = learning_rate;
        for (const auto& c : opts.callbacks) c->on_step_end(done);
      }
      bar.update(s + 1, samples, loss_mean.mean(),
                 has_metric ? std::optional<double>(metric_mean.mean()) : std::nullopt);
    }
    epoch_record r;
    r.epoch = epoch;
    r.steps = steps_run;
    r.samples = samples;
    r.seconds = seconds_since(start);
    r.samples_per_second = r.seconds > 0.0 ? static_cast<double>(samples) / r.seconds : 0.0;
    r.loss = loss_mean.mean();
    if (has_metric && steps_run > 0) r.metric = metric_mean.mean();
    r.quantizer_metrics = quantizer_metrics(target.model);
    if (dist) average_over_ranks(*dist, r.quantizer_metrics);
    if (validation) {
      evaluation v = run_evaluate(target, *validation, opts.batch_size, opts.metric);
      if (dist) combine_over_ranks(*dist, v);
      r.val_loss = v.loss;
      r.val_metric = v.metric;
    }
    bar.end_epoch(samples, r.loss, r.metric, r.seconds, r.val_loss, r.val_metric, r.quantizer_metrics);
    history.epochs.push_back(r);
    for (const auto& c : opts.callbacks) c->on_epoch_end(history.epochs.back());
    if (const auto& stop = history.non_finite_loss) {
      bar.note(concat("stopped: the loss of epoch ", stop->epoch, " step ", stop->step, " was ", stop->loss,
                      "; that step was not applied (model and optimizer as before it)"));
      break;
    }
    // One rank's callback stopping stops every rank: a rank that returned would leave the
    // others waiting in their next step's collectives.
    double stop = opts.on_epoch_end(history.epochs.back()) ? 0.0 : 1.0;
    if (dist) dist->sum(&stop, 1);
    if (stop > 0.0) {
      history.stopped_early = true;
      break;
    }
  }
  for (const auto& c : opts.callbacks) c->on_train_end(history);
  return history;
}

}  // namespace detail
}  // namespace xq
