// Data-parallel QAT over MPI (include/xquant/distributed/), run by CTest under
// `mpirun -np 2` (label mpi). Each mode is one test:
//
//   data_parallel_tests equivalence (last_value | moving_average) (allreduce | rank0_broadcast | local)
//       2 ranks x batch 32 against 1 process x batch 64, K steps of Adam: on the float CNN
//       (the broadcast parameters, the first step's averaged gradients, the parameters
//       after K steps, within float summation's rounding), then on its QAT twin: with
//       `allreduce` the forward passes run under synchronized_batch, and the gradients,
//       parameters and every quantizer range must be one process's, within rounding;
//       `rank0_broadcast` must leave rank 0's ranges on every rank, `local` each rank its own.
//   data_parallel_tests batch_norm (synchronized | local)
//       the same with batch norm (float, and QAT with the norm folded): synchronized, the
//       moving statistics and everything else must be one process's; local, the ranks'
//       statistics must differ.
//   data_parallel_tests overlap
//       gradients averaged while the backward pass runs against averaged after it: the
//       same bits, buckets sent during the pass; a pass whose graph changed after the
//       schedule was learned is detected, redone and still exact.
//   data_parallel_tests fit_checkpoint
//       xq::fit with xq::dist::data_parallel, 2 ranks x batch 16 against xq::fit in one
//       process x batch 32 (parameters, statistics, ranges, loss and accuracy); a
//       checkpoint written by rank 0 resumed on 1 rank (batch 32) against 2 ranks going
//       on; broadcast_training_state makes every rank's model and Adam state rank 0's; a
//       checkpoint rank 0 cannot write fails on every rank.
//   data_parallel_tests calibration
//       xq::dist::calibrate with every calibration method, 2 ranks on their shards of each
//       batch against xq::calibrate in one process: the same ranges, bit for bit.
//   data_parallel_tests failing_rank
//       rank 1 throws while rank 0 waits in an allreduce: the job must end non-zero (CTest
//       WILL_FAIL), never hang (CTest TIMEOUT).
//   data_parallel_tests mismatch (extra_layer | other_shape | steps | epochs | returns_early | seed |
//                                 dataset_size | batch_size | validation | early_stop |
//                                 calibration_samples)
//       xq::fit on ranks that disagree (rank 1 has one more layer, a kernel of another
//       shape, another max_steps_per_epoch, epoch count, an initial_epoch at which it would
//       return at once, another seed, dataset size, batch size, no validation data): every
//       rank must throw an xq::argument_error naming what differs and each rank's value,
//       never hang (CTest TIMEOUT) nor end in MPI_ERR_TRUNCATE. early_stop: rank 0's
//       epoch callback stops training after one epoch, rank 1's never: both stop there.
//       calibration_samples: xq::dist::calibrate with 300 samples on rank 0, 280 on rank 1.
//
// Rank 0 prints the figures (max |difference| of gradients, parameters, ranges; the
// allreduce's time per step).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <xquant/distributed/data_parallel.hpp>
#include <xquant/distributed/distributed_calibration.hpp>
#include <xquant/distributed/distributed_checkpoint.hpp>
#include <xquant/xquant.hpp>

#include "../deploy/deploy_models.hpp"

namespace {

/// conv 3x3 -> relu -> max pool -> conv 3x3 -> relu -> flatten -> dense 4.
auto make_net() {
  return xq::sequential(xq::conv2d(6, 3).padding(xq::padding::same), xq::relu(), xq::max_pool2d(2), xq::conv2d(8, 3),
                        xq::relu(), xq::flatten(), xq::dense(4));
}

/// The same with a batch norm after each conv and a dropout (whose masks must be one
/// process's too) before the head. The convs lack their bias: a bias
/// before a batch norm has a gradient of exactly zero in exact arithmetic, so its float
/// gradient is rounding noise, which Adam would blow up to full-size steps of either sign.
auto make_norm_net() {
  return xq::sequential(xq::conv2d(6, 3).padding(xq::padding::same).use_bias(false), xq::batch_norm().momentum(0.9f),
                        xq::relu(), xq::max_pool2d(2), xq::conv2d(8, 3).use_bias(false), xq::batch_norm().momentum(0.9f),
                        xq::relu(), xq::dropout(0.25f, 7),
                        xq::flatten(), xq::dense(4));
}

/// A float network built from seed 5: every rank and the reference start alike.
template <class Make>
auto built(Make make) {
  xq::set_seed(5);
  auto model = make();
  xq::build(model, {1, 12, 12, 1});
  return model;
}

/// Its QAT twin (the batch norms folded into the convs when `fold`).
template <class Make>
auto qat_of(Make make, xq::range_tracking tracking, bool fold = false, bool symmetric_inputs = true) {
  auto model = built(make);
  xq::quantize_options qo;
  qo.scheme.input.tracking = tracking;
  qo.scheme.input.symmetric = symmetric_inputs;
  qo.fold_batch_norm = fold;
  return xq::quantize_model(model, qo, {1, 12, 12, 1});
}

auto make_qat(xq::range_tracking tracking) { return qat_of(make_net, tracking); }

/// Rows [begin, end) of a dataset.
xq::dataset rows(const xq::dataset& d, std::size_t begin, std::size_t end) {
  auto in_shape = d.inputs.shape();
  in_shape[0] = end - begin;
  xq::tensor x = xq::tensor::from_shape(in_shape), y = xq::tensor::from_shape({end - begin});
  const std::size_t per = d.inputs.size() / d.inputs.shape()[0];
  std::copy(d.inputs.begin() + std::ptrdiff_t(begin * per), d.inputs.begin() + std::ptrdiff_t(end * per), x.begin());
  std::copy(d.targets.begin() + std::ptrdiff_t(begin), d.targets.begin() + std::ptrdiff_t(end), y.begin());
  return xq::dataset{x, y};
}

/// One training step's forward and backward on `batch` (mean loss): gradients accumulate.
template <class Model>
void forward_backward(Model& model, const xq::dataset& batch) {
  const xq::training_mode training(true);
  xq::tape t;
  const xq::var loss = xq::sparse_softmax_cross_entropy(model(xq::var(batch.inputs)), xq::var(batch.targets));
  t.backward(loss);
}

double max_abs_difference(const std::vector<xq::parameter_ptr>& a, const std::vector<xq::parameter_ptr>& b, bool grads) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const xq::tensor& x = grads ? a[i]->grad : a[i]->value;
    const xq::tensor& y = grads ? b[i]->grad : b[i]->value;
    for (std::size_t e = 0; e < x.size(); ++e) d = std::max(d, std::fabs(double(x.data()[e]) - double(y.data()[e])));
  }
  return d;
}

