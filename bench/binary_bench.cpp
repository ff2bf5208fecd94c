/// \file binary_bench.cpp
/// Speed of Larq's quantizers (include/xquant/quantizers/) and of the binarized CNN of
/// examples/fashion_mnist_bnn (bench/README.md, "Larq's quantizers and the binarized CNN").
///
/// The VM this runs on drifts by up to 1.5x within a minute, so every figure here is a
/// ratio of two things timed alternately in the same loop:
///  - BM_quantizer/<q>/shape:<s>: one training call of quantizer q (forward on a tape,
///    then backward with a given dy) alternated with a memcpy that moves the same
///    bytes; `vs_memcpy` = memcpy time / call time (1: as fast as a copy of what the
///    call must read and write);
///  - BM_ste_sign_metrics: ste_sign without and with flip ratio + gradient flow;
///    `metrics_over_plain` = time with / time without;
///  - BM_bnn_over_float_train_step: the BNN's training step and its float twin's;
///    `bnn_over_float` = BNN step time / float step time.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include <xquant/core/mode.hpp>
#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/dorefa.hpp>
#include <xquant/quantizers/lsq_quantizer.hpp>
#include <xquant/quantizers/magnitude_aware_sign.hpp>
#include <xquant/quantizers/model_quantizers.hpp>
#include <xquant/quantizers/ste_heaviside.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/quantizers/ste_tern.hpp>
#include <xquant/quantizers/swish_sign.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/losses.hpp>

#include "../examples/fashion_mnist_bnn/bnn.hpp"
#include "training_step.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

using bench::uniform_tensor;

// ---- quantizers ---------------------------------------------------------------------

/// shape:0 an activation of the binary convs (batch 64, 14x14, 128 channels, 1.6 M
/// values, 6.4 MB: in L3); shape:1 their kernel (3x3x128x128, 147 K values: in L2).
const xq::tensor::shape_type shapes[] = {{64, 14, 14, 128}, {3, 3, 128, 128}};

/// One training call of a quantizer, set up once: forward on a tape, backward with a
/// fixed dy, the gradients then dropped (as an optimizer's zero_grad does). dy goes
/// into the tape and is taken back after, so no copy of it is timed. Bytes it must
/// move at least: x read, y written, dy read, dx written (16 per value).
template <class Q>
struct quantizer_call {
  Q q;
  xq::var x;
  xq::tensor dy;

  quantizer_call(Q quantizer, const xq::tensor::shape_type& shape)
      : q(std::move(quantizer)),
        // [-1.5, 1.5): a third of the values fall outside the STEs' clip range.
        x(uniform_tensor(shape, -1.5f, 1.5f, 1), /*requires_grad=*/true),
        dy(uniform_tensor(shape, -1.0f, 1.0f, 2)) {}

  void operator()() {
    xq::tape tape;
    xq::var y = q(x);
    tape.backward(y, std::move(dy));
    dy = std::move(y.state()->grad);  // backward leaves the seed in y's gradient
    benchmark::DoNotOptimize(x.state()->grad.data());
    x.state()->zero_grad();
    for (const auto& p : q.parameters())
      if (p) p->zero_grad();
  }
};

/// memcpy of the bytes a quantizer call moves: 2n floats read, 2n written.
struct copy_reference {
  xq::tensor src, dst;
  explicit copy_reference(std::size_t n)
      : src(uniform_tensor({2 * n}, -1.0f, 1.0f, 3)), dst(xq::tensor::from_shape({2 * n})) {
    std::memset(dst.data(), 0, dst.size() * sizeof(float));  // map every page before timing
  }
  void operator()() {
    std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
    benchmark::ClobberMemory();
  }
};

/// One thread, as the reference memcpy: the walkers under lsq_quantizer would
/// otherwise split 1.6 M values over two, and the other quantizers' loops do not.
struct one_thread {
#if defined(_OPENMP)
  int saved = omp_get_max_threads();
  one_thread() { omp_set_num_threads(1); }
  ~one_thread() { omp_set_num_threads(saved); }
#endif
};

/// The quantizer call alternated with its memcpy reference, each timed on its own.
/// The reported time (manual) is the call's; `vs_memcpy` = memcpy time / call time.
template <class Q>
void quantizer_case(benchmark::State& state, Q quantizer) {
  [[maybe_unused]] const one_thread single;
  const xq::training_mode train(true);
  const auto& shape = shapes[state.range(0)];
  quantizer_call<Q> call(std::move(quantizer), shape);
  copy_reference copy(call.x.size());
  call();  // warm up (and lsq_quantizer initialises its scale)
  copy();
  double call_seconds = 0, copy_seconds = 0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    call();
    const double c = seconds_since(t0);
    t0 = clock_type::now();
    copy();
    copy_seconds += seconds_since(t0);
    call_seconds += c;
    state.SetIterationTime(c);
  }
  const double bytes = 16.0 * static_cast<double>(call.x.size()) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["vs_memcpy"] = call_seconds > 0 ? copy_seconds / call_seconds : 0.0;
  state.counters["memcpy_GBps"] = copy_seconds > 0 ? bytes / copy_seconds / 1e9 : 0.0;
}

