#pragma once
/// \file fit.ipp
/// The training loop's code that does not depend on the model's type (train/fit.hpp).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../fit.hpp"

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

XQ_DECL double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

XQ_DECL void check_fit_arguments(const dataset& train, const fit_options& opts) {
  train.validate("xq::fit");
  if (opts.validation) opts.validation->validate("xq::fit (validation data)");
  if (opts.batch_size == 0) throw argument_error("xq::fit", "batch_size >= 1", "0");
  if (train.size() == 0) throw argument_error("xq::fit", "at least one training sample", "an empty dataset");
  if (opts.initial_epoch > opts.epochs)
    throw argument_error("xq::fit", concat("initial_epoch <= epochs (", opts.epochs, ")"), concat(opts.initial_epoch));
}

/// `pass()` under the reachability check of the model `target` holds (core/model.hpp's checked_calls).
template <class Pass>
var checked_calls(const training_target& target, Pass&& pass) {
  const reachable_layers reachable = reachable_from(target.model);
  return with_reachability_check(reachable, std::forward<Pass>(pass));
}

XQ_DECL evaluation run_evaluate(const training_target& target, const dataset& data, std::size_t batch_size,
                                const metric_function& metric) {
  data.validate("xq::evaluate");
  if (batch_size == 0) throw argument_error("xq::evaluate", "batch_size >= 1", "0");
  set_paths(target.model, "");
  no_grad off;
  training_mode inference(false);
  running_mean loss_mean, metric_mean;
  const std::size_t n = data.size();
  for (std::size_t first = 0; first < n; first += batch_size) {
    const std::size_t count = std::min(batch_size, n - first);
    tensor targets = slice_rows(data.targets, first, count);
    var out = target(var(slice_rows(data.inputs, first, count)));
    var l = target.loss_value_of(out, var(targets));
    loss_mean.add(loss_value(l, "xq::evaluate"), static_cast<double>(count));
    if (metric) metric_mean.add(metric(out.value(), targets), static_cast<double>(count));
  }
  evaluation e;
  e.loss = loss_mean.mean();
  if (metric) e.metric = metric_mean.mean();
  e.samples = n;
  return e;
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

XQ_DECL fit_history run_fit(const training_target& target, const optimizer_ref& opt, const dataset& train,
                            const fit_options& opts) {
  check_fit_arguments(train, opts);
  const std::size_t n = train.size();
  set_paths(target.model, "");

  std::size_t steps = batch_count(n, opts.batch_size);
  if (opts.max_steps_per_epoch) steps = std::min(steps, opts.max_steps_per_epoch);
  const bool has_metric = static_cast<bool>(opts.metric);

  fit_history history;
  history.metric_name = has_metric ? opts.metric_name : std::string();
  progress_options shown = opts.progress;
  if (!opts.verbose) shown.style = progress_style::silent;
  progress bar(opts.epochs, steps, history.metric_name, shown);

  std::mt19937 rng(opts.seed);
  // A resumed run draws (and drops) the orders of the epochs already run, so each of its
  // epochs gets the order the uninterrupted run gave it.
  if (opts.shuffle)
    for (std::size_t epoch = 1; epoch <= opts.initial_epoch; ++epoch) shuffled_order(n, rng);
  non_trainable_snapshot before_step;
  const bool adaptive = opts.threads == thread_policy::adaptive ||
                        (opts.threads == thread_policy::automatic && deterministic());
  std::optional<kernels::thread_governor> governor;
  if (adaptive) governor.emplace();
  opt.zero_grad(opt.object);
  for (std::size_t epoch = opts.initial_epoch + 1; epoch <= opts.epochs; ++epoch) {
    const std::vector<std::size_t> order = opts.shuffle ? shuffled_order(n, rng) : sequential_order(n);
    running_mean loss_mean, metric_mean;
    std::size_t samples = 0, steps_run = 0;
    bar.begin_epoch(epoch);
    reset_quantizer_metrics(target.model);
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t s = 0; s < steps; ++s) {
      batch b = make_batch(train, order, s * opts.batch_size, opts.batch_size);
      const std::size_t count = b.size();
      double batch_loss = 0.0;
      std::optional<kernels::thread_governor::step_scope> timed;
      if (governor) timed.emplace(*governor);
      before_step.take(target.model);
      try {
        {
          training_mode training(true);
          tape t;
          // The first step also checks that the forward code calls only the model's children.
          const bool first = epoch == opts.initial_epoch + 1 && s == 0;
          var out = first ? checked_calls(target, [&] { return target(var(std::move(b.inputs))); })
                          : target(var(std::move(b.inputs)));
          var l = target.loss_value_of(out, var(b.targets));
          batch_loss = loss_value(l, "xq::fit");
          if (!std::isfinite(batch_loss)) {
            history.non_finite_loss = non_finite_loss_stop{epoch, s + 1, batch_loss};
          } else {
            if (has_metric) metric_mean.add(opts.metric(out.value(), b.targets), static_cast<double>(count));
            t.backward(l);
          }
        }
        if (!history.non_finite_loss) opt.step(opt.object);
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
    if (opts.validation) {
      const evaluation v = run_evaluate(target, *opts.validation, opts.batch_size, opts.metric);
      r.val_loss = v.loss;
      r.val_metric = v.metric;
    }
    bar.end_epoch(samples, r.loss, r.metric, r.seconds, r.val_loss, r.val_metric, r.quantizer_metrics);
    history.epochs.push_back(r);
    if (const auto& stop = history.non_finite_loss) {
      bar.note(concat("stopped: the loss of epoch ", stop->epoch, " step ", stop->step, " was ", stop->loss,
                      "; that step was not applied (model and optimizer as before it)"));
      break;
    }
    if (!opts.on_epoch_end(history.epochs.back())) {
      history.stopped_early = true;
      break;
    }
  }
  return history;
}

}  // namespace detail
}  // namespace xq