double max_abs(const std::vector<xq::parameter_ptr>& a, bool grads) {
  double m = 0;
  for (const auto& p : a)
    for (float v : grads ? p->grad : p->value) m = std::max(m, double(std::fabs(v)));
  return m;
}

/// Every fake quantizer's (min, max), in model order.
template <class Model>
std::vector<float> ranges(Model& model) {
  std::vector<float> r;
  xq::for_each_quantizer(model, [&](xq::fake_quantizer& q) {
    const xq::vector lo = q.min(), hi = q.max();
    r.insert(r.end(), lo.begin(), lo.end());
    r.insert(r.end(), hi.begin(), hi.end());
  });
  return r;
}

int fail(const xq::dist::communicator& world, const std::string& what) {
  std::fprintf(stderr, "rank %d: FAILED: %s\n", world.rank(), what.c_str());
  return 1;
}

/// How far the distributed model ended from one process's on the whole batch.
struct side_by_side {
  double first_gradient_difference = 0, first_gradient_scale = 0;  // the first step's (averaged) gradients
  double parameter_difference = 0, parameter_scale = 0;            // the trainable parameters after the steps
  double seconds = 0;                                               // in `step`, per step
};

/// `steps` steps of Adam: `model` on this rank's part of each batch (`step(model, part)`
/// runs its forward, backward and whatever brings the ranks together), `reference` on the
/// whole batch.
template <class Model, class Step>
side_by_side train_side_by_side(const xq::dist::communicator& world, Model& model, Model& reference,
                                const xq::dataset& data, std::size_t steps, std::size_t batch, Step step) {
  const auto trainable = xq::trainable_parameters(model), reference_trainable = xq::trainable_parameters(reference);
  xq::adam opt(trainable, {1e-3f}), reference_opt(reference_trainable, {1e-3f});
  side_by_side r;
  for (std::size_t s = 0; s < steps; ++s) {
    const xq::dataset whole = rows(data, s * batch, (s + 1) * batch);
    const auto [begin, end] = xq::dist::shard(batch, world.rank(), world.size());
    const auto t0 = std::chrono::steady_clock::now();
    step(model, rows(whole, begin, end));
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / double(steps);
    forward_backward(reference, whole);
    if (s == 0) {
      r.first_gradient_difference = max_abs_difference(trainable, reference_trainable, true);
      r.first_gradient_scale = max_abs(reference_trainable, true);
    }
    opt.step();
    opt.zero_grad();
    reference_opt.step();
    reference_opt.zero_grad();
  }
  r.parameter_difference = max_abs_difference(trainable, reference_trainable, false);
  r.parameter_scale = max_abs(reference_trainable, false);
  if (world.rank() == 0) {
    std::printf("  first step's averaged gradients: max |difference| %.3g (largest gradient %.3g)\n",
                r.first_gradient_difference, r.first_gradient_scale);
    std::printf("  parameters after %zu steps: max |difference| %.3g (largest %.3g)\n", steps, r.parameter_difference,
                r.parameter_scale);
  }
  return r;
}