void BM_ste_sign(benchmark::State& s) { quantizer_case(s, xq::ste_sign()); }
void BM_approx_sign(benchmark::State& s) { quantizer_case(s, xq::approx_sign()); }
void BM_swish_sign(benchmark::State& s) { quantizer_case(s, xq::swish_sign()); }
void BM_ste_heaviside(benchmark::State& s) { quantizer_case(s, xq::ste_heaviside()); }
void BM_magnitude_aware_sign(benchmark::State& s) { quantizer_case(s, xq::magnitude_aware_sign()); }
void BM_ste_tern(benchmark::State& s) { quantizer_case(s, xq::ste_tern()); }
void BM_ste_tern_twn(benchmark::State& s) { quantizer_case(s, xq::ste_tern(0.05f, true)); }
void BM_dorefa_activations(benchmark::State& s) { quantizer_case(s, xq::dorefa(2)); }
void BM_dorefa_weights(benchmark::State& s) { quantizer_case(s, xq::dorefa(2, xq::dorefa_mode::weights)); }
void BM_lsq_quantizer(benchmark::State& s) { quantizer_case(s, xq::lsq_quantizer()); }

void activation_shape(benchmark::internal::Benchmark* b) {
  b->ArgName("shape")->Arg(0)->UseManualTime()->Unit(benchmark::kMicrosecond);
}
void both_shapes(benchmark::internal::Benchmark* b) {
  b->ArgName("shape")->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
}
void kernel_shape(benchmark::internal::Benchmark* b) {
  b->ArgName("shape")->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_ste_sign)->Apply(both_shapes);
BENCHMARK(BM_approx_sign)->Apply(activation_shape);
BENCHMARK(BM_swish_sign)->Apply(activation_shape);
BENCHMARK(BM_ste_heaviside)->Apply(activation_shape);
BENCHMARK(BM_magnitude_aware_sign)->Apply(kernel_shape);
BENCHMARK(BM_ste_tern)->Apply(both_shapes);
BENCHMARK(BM_ste_tern_twn)->Apply(kernel_shape);
BENCHMARK(BM_dorefa_activations)->Apply(activation_shape);
BENCHMARK(BM_dorefa_weights)->Apply(both_shapes);
BENCHMARK(BM_lsq_quantizer)->Apply(both_shapes);

/// ste_sign with flip ratio and gradient flow on, alternated with a metric-free one:
/// what the two metrics cost per call (each adds one pass: y cast to int8 and compared
/// with the previous call's, dx's non-zeros counted).
void BM_ste_sign_metrics(benchmark::State& state) {
  [[maybe_unused]] const one_thread single;
  const xq::training_mode train(true);  // flip ratio counts training calls only
  const auto& shape = shapes[state.range(0)];
  quantizer_call<xq::ste_sign> plain(xq::ste_sign(), shape);
  quantizer_call<xq::ste_sign> metered(xq::ste_sign(), shape);
  metered.q.metrics(xq::quantizer_metric::flip_ratio | xq::quantizer_metric::gradient_flow);
  plain();
  metered();
  double plain_seconds = 0, metered_seconds = 0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    plain();
    plain_seconds += seconds_since(t0);
    t0 = clock_type::now();
    metered();
    const double m = seconds_since(t0);
    metered_seconds += m;
    state.SetIterationTime(m);
  }
  benchmark::DoNotOptimize(metered.q.flip_ratio_metric()->result());
  const double n = static_cast<double>(state.iterations());
  state.counters["plain_us"] = 1e6 * plain_seconds / n;
  state.counters["metrics_us"] = 1e6 * metered_seconds / n;
  state.counters["metrics_over_plain"] = plain_seconds > 0 ? metered_seconds / plain_seconds : 0.0;
}
BENCHMARK(BM_ste_sign_metrics)->Apply(both_shapes);

// ---- the binarized CNN against its float twin ------------------------------------------

// examples/fashion_mnist_bnn/bnn.hpp: bnn::make_binary_cnn() and bnn::make_float_cnn().

using bench::train_step;

/// BNN and float steps alternated, each timed on its own; the reported time is the
/// BNN step's. metrics:1 trains as the example does: flip ratio on the kernel
/// quantizers (a metrics_scope at construction), gradient flow on the input ones.
void BM_bnn_over_float_train_step(benchmark::State& state) {
  const std::size_t batch = 64;
  const bool with_metrics = state.range(0) != 0;
  xq::set_seed(1);
  auto bnn = [&] {
    if (!with_metrics) return bnn::make_binary_cnn();
    xq::metrics_scope scope(xq::quantizer_metric::flip_ratio);
    return bnn::make_binary_cnn();
  }();
  xq::build(bnn, {1, 28, 28, 1});
  if (with_metrics)
    xq::for_each_quantizer(bnn, [](auto& q) {
      if (q.path().find("input_quantizer") != std::string::npos) q.metrics(xq::quantizer_metric::gradient_flow);
    });
  auto twin = bnn::make_float_cnn();
  xq::build(twin, {1, 28, 28, 1});
  train_step<decltype(bnn)> bnn_step(bnn, batch);
  train_step<decltype(twin)> float_step(twin, batch);
  bnn_step();  // warm up: Adam's slots, the allocator's free lists
  float_step();
  double bnn_seconds = 0, float_seconds = 0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    float_step();
    float_seconds += seconds_since(t0);
    t0 = clock_type::now();
    bnn_step();
    const double b = seconds_since(t0);
    bnn_seconds += b;
    state.SetIterationTime(b);
  }
  const double images = static_cast<double>(state.iterations() * batch);
  state.counters["bnn_ms"] = 1e3 * bnn_seconds / static_cast<double>(state.iterations());
  state.counters["float_ms"] = 1e3 * float_seconds / static_cast<double>(state.iterations());
  state.counters["bnn_images_per_s"] = bnn_seconds > 0 ? images / bnn_seconds : 0.0;
  state.counters["float_images_per_s"] = float_seconds > 0 ? images / float_seconds : 0.0;
  state.counters["bnn_over_float"] = float_seconds > 0 ? bnn_seconds / float_seconds : 0.0;
}
BENCHMARK(BM_bnn_over_float_train_step)
    ->ArgName("metrics")
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
