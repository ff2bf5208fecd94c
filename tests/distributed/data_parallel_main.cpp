// Data-parallel QAT over MPI (include/xquant/distributed/), run by CTest under
// `mpirun -np 2` (label mpi). Each mode is one test:
//
//   data_parallel_tests equivalence (last_value | moving_average) (allreduce | rank0_broadcast | local)
//       2 ranks x batch 32 against 1 process x batch 64, K steps of Adam: on the float CNN
//       (the broadcast parameters, the first step's averaged gradients, the parameters
//       after K steps, within float summation's rounding), then on its QAT twin: with
//       `allreduce` the forward passes run under synchronized_ranges, and the gradients,
//       parameters and every quantizer range must be one process's, within rounding;
//       `rank0_broadcast` must leave rank 0's ranges on every rank, `local` each rank its own.
//   data_parallel_tests failing_rank
//       rank 1 throws while rank 0 waits in an allreduce: the job must end non-zero (CTest
//       WILL_FAIL), never hang (CTest TIMEOUT).
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
#include <xquant/xquant.hpp>

#include "../deploy/deploy_models.hpp"

namespace {

/// conv 3x3 -> relu -> max pool -> conv 3x3 -> relu -> flatten -> dense 4: no batch norm
/// (its batch statistics are per rank until SyncBatchNorm comes).
auto make_net() {
  return xq::sequential(xq::conv2d(6, 3).padding(xq::padding::same), xq::relu(), xq::max_pool2d(2), xq::conv2d(8, 3),
                        xq::relu(), xq::flatten(), xq::dense(4));
}

auto make_qat(xq::range_tracking tracking) {
  xq::set_seed(5);
  auto model = make_net();
  xq::build(model, {1, 12, 12, 1});
  xq::quantize_options qo;
  qo.scheme.input.tracking = tracking;
  return xq::quantize_model(model, qo, {1, 12, 12, 1});
}

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
int check_side_by_side(const xq::dist::communicator& world, const side_by_side& r, const char* what) {
  if (!(r.first_gradient_difference <= 1e-5 * std::max(r.first_gradient_scale, 1e-3)))
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
      std::optional<xq::dist::synchronized_ranges> whole_batch_ranges;
      if (policy == xq::dist::range_sync::allreduce) whole_batch_ranges.emplace(world);
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

int failing_rank(const xq::dist::communicator& world) {
  std::vector<float> x(16, 1.0f);
  if (world.rank() == 1) throw std::runtime_error("a deliberate failure on rank 1");
  world.allreduce(x.data(), x.size(), xq::dist::reduction::sum);  // rank 0 waits here
  return 0;
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
    const int rc = equivalence(world, tracking, policy);
    // Every rank's verdict: one failing rank fails the job.
    float worst = float(rc);
    world.allreduce(&worst, 1, xq::dist::reduction::max);
    return worst == 0.0f ? 0 : 1;
  }
  std::fprintf(stderr,
               "usage: data_parallel_tests equivalence (last_value|moving_average) (allreduce|rank0_broadcast|local)\n"
               "       data_parallel_tests failing_rank\n");
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