/// Whether the gradients and parameters are one process's within float summation's
/// rounding (two half-batch means averaged against one mean: the sums' order differs).
/// Batch norm divides by the batch's standard deviation, which enlarges that rounding: its
/// networks get `gradient_tolerance` 1e-4.
int check_side_by_side(const xq::dist::communicator& world, const side_by_side& r, const char* what,
                       double gradient_tolerance = 1e-5) {
  if (!(r.first_gradient_difference <= gradient_tolerance * std::max(r.first_gradient_scale, 1e-3)))
    return fail(world, std::string(what) + ": the averaged gradients are not the whole batch's: " +
                           std::to_string(r.first_gradient_difference));
  if (!(r.parameter_difference <= 1e-4 * std::max(r.parameter_scale, 1e-3)))
    return fail(world, std::string(what) + ": the parameters drifted from the whole batch's: " +
                           std::to_string(r.parameter_difference));
  return 0;
}

/// 2 ranks x batch 32 against 1 process x batch 64 on the float network: the broadcast,
/// the first step's averaged gradients, the parameters after `steps` steps of Adam.
int float_equivalence(const xq::dist::communicator& world, const xq::dataset& data, std::size_t steps,
                      std::size_t batch) {
  xq::set_seed(5);
  auto model = make_net();
  xq::build(model, {1, 12, 12, 1});
  xq::set_seed(5);
  auto reference = make_net();  // one process, the whole batch
  xq::build(reference, {1, 12, 12, 1});
  const auto params = xq::parameters(model), reference_params = xq::parameters(reference);
  // Rank 1 starts elsewhere: the broadcast must bring it to rank 0's weights.
  if (world.rank() == 1)
    for (const auto& p : params)
      for (float& v : p->value) v += 0.5f;
  xq::dist::broadcast_parameters(params, world);
  const double start_difference = max_abs_difference(params, reference_params, false);
  if (start_difference != 0.0) return fail(world, "parameters after the broadcast differ by " + std::to_string(start_difference));

  const auto trainable = xq::trainable_parameters(model);
  std::size_t floats = 0;
  for (const auto& p : trainable) floats += p->value.size();
  if (world.rank() == 0)
    std::printf("float network: 2 ranks x batch %zu vs 1 process x batch %zu, %zu Adam steps\n", batch / 2, batch, steps);
  double allreduce_seconds = 0;
  const side_by_side r = train_side_by_side(world, model, reference, data, steps, batch, [&](auto& m, const xq::dataset& part) {
    forward_backward(m, part);
    const auto t0 = std::chrono::steady_clock::now();
    xq::dist::average_gradients(trainable, world);
    allreduce_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  if (world.rank() == 0)
    std::printf("  gradient allreduce of %zu floats: %.3f ms per step\n", floats, 1e3 * allreduce_seconds / double(steps));
  return check_side_by_side(world, r, "float");
}

/// The QAT twin, 2 ranks x batch 32 against 1 process x batch 64, `steps` steps of Adam.
/// allreduce: the forward passes under synchronized_ranges, so every rank rounds on the
/// whole batch's grids: gradients, parameters and ranges must be the whole batch's, up to
/// float summation's order. rank0_broadcast / local: after each step the ranges are rank
/// 0's everywhere / each rank's own.
int qat_equivalence(const xq::dist::communicator& world, const xq::dataset& data, std::size_t steps, std::size_t batch,
                    xq::range_tracking tracking, xq::dist::range_sync policy) {
  auto qat = make_qat(tracking);
  auto reference = make_qat(tracking);
  const auto trainable = xq::trainable_parameters(qat);
  if (world.rank() == 0)
    std::printf("QAT network, ranges %s, sync %s: 2 ranks x batch %zu vs 1 process x batch %zu, %zu Adam steps\n",
                xq::to_string(tracking), xq::dist::to_string(policy), batch / 2, batch, steps);
  std::vector<float> local_ranges;
  const side_by_side r = train_side_by_side(world, qat, reference, data, steps, batch, [&](auto& m, const xq::dataset& part) {
    {
      xq::dist::whole_batch_kinds which;
      which.quantizer_ranges = policy == xq::dist::range_sync::allreduce;
      const xq::dist::synchronized_batch whole_batch(world, which);
      forward_backward(m, part);
    }
    local_ranges = ranges(m);
    xq::dist::average_gradients(trainable, world);
    xq::dist::sync_quantizer_ranges(m, world, policy);
  });
  const std::vector<float> synced = ranges(qat), whole_batch = ranges(reference);
  double range_difference = 0, range_scale = 0;
  std::size_t identical = 0;
  for (std::size_t i = 0; i < synced.size(); ++i) {
    range_difference = std::max(range_difference, std::fabs(double(synced[i]) - double(whole_batch[i])));
    range_scale = std::max(range_scale, std::fabs(double(whole_batch[i])));
    identical += synced[i] == whole_batch[i];
  }
  std::vector<float> rank0 = local_ranges;  // what rank 0 measured on its part, last step
  world.broadcast(rank0.data(), rank0.size(), 0);
  if (world.rank() == 0) {
    std::printf("  quantizer ranges: %zu values, %zu identical to one process's, max |difference| %.3g\n",
                synced.size(), identical, range_difference);
    std::printf("  forward, backward, gradient allreduce and range sync: %.3f ms per step\n", 1e3 * r.seconds);
  }
  if (policy == xq::dist::range_sync::allreduce) {
    if (const int rc = check_side_by_side(world, r, "QAT")) return rc;
    if (!(range_difference <= 1e-5 * std::max(range_scale, 1.0)))
      return fail(world, "QAT: the ranges are not the whole batch's: " + std::to_string(range_difference));
  } else if (policy == xq::dist::range_sync::rank0_broadcast) {
    if (synced != rank0) return fail(world, "rank0_broadcast: ranges other than rank 0's");
  } else {
    if (synced != local_ranges) return fail(world, "local: the ranges changed");
    // The two halves differ, so the ranks' ranges do too, somewhere.
    std::vector<float> highest = local_ranges, lowest = local_ranges;
    world.allreduce(highest.data(), highest.size(), xq::dist::reduction::max);
    world.allreduce(lowest.data(), lowest.size(), xq::dist::reduction::min);
    if (highest == lowest) return fail(world, "local: every rank saw the same ranges (the test's halves are alike)");
  }
  return 0;
}

int equivalence(const xq::dist::communicator& world, xq::range_tracking tracking, xq::dist::range_sync policy) {
  if (world.size() != 2) return fail(world, "expected 2 ranks, given " + std::to_string(world.size()));
  constexpr std::size_t steps = 4, batch = 64;
  const xq::dataset data = deploy_test::quadrant_data(steps * batch, 11);
  if (const int rc = float_equivalence(world, data, steps, batch)) return rc;
  return qat_equivalence(world, data, steps, batch, tracking, policy);
}

/// Every parameter's values, trainable or not (batch-norm statistics, quantizer ranges), in
/// model order.
std::vector<float> all_values(const std::vector<xq::parameter_ptr>& params) {
  std::vector<float> v;
  for (const auto& p : params) v.insert(v.end(), p->value.begin(), p->value.end());
  return v;
}

/// max |a - b| and max |b| over two equal-length lists.
std::pair<double, double> difference_and_scale(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    m = std::max(m, std::fabs(double(b[i])));
  }
  return {a.size() == b.size() ? d : INFINITY, m};
}

/// Whether `values` are the same on every rank.
bool same_on_every_rank(const xq::dist::communicator& world, const std::vector<float>& values) {
  std::vector<float> highest = values, lowest = values;
  world.allreduce(highest.data(), highest.size(), xq::dist::reduction::max);
  world.allreduce(lowest.data(), lowest.size(), xq::dist::reduction::min);
  return highest == lowest;
}

/// One network with batch norms, 2 ranks x batch 32 against 1 process x batch 64.
template <class Model>
int batch_norm_case(const xq::dist::communicator& world, Model& model, Model& reference, const xq::dataset& data,
                    std::size_t steps, std::size_t batch, xq::dist::batch_norm_sync sync, const char* what) {
  const auto trainable = xq::trainable_parameters(model);
  xq::dist::whole_batch_kinds which;
  which.batch_norm = sync == xq::dist::batch_norm_sync::synchronized;
  if (world.rank() == 0)
    std::printf("%s with batch norm, statistics %s: 2 ranks x batch %zu vs 1 process x batch %zu, %zu Adam steps\n",
                what, xq::dist::to_string(sync), batch / 2, batch, steps);
  const side_by_side r = train_side_by_side(world, model, reference, data, steps, batch, [&](auto& m, const xq::dataset& part) {
    {
      const xq::dist::synchronized_batch whole_batch(world, which);
      forward_backward(m, part);
    }
    xq::dist::average_gradients(trainable, world);
  });
  // The non-trainable state: moving statistics and quantizer ranges.
  std::vector<xq::parameter_ptr> state, reference_state;
  for (const auto& p : xq::parameters(model))
    if (!p->trainable()) state.push_back(p);
  for (const auto& p : xq::parameters(reference))
    if (!p->trainable()) reference_state.push_back(p);
  const std::vector<float> values = all_values(state);
  const auto [difference, scale] = difference_and_scale(values, all_values(reference_state));
  const bool agree = same_on_every_rank(world, values);
  if (world.rank() == 0)
    std::printf("  moving statistics and ranges (%zu values): max |difference| from one process's %.3g (largest %.3g); %s on every rank\n",
                values.size(), difference, scale, agree ? "the same" : "not the same");
  if (sync == xq::dist::batch_norm_sync::local) {
    if (agree) return fail(world, std::string(what) + ", local: every rank has the same statistics (the halves are alike)");
    return 0;
  }
  if (const int rc = check_side_by_side(world, r, what, 1e-4)) return rc;
  if (!agree) return fail(world, std::string(what) + ": the ranks' statistics differ");
  if (!(difference <= 1e-5 * std::max(scale, 1.0)))
    return fail(world, std::string(what) + ": the statistics are not the whole batch's: " + std::to_string(difference));
  return 0;
}

int batch_norm_equivalence(const xq::dist::communicator& world, xq::dist::batch_norm_sync sync) {
  constexpr std::size_t steps = 4, batch = 64;
  const xq::dataset data = deploy_test::quadrant_data(steps * batch, 13);
  auto model = built(make_norm_net), reference = built(make_norm_net);
  if (const int rc = batch_norm_case(world, model, reference, data, steps, batch, sync, "float network")) return rc;
  auto qat = qat_of(make_norm_net, xq::range_tracking::moving_average, true);
  auto qat_reference = qat_of(make_norm_net, xq::range_tracking::moving_average, true);
  return batch_norm_case(world, qat, qat_reference, data, steps, batch, sync, "QAT network (folded)");
}

/// A training step's forward and backward on `part`; with `regularize`, a penalty on the
/// last parameter recorded before the forward pass, so its backward step runs last.
template <class Model>
void step_with(Model& model, const xq::dataset& part, const xq::parameter_ptr& last, bool regularize) {
  const xq::training_mode training(true);
  xq::tape t;
  xq::var penalty;
  if (regularize) penalty = xq::mean_squared_error(xq::var(last), xq::tensor(xt::zeros<float>(last->value.shape())));
  xq::var loss = xq::sparse_softmax_cross_entropy(model(xq::var(part.inputs)), xq::var(part.targets));
  if (regularize) loss = xq::ops::add(loss, penalty);
  t.backward(loss);
}

int overlap(const xq::dist::communicator& world) {
  constexpr std::size_t steps = 6, batch = 64, bucket_bytes = 1024, changed_step = 4;
  const xq::dataset data = deploy_test::quadrant_data(steps * batch, 17);
  auto a = qat_of(make_norm_net, xq::range_tracking::last_value, true);  // overlapped
  auto b = qat_of(make_norm_net, xq::range_tracking::last_value, true);  // after the pass
  const auto ta = xq::trainable_parameters(a), tb = xq::trainable_parameters(b);
  xq::adam oa(ta, {1e-3f}), ob(tb, {1e-3f});
  xq::dist::overlapped_gradient_averaging averaging(world, ta, bucket_bytes);
  double overlapped_seconds = 0, after_seconds = 0;
  for (std::size_t s = 0; s < steps; ++s) {
    const xq::dataset whole = rows(data, s * batch, (s + 1) * batch);
    const auto [begin, end] = xq::dist::shard(batch, world.rank(), world.size());
    const xq::dataset part = rows(whole, begin, end);
    const bool changed = s == changed_step;  // the graph differs from the learned schedule's
    auto t0 = std::chrono::steady_clock::now();
    {
      const xq::dist::synchronized_batch whole_batch(world);
      averaging.begin();
      step_with(a, part, ta.back(), changed);
      averaging.finish();
    }
    auto t1 = std::chrono::steady_clock::now();
    {
      const xq::dist::synchronized_batch whole_batch(world);
      step_with(b, part, tb.back(), changed);
      xq::dist::average_gradients(tb, world, bucket_bytes);
    }
    auto t2 = std::chrono::steady_clock::now();
    if (s > 0) {
      overlapped_seconds += std::chrono::duration<double>(t1 - t0).count();
      after_seconds += std::chrono::duration<double>(t2 - t1).count();
    }
    const double d = max_abs_difference(ta, tb, true);
    if (d != 0.0)
      return fail(world, "step " + std::to_string(s) + ": overlapped gradients differ from those averaged after the pass by " +
                             std::to_string(d));
    oa.step();
    oa.zero_grad();
    ob.step();
    ob.zero_grad();
  }
  const auto& st = averaging.stats();
  if (world.rank() == 0) {
    std::printf("overlapped gradient averaging, %zu buckets of at most %zu bytes, %zu passes:\n", averaging.bucket_count(),
                bucket_bytes, st.passes);
    std::printf("  gradients identical to averaging after the pass on every step; %zu of %zu buckets sent during a pass;\n",
                st.sent_during, st.buckets_sent);
    std::printf("  schedules learned %zu, passes redone %zu (the graph changed at step %zu)\n", st.schedules_learned,
                st.redone, changed_step);
    std::printf("  step with overlap %.3f ms, averaging after the pass %.3f ms (2 ranks on 2 shared cores)\n",
                1e3 * overlapped_seconds / double(steps - 1), 1e3 * after_seconds / double(steps - 1));
  }
  if (averaging.bucket_count() < 3) return fail(world, "expected several buckets");
  if (st.sent_during == 0) return fail(world, "no bucket was sent during a backward pass");
  if (st.redone != 1) return fail(world, "expected the changed pass, and only it, redone; redone " + std::to_string(st.redone));
  if (st.schedules_learned != 2) return fail(world, "expected the schedule learned twice; " + std::to_string(st.schedules_learned));
  return 0;
}

int fit_checkpoint(const xq::dist::communicator& world) {
  // 331 images: 10 batches of 32 and a last one of 11, split 6 + 5 (unequal shards).
  const xq::dataset train = deploy_test::quadrant_data(331, 19), validation = deploy_test::quadrant_data(101, 23);
  auto make = [] { return qat_of(make_norm_net, xq::range_tracking::moving_average, true); };
  auto model = make(), reference = make();
  xq::adam opt(xq::trainable_parameters(model), {1e-3f}), reference_opt(xq::trainable_parameters(reference), {1e-3f});
  xq::dist::data_parallel_options po;
  po.bucket_bytes = 2048;
  xq::dist::data_parallel ranks(world, po);
  xq::fit_options o;
  o.epochs = 1;
  o.batch_size = 16;
  o.seed = 3;
  o.verbose = false;
  o.validation = &validation;
  o.distributed = &ranks;
  const xq::fit_history h = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
  xq::fit_options one = o;
  one.batch_size = 32;
  one.distributed = nullptr;
  const xq::fit_history hr = xq::fit(reference, reference_opt, xq::sparse_softmax_cross_entropy, train, one);
  const auto [difference, scale] = difference_and_scale(all_values(xq::parameters(model)), all_values(xq::parameters(reference)));
  const auto& e = h.last();
  const auto& er = hr.last();
  const double loss_difference = std::fabs(e.loss - er.loss), val_difference = std::fabs(*e.val_loss - *er.val_loss);
  if (world.rank() == 0) {
    std::printf("xq::fit, QAT network with folded batch norms: 2 ranks x batch 16 vs 1 process x batch 32, 1 epoch (%zu steps)\n",
                e.steps);
    std::printf("  every parameter, statistic and range: max |difference| %.3g (largest %.3g)\n", difference, scale);
    std::printf("  loss %.6f vs %.6f, accuracy %.4f vs %.4f, val_loss %.6f vs %.6f, val_accuracy %.4f vs %.4f; samples %zu vs %zu\n",
                e.loss, er.loss, *e.metric, *er.metric, *e.val_loss, *er.val_loss, *e.val_metric, *er.val_metric,
                e.samples, er.samples);
    if (const auto* ov = ranks.overlap())
      std::printf("  buckets sent during the backward pass: %zu of %zu\n", ov->stats().sent_during, ov->stats().buckets_sent);
  }
  if (e.steps != er.steps || e.samples != er.samples) return fail(world, "fit: another number of steps or samples");
  if (!(difference <= 1e-4 * std::max(scale, 1.0))) return fail(world, "fit: the model is not one process's: " + std::to_string(difference));
  if (!(loss_difference <= 1e-5 && val_difference <= 1e-5)) return fail(world, "fit: the losses are not one process's");
  if (*e.metric != *er.metric || *e.val_metric != *er.val_metric) return fail(world, "fit: the accuracies are not one process's");

  // A checkpoint written by rank 0, resumed on 1 rank with batch 32, against 2 ranks going on.
  const std::string path = "data_parallel_test_checkpoint.xqc";
  xq::dist::save_checkpoint(path, world, model, opt);
  xq::fit_options next = o;
  next.initial_epoch = 1;
  next.epochs = 2;
  next.validation = nullptr;
  xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, next);
  const xq::dist::communicator alone = world.split(world.rank());  // each rank a job of one
  auto resumed = make();
  xq::adam resumed_opt(xq::trainable_parameters(resumed), {1e-3f});
  xq::dist::load_checkpoint(path, alone, resumed, resumed_opt);
  xq::dist::data_parallel solo(alone, po);
  xq::fit_options single = next;
  single.batch_size = 32;
  single.distributed = &solo;
  xq::fit(resumed, resumed_opt, xq::sparse_softmax_cross_entropy, train, single);
  const auto [resume_difference, resume_scale] =
      difference_and_scale(all_values(xq::parameters(resumed)), all_values(xq::parameters(model)));
  if (world.rank() == 0)
    std::printf("  epoch 2 resumed from rank 0's checkpoint on 1 rank x batch 32 vs 2 ranks x batch 16 going on: max |difference| %.3g (largest %.3g)\n",
                resume_difference, resume_scale);
  if (!(resume_difference <= 1e-4 * std::max(resume_scale, 1.0)))
    return fail(world, "resume: the model resumed on 1 rank is not the 2 ranks' " + std::to_string(resume_difference));
  world.barrier();
  if (world.rank() == 0) std::remove(path.c_str());

  // Rank 1's model and optimizer moved off; broadcast_training_state brings back rank 0's.
  if (world.rank() == 1) {
    for (const auto& p : xq::parameters(model))
      for (float& v : p->value) v += 0.25f;
    for (auto& st : opt.state())
      for (float& v : st.exp_avg) v += 1.0f;
  }
  xq::dist::broadcast_training_state(world, model, opt);
  std::vector<float> state = all_values(xq::parameters(model));
  for (const auto& st : opt.state()) state.insert(state.end(), st.exp_avg.begin(), st.exp_avg.end());
  if (!same_on_every_rank(world, state)) return fail(world, "broadcast_training_state left the ranks' states apart");

  // Rank 0 cannot write: every rank hears of it.
  try {
    xq::dist::save_checkpoint("no-such-directory/x.xqc", world, model, opt);
    return fail(world, "a checkpoint into a missing directory was 'saved'");
  } catch (const xq::io_error& err) {
    const std::string what = err.what();
    if (world.rank() == 1 && what.find("rank 0 could not write") == std::string::npos)
      return fail(world, "rank 1's error does not say rank 0 failed: " + what);
  }
  return 0;
}

