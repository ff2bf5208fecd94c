// What data parallelism costs per training step (include/xquant/distributed/), run under
// mpirun: `mpirun -np 2 build/bench/xquant_distributed_bench` (bench/README.md). Every
// benchmark runs a fixed number of iterations, so the ranks stay in step; rank 0 reports.
//
//  - BM_data_parallel_step/overlap:{0,1}: one rank's QAT training step of the Fashion-MNIST
//    CNN (batch norms folded) on its 32 images of a 64-image batch, alternated with the
//    same step alone (no communication, both ranks busy): alone_ms, data_parallel_ms and
//    their ratio, the communication's share of the step; overlap 1 sends gradient buckets
//    while the backward pass runs, 0 after it. The batch statistics (ranges, batch norm,
//    dropout) are the whole batch's in both.
//  - BM_gradient_allreduce: the averaging of that CNN's gradients alone (one fused
//    bucket), against a memcpy of the same bytes in the same loop: allreduce_over_memcpy.

#include <chrono>
#include <cstddef>
#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>

#include <xquant/distributed/data_parallel.hpp>
#include <xquant/transform/quantize_model.hpp>
#include <xquant/xquant.hpp>

#include "../examples/fashion_mnist/cnn.hpp"
#include "training_step.hpp"

namespace {

const xq::dist::communicator& world() {
  static const xq::dist::communicator c;
  return c;
}

auto make_qat_cnn() {
  auto model = fashion::make_cnn(1);
  xq::build(model, {1, 28, 28, 1});
  xq::quantize_options o;
  o.fold_batch_norm = true;
  return xq::quantize_model(model, o, {1, 28, 28, 1});
}

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

/// One training step (forward, backward, Adam) with whatever brings the ranks together.
template <class Model, class Before, class After>
void step(bench::train_step<Model>& s, Before&& before_backward, After&& after_backward) {
  const xq::training_mode train(true);
  xq::tape tape;
  auto loss = xq::sparse_softmax_cross_entropy(s.model(s.x), s.y);
  before_backward();
  tape.backward(loss);
  after_backward();
  s.opt.step();
  s.opt.zero_grad();
  benchmark::DoNotOptimize(loss.value().data());
}

void BM_data_parallel_step(benchmark::State& state) {
  const bool overlap = state.range(0) != 0;
  const std::size_t per_rank = 32;
  auto alone_model = make_qat_cnn();
  auto model = make_qat_cnn();
  bench::train_step<decltype(alone_model)> alone(alone_model, per_rank, 2 + unsigned(world().rank()));
  bench::train_step<decltype(model)> ranked(model, per_rank, 2 + unsigned(world().rank()));
  const auto trainable = xq::trainable_parameters(model);
  xq::dist::overlapped_gradient_averaging averaging(world(), trainable);
  double alone_seconds = 0, ranked_seconds = 0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    step(alone, [] {}, [] {});
    alone_seconds += seconds_since(t0);
    t0 = clock_type::now();
    {
      const xq::dist::synchronized_batch whole_batch(world());
      if (overlap)
        step(ranked, [&] { averaging.begin(); }, [&] { averaging.finish(); });
      else
        step(ranked, [] {}, [&] { xq::dist::average_gradients(trainable, world()); });
    }
    ranked_seconds += seconds_since(t0);
  }
  const double n = double(state.iterations());
  state.counters["alone_ms"] = 1e3 * alone_seconds / n;
  state.counters["data_parallel_ms"] = 1e3 * ranked_seconds / n;
  state.counters["over_alone"] = ranked_seconds / alone_seconds;
  state.counters["ranks"] = double(world().size());
}
BENCHMARK(BM_data_parallel_step)->ArgName("overlap")->Arg(1)->Arg(0)->Iterations(40)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_gradient_allreduce(benchmark::State& state) {
  auto model = make_qat_cnn();
  bench::train_step<decltype(model)> s(model, 8);
  {  // gradients to average
    const xq::training_mode train(true);
    xq::tape tape;
    tape.backward(xq::sparse_softmax_cross_entropy(s.model(s.x), s.y));
  }
  const auto trainable = xq::trainable_parameters(model);
  std::size_t floats = 0;
  for (const auto& p : trainable) floats += p->value.size();
  std::vector<float> from(floats, 1.0f), to(floats);
  double reduce_seconds = 0, copy_seconds = 0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    xq::dist::average_gradients(trainable, world());
    reduce_seconds += seconds_since(t0);
    t0 = clock_type::now();
    std::memcpy(to.data(), from.data(), floats * sizeof(float));
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
    copy_seconds += seconds_since(t0);
  }
  const double n = double(state.iterations());
  state.counters["floats"] = double(floats);
  state.counters["allreduce_us"] = 1e6 * reduce_seconds / n;
  state.counters["memcpy_us"] = 1e6 * copy_seconds / n;
  state.counters["allreduce_over_memcpy"] = reduce_seconds / copy_seconds;
}
BENCHMARK(BM_gradient_allreduce)->Iterations(200)->Unit(benchmark::kMicrosecond)->UseRealTime();

/// What the other ranks report: nothing (rank 0 speaks for the job).
class silent_reporter final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  xq::dist::environment mpi(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (world().rank() == 0) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    silent_reporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }
  benchmark::Shutdown();
  return 0;
}