/// Post-training calibration, every method: 2 ranks each on their shard of every batch
/// against one process on all of it. The histograms' counts are integers, so the ranges
/// must be the same bits.
int calibration(const xq::dist::communicator& world) {
  const xq::dataset data = deploy_test::quadrant_data(300, 29);  // batches of 64: the last of 44
  const xq::calibration_method methods[] = {xq::calibration_method::max, xq::calibration_method::nvidia_entropy,
                                            xq::calibration_method::nvidia_mse, xq::calibration_method::nvidia_percentile,
                                            xq::calibration_method::torch_histogram, xq::calibration_method::ort_percentile};
  for (const bool symmetric : {true, false})
    for (const xq::calibration_method m : methods) {
      auto ranked = qat_of(make_norm_net, xq::range_tracking::last_value, true, symmetric);
      auto alone = qat_of(make_norm_net, xq::range_tracking::last_value, true, symmetric);
      auto shard_alone = qat_of(make_norm_net, xq::range_tracking::last_value, true, symmetric);
      xq::calibration_options o;
      o.method = m;
      o.batch_size = 64;
      xq::dist::calibrate(ranked, data.inputs, world, o);
      xq::calibrate(alone, data.inputs, o);
      // What a rank calibrating its own half alone would set: not the whole data's.
      const auto [begin, end] = xq::dist::shard(data.size(), world.rank(), world.size());
      xq::calibrate(shard_alone, rows(data, begin, end).inputs, o);
      const std::vector<float> a = ranges(ranked), b = ranges(alone), h = ranges(shard_alone);
      std::size_t identical = 0, identical_alone = 0;
      for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) identical += a[i] == b[i];
      for (std::size_t i = 0; i < h.size() && i < b.size(); ++i) identical_alone += h[i] == b[i];
      if (world.rank() == 0)
        std::printf("calibration %s, %s inputs, 2 ranks on their shards of each batch of 64 vs 1 process: %zu of %zu "
                    "range values identical (rank 0 on its half alone: %zu)\n",
                    xq::to_string(m), symmetric ? "symmetric" : "asymmetric", identical, b.size(), identical_alone);
      if (a.size() != b.size() || identical != b.size())
        return fail(world, std::string("calibration ") + xq::to_string(m) + ": ranges other than one process's");
      if (m == xq::calibration_method::torch_histogram && identical_alone == b.size())
        return fail(world, "calibration: a rank's half alone gave the whole data's ranges (the test cannot tell)");
    }
  // A last batch too small to split: refused on every rank, before anything runs.
  auto model = qat_of(make_norm_net, xq::range_tracking::last_value, true);
  xq::calibration_options o;
  o.batch_size = 299;
  try {
    xq::dist::calibrate(model, data.inputs, world, o);
    return fail(world, "a last batch of 1 sample for 2 ranks was accepted");
  } catch (const xq::argument_error&) {
  }
  return 0;
}

int failing_rank(const xq::dist::communicator& world) {
  std::vector<float> x(16, 1.0f);
  if (world.rank() == 1) throw std::runtime_error("a deliberate failure on rank 1");
  world.allreduce(x.data(), x.size(), xq::dist::reduction::sum);  // rank 0 waits here
  return 0;
}

/// xq::fit on ranks that disagree in `kind` (see the file comment).
int mismatch(const xq::dist::communicator& world, const std::string& kind) {
  const bool other = world.rank() == 1;
  if (kind == "calibration_samples") {
    const xq::dataset data = deploy_test::quadrant_data(other ? 280 : 300, 29);
    auto model = qat_of(make_norm_net, xq::range_tracking::last_value, true);
    try {
      xq::dist::calibrate(model, data.inputs, world);
      return fail(world, "calibration on other samples per rank went ahead");
    } catch (const xq::argument_error& e) {
      const std::string what = e.what();
      if (world.rank() == 0) std::printf("mismatch %s: every rank threw: %s\n", kind.c_str(), what.c_str());
      if (what.find("calibration samples: rank 0 300, rank 1 280") == std::string::npos)
        return fail(world, "calibration: the error does not name each rank's sample count: " + what);
      return 0;
    }
  }
  const xq::dataset train = deploy_test::quadrant_data(kind == "dataset_size" && other ? 72 : 64, 31);
  const xq::dataset validation = deploy_test::quadrant_data(16, 37);
  xq::dist::data_parallel ranks(world);
  xq::fit_options o;
  o.epochs = kind == "epochs" && other ? 3 : 2;
  o.initial_epoch = kind == "returns_early" && other ? 2 : 0;
  o.batch_size = kind == "batch_size" && other ? 4 : 8;
  o.seed = kind == "seed" && other ? 8 : 7;
  o.max_steps_per_epoch = kind == "steps" && other ? 2 : 0;
  o.validation = kind == "validation" && other ? nullptr : &validation;
  o.verbose = false;
  o.distributed = &ranks;
  if (kind == "early_stop") {
    o.epochs = 3;
    o.on_epoch_end = [&](const xq::epoch_record&) { return world.rank() != 0; };  // rank 0 stops after epoch 1
  }
  const auto train_on = [&](auto& model) {
    xq::adam opt(xq::trainable_parameters(model), {1e-3f});
    return xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, o);
  };
  // What the error must name (besides "rank 0" and "rank 1").
  const std::string expected = kind == "extra_layer"     ? "the model: rank 0 6 parameters"
                               : kind == "other_shape"   ? "parameter 3 in model order: rank 0 'conv2d_1/kernel' (3, 3, 6, 8)"
                               : kind == "steps"         ? "steps per epoch: rank 0 4, rank 1 2"
                               : kind == "epochs"        ? "epochs: rank 0 2, rank 1 3"
                               : kind == "returns_early" ? "initial_epoch: rank 0 0, rank 1 2"
                               : kind == "seed"          ? "seed: rank 0 7, rank 1 8"
                               : kind == "dataset_size"  ? "training samples: rank 0 64, rank 1 72"
                               : kind == "batch_size"    ? "batch_size: rank 0 8, rank 1 4"
                               : kind == "validation"    ? "validation samples: rank 0 16, rank 1 0"
                                                         : "";
  try {
    xq::fit_history h;
    if (kind == "extra_layer" && other) {
      xq::set_seed(5);
      auto model = xq::sequential(xq::conv2d(6, 3).padding(xq::padding::same), xq::relu(), xq::max_pool2d(2),
                                  xq::conv2d(8, 3), xq::relu(), xq::flatten(), xq::dense(8), xq::dense(4));
      xq::build(model, {1, 12, 12, 1});
      h = train_on(model);
    } else if (kind == "other_shape" && other) {
      xq::set_seed(5);
      auto model = xq::sequential(xq::conv2d(6, 3).padding(xq::padding::same), xq::relu(), xq::max_pool2d(2),
                                  xq::conv2d(10, 3), xq::relu(), xq::flatten(), xq::dense(4));
      xq::build(model, {1, 12, 12, 1});
      h = train_on(model);
    } else {
      auto model = built(make_net);
      h = train_on(model);
    }
    if (kind != "early_stop") return fail(world, kind + ": the ranks disagreed and fit trained anyway");
    if (world.rank() == 0) std::printf("early_stop: rank 0 stopped after epoch 1; every rank ran %zu epoch(s)\n", h.size());
    if (h.size() != 1 || !h.stopped_early) return fail(world, "early_stop: ran " + std::to_string(h.size()) + " epochs");
    return 0;
  } catch (const xq::argument_error& e) {
    const std::string what = e.what();
    if (world.rank() == 0) std::printf("mismatch %s: every rank threw: %s\n", kind.c_str(), what.c_str());
    if (kind == "early_stop") return fail(world, "early_stop: " + what);
    if (what.find(expected) == std::string::npos || what.find("rank 1 ") == std::string::npos)
      return fail(world, kind + ": the error does not name '" + expected + "' and each rank's value: " + what);
    return 0;
  }
}

/// Every rank's verdict: one failing rank fails the job.
int agreed(const xq::dist::communicator& world, int rc) {
  float worst = float(rc);
  world.allreduce(&worst, 1, xq::dist::reduction::max);
  return worst == 0.0f ? 0 : 1;
}

int run(int argc, char** argv) {
  const xq::dist::communicator world;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "failing_rank") return failing_rank(world);
  if (mode == "equivalence" && argc == 4) {
    const std::string t = argv[2], p = argv[3];
    const xq::range_tracking tracking =
        t == "moving_average" ? xq::range_tracking::moving_average : xq::range_tracking::last_value;
    const xq::dist::range_sync policy = p == "local"             ? xq::dist::range_sync::local
                                        : p == "rank0_broadcast" ? xq::dist::range_sync::rank0_broadcast
                                                                 : xq::dist::range_sync::allreduce;
    return agreed(world, equivalence(world, tracking, policy));
  }
  if (mode == "batch_norm" && argc == 3)
    return agreed(world, batch_norm_equivalence(world, std::string(argv[2]) == "local" ? xq::dist::batch_norm_sync::local
                                                                                      : xq::dist::batch_norm_sync::synchronized));
  if (mode == "overlap") return agreed(world, overlap(world));
  if (mode == "fit_checkpoint") return agreed(world, fit_checkpoint(world));
  if (mode == "calibration") return agreed(world, calibration(world));
  if (mode == "mismatch" && argc == 3) return agreed(world, mismatch(world, argv[2]));
  std::fprintf(stderr,
               "usage: data_parallel_tests equivalence (last_value|moving_average) (allreduce|rank0_broadcast|local)\n"
               "       data_parallel_tests batch_norm (synchronized|local)\n"
               "       data_parallel_tests overlap | fit_checkpoint | calibration | failing_rank\n"
               "       data_parallel_tests mismatch (extra_layer|other_shape|steps|epochs|returns_early|seed|dataset_size|"
               "batch_size|validation|early_stop|calibration_samples)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  xq::dist::environment mpi(argc, argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    xq::dist::environment::abort(e.what());  // the other rank may wait in a collective
  }
}
