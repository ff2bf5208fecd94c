// Speed of the training engine on the Fashion-MNIST CNN (examples/fashion_mnist/cnn.hpp),
// batch 64: images/s of a training step (forward, loss, backward, Adam) and of an
// inference step, and the GFLOP/s its convolutions reach, next to the GFLOP/s of the bare
// OpenBLAS sgemm of the same shape measured in the same run (the reference: a conv can
// at best match the GEMM it is built on). The QAT training step of the same CNN
// (quantize_model with NVIDIA's scheme and folded batch norms, as
// examples/fashion_mnist_qat trains it) is measured beside the float step, interleaved
// step by step so that both see the same machine: `qat_over_float` is the ratio.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>
#include <utility>

#include <benchmark/benchmark.h>

#include <xquant/core/memory.hpp>
#include <xquant/io/tensorboard.hpp>
#include <xquant/quantizers/quantizer_call_observer.hpp>
#include <xquant/kernels/gemm.hpp>
#include <xquant/kernels/thread_governor.hpp>
#include <xquant/transform/low_bit_schemes.hpp>
#include <xquant/transform/quantize_model.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>

#include "../examples/fashion_mnist/cnn.hpp"
#include "machine_peak.hpp"
#include "training_step.hpp"

namespace {

using bench::train_step;

xq::tensor random_tensor(const xq::tensor::shape_type& shape, unsigned seed) {
  return bench::uniform_tensor(shape, 0.0f, 1.0f, seed);
}

/// The QAT twin of the example: NVIDIA's scheme (or another), batch norms folded.
auto make_qat_cnn(const fashion::cnn& model, bool fold, xq::quantization_scheme scheme = xq::schemes::nvidia()) {
  xq::quantize_options o;
  o.fold_batch_norm = fold;
  o.scheme = std::move(scheme);
  return xq::quantize_model(model, o, {1, 28, 28, 1});
}

/// A float step and a QAT step in turn, each timed on its own: counters float_ms, qat_ms
/// and their ratio qat_over_float (both see the same machine state).
template <class FloatStep, class QatStep>
void time_alternately(benchmark::State& state, FloatStep& float_step, QatStep& qat_step) {
  double float_seconds = 0, qat_seconds = 0;
  using clock = std::chrono::steady_clock;
  for (auto _ : state) {
    auto t0 = clock::now();
    float_step();
    auto t1 = clock::now();
    qat_step();
    auto t2 = clock::now();
    float_seconds += std::chrono::duration<double>(t1 - t0).count();
    qat_seconds += std::chrono::duration<double>(t2 - t1).count();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["float_ms"] = 1e3 * float_seconds / n;
  state.counters["qat_ms"] = 1e3 * qat_seconds / n;
  state.counters["qat_over_float"] = qat_seconds / float_seconds;
}

void set_rate(benchmark::State& state, std::size_t batch) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
  state.counters["images_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * batch), benchmark::Counter::kIsRate);
}

void BM_cnn_train_step(benchmark::State& state) {
  const std::size_t batch = static_cast<std::size_t>(state.range(0));
  auto model = fashion::make_cnn(1);
  xq::build(model, {1, 28, 28, 1});
  train_step<fashion::cnn> step(model, batch);
  for (auto _ : state) step();
  set_rate(state, batch);
}
BENCHMARK(BM_cnn_train_step)->ArgName("batch")->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same step under kernels::thread_governor, as fit runs it with
// thread_policy::adaptive: the thread count of each step is the fastest one measured,
// probed again after 200 steps (doubling while the count stays) or when steps slow down
// (bench/busy_core.py runs it beside a busy process). `governor_threads`: the last choice;
// `probe_ms_at_<n>`: the last probe's mean step time at n threads.
void BM_cnn_train_step_governed(benchmark::State& state) {
  const std::size_t batch = static_cast<std::size_t>(state.range(0));
  auto model = fashion::make_cnn(1);
  xq::build(model, {1, 28, 28, 1});
  train_step<fashion::cnn> step(model, batch);
  xq::kernels::thread_governor governor;
  for (auto _ : state) {
    const auto timed = governor.step();
    step();
  }
  set_rate(state, batch);
  state.counters["governor_threads"] = governor.chosen();
  state.counters["governor_probes"] = static_cast<double>(governor.probes());
  const auto& means = governor.probe_means();
  for (std::size_t i = 0; i < means.size(); ++i)
    state.counters["probe_ms_at_" + std::to_string(governor.candidates()[i])] = 1e3 * means[i];
}
BENCHMARK(BM_cnn_train_step_governed)->ArgName("batch")->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

// The QAT step alone (fold: 1 = batch norms folded, as the example trains).
void BM_cnn_qat_train_step(benchmark::State& state) {
  const std::size_t batch = static_cast<std::size_t>(state.range(0));
  auto model = fashion::make_cnn(1);
  xq::build(model, {1, 28, 28, 1});
  auto qat = make_qat_cnn(model, state.range(1) != 0);
  train_step<decltype(qat)> step(qat, batch);
  for (auto _ : state) step();
  set_rate(state, batch);
}
BENCHMARK(BM_cnn_qat_train_step)
    ->ArgNames({"batch", "fold"})
    ->ArgsProduct({{64}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Float and QAT steps alternated; each timed on its own. The reported time is the pair's.
// fold: 1 = batch norms folded (the example's configuration), 0 = not folded.
void BM_qat_over_float_train_step(benchmark::State& state) {
  const std::size_t batch = 64;
  auto float_model = fashion::make_cnn(1);
  xq::build(float_model, {1, 28, 28, 1});
  auto twin_source = fashion::make_cnn(1);
  xq::build(twin_source, {1, 28, 28, 1});
  auto qat = make_qat_cnn(twin_source, state.range(0) != 0);
  train_step<fashion::cnn> float_step(float_model, batch);
  train_step<decltype(qat)> qat_step(qat, batch);
  time_alternately(state, float_step, qat_step);
}
BENCHMARK(BM_qat_over_float_train_step)->ArgName("fold")->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

// The low-bit formats' QAT step against the float step (issue 36), alternated as above,
// batch norms folded, the examples/low_bit_qat schemes: 0 int8 (NVIDIA), 1 W4A8, 2 MXFP4,
// 3 NVFP4, 4 torchao's 8da4w, 5 FP8 per row. The first conv (1 channel) keeps int8 where a
// format's blocks do not fit it.
void BM_low_bit_qat_over_float_train_step(benchmark::State& state) {
  const xq::quantization_scheme schemes[] = {xq::schemes::nvidia(), xq::schemes::w4a8(32), xq::schemes::mx(),
                                             xq::schemes::nvfp4(), xq::schemes::torchao_8da4w(32),
                                             xq::schemes::torchao_float8_dynamic()};
  const std::size_t batch = 64;
  auto float_model = fashion::make_cnn(1);
  xq::build(float_model, {1, 28, 28, 1});
  auto twin_source = fashion::make_cnn(1);
  xq::build(twin_source, {1, 28, 28, 1});
  auto qat = make_qat_cnn(twin_source, true, schemes[state.range(0)]);
  train_step<fashion::cnn> float_step(float_model, batch);
  train_step<decltype(qat)> qat_step(qat, batch);
  time_alternately(state, float_step, qat_step);
  state.SetLabel(schemes[state.range(0)].name);
}
BENCHMARK(BM_low_bit_qat_over_float_train_step)
    ->ArgName("format")
    ->DenseRange(0, 5)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The tensor memory cache (core/memory.hpp) against the system allocator: one model's
// training step with the cache on (its default) and with its limit at 0 (every block
// handed straight back to malloc), interleaved step by step; `cached_over_uncached` is
// the ratio of the two step times. Each side warms up its own way first.
void BM_tensor_cache_train_step(benchmark::State& state) {
  const std::size_t batch = 64;
  auto model = fashion::make_cnn(1);
  xq::build(model, {1, 28, 28, 1});
  train_step<fashion::cnn> step(model, batch);
  const std::size_t limit = xq::tensor_memory().cache_limit;
  double cached_seconds = 0, uncached_seconds = 0;
  using clock = std::chrono::steady_clock;
  step();
  for (auto _ : state) {
    auto t0 = clock::now();
    step();
    auto t1 = clock::now();
    xq::set_tensor_cache_limit(0);
    auto t2 = clock::now();
    step();
    auto t3 = clock::now();
    xq::set_tensor_cache_limit(limit);
    cached_seconds += std::chrono::duration<double>(t1 - t0).count();
    uncached_seconds += std::chrono::duration<double>(t3 - t2).count();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["cached_ms"] = 1e3 * cached_seconds / n;
  state.counters["uncached_ms"] = 1e3 * uncached_seconds / n;
  state.counters["cached_over_uncached"] = cached_seconds / uncached_seconds;
}
BENCHMARK(BM_tensor_cache_train_step)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_cnn_inference_step(benchmark::State& state) {
  const std::size_t batch = static_cast<std::size_t>(state.range(0));
  auto model = fashion::make_cnn(1);
  xq::build(model, {1, 28, 28, 1});
  const xq::var x(random_tensor({batch, 28, 28, 1}, 2));
  xq::no_grad off;
  xq::training_mode inference(false);
  for (auto _ : state) {
    auto y = model(x);
    benchmark::DoNotOptimize(y.value().data());
  }
  set_rate(state, batch);
}
BENCHMARK(BM_cnn_inference_step)->ArgName("batch")->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

// fit against the bare step (issue 15: fit's per-step overhead, batch gathering, shuffling,
// metrics and progress, should be negligible). Each iteration runs one epoch of `fit` over
// 16 batches of 64 on one model, then 16 bench steps on its twin, timing each; the counter
// `fit_rate_over_step_rate` is the bench steps' time over fit's (1: no overhead).
// progress: 0 = verbose off, 1 = fit's plain progress lines written to a discarded stream.
void BM_fit_over_train_step(benchmark::State& state) {
  constexpr std::size_t batch = 64, steps = 16;
  auto fit_model = fashion::make_cnn(1);
  xq::build(fit_model, {1, 28, 28, 1});
  auto step_model = fashion::make_cnn(1);
  xq::build(step_model, {1, 28, 28, 1});
  train_step<fashion::cnn> step(step_model, batch);
  const xq::dataset data{random_tensor({batch * steps, 28, 28, 1}, 7), bench::random_labels(batch * steps, 8)};
  xq::adam opt(xq::trainable_parameters(fit_model));
  std::ostringstream discarded;
  xq::fit_options o;
  o.epochs = 1;
  o.batch_size = batch;
  o.verbose = state.range(0) != 0;
  o.progress.stream = &discarded;
  o.progress.style = xq::progress_style::plain;
  double fit_seconds = 0, step_seconds = 0;
  using clock = std::chrono::steady_clock;
  for (auto _ : state) {
    auto t0 = clock::now();
    xq::fit(fit_model, opt, xq::sparse_softmax_cross_entropy, data, o);
    auto t1 = clock::now();
    for (std::size_t k = 0; k < steps; ++k) step();
    auto t2 = clock::now();
    fit_seconds += std::chrono::duration<double>(t1 - t0).count();
    step_seconds += std::chrono::duration<double>(t2 - t1).count();
    discarded.str({});
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["fit_ms_per_step"] = 1e3 * fit_seconds / (n * steps);
  state.counters["step_ms"] = 1e3 * step_seconds / (n * steps);
  state.counters["fit_rate_over_step_rate"] = step_seconds / fit_seconds;
}
BENCHMARK(BM_fit_over_train_step)->ArgName("progress")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// TensorBoard logging's cost in fit (issue 39: at most 2% of a training step), two ways.
// Each iteration runs one epoch of `fit` over 50 batches of 64 on the QAT twin (batch norms
// folded, as the example trains) with the tensorboard callback, and one without it on a
// second twin, in turn:
//  - `logging_share`: the seconds spent in logging code — the callback's hooks and its
//    quantizer observer's calls inside the steps, each timed by `timed_logging` below —
//    over the unlogged epoch's seconds (exact, whatever the machine's load);
//  - `overhead_median`: the logged epoch's time over the unlogged one's, minus 1, the median
//    over the iterations, each running the two in the other order than the last (end to
//    end, and as noisy as the machine: ±2-3% on a shared VM).
// update_freq 25 (the example's): step scalars and every quantizer's grid and clipped share
// at steps 25 and 50; histograms: 1 = every parameter's and every quantizer's input and
// output histograms at the epoch's last step (so every 50 steps here; the example's epochs
// have 938 in full mode, 188 in quick mode), 0 = none.
namespace {

/// Forwards to a callback and to the quantizer observer it installs, timing both.
class timed_logging final : public xq::fit_callback, xq::quantizer_call_observer {
 public:
  explicit timed_logging(std::shared_ptr<xq::fit_callback> inner) : inner_(std::move(inner)) {}
  double seconds = 0;

  void on_train_begin(const xq::fit_context& c) override { timed([&] { inner_->on_train_begin(c); }); }
  void on_step_begin(std::size_t step) override {
    xq::quantizer_call_observer* before = current();
    timed([&] { inner_->on_step_begin(step); });
    if (current() != before) {  // the callback installed its observer: time it through this one
      observer_ = current();
      current() = this;
    }
  }
  void on_step_end(const xq::fit_step& s) override {
    if (observer_) current() = std::exchange(observer_, nullptr);
    timed([&] { inner_->on_step_end(s); });
  }
  void on_epoch_end(const xq::epoch_record& r) override { timed([&] { inner_->on_epoch_end(r); }); }
  void on_train_end(const xq::fit_history& h) override { timed([&] { inner_->on_train_end(h); }); }
  void called(const xq::quantizer_base& q, const xq::tensor& x, const xq::tensor& y) override {
    timed([&] { observer_->called(q, x, y); });
  }

 private:
  template <class F>
  void timed(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  std::shared_ptr<xq::fit_callback> inner_;
  xq::quantizer_call_observer* observer_ = nullptr;
};

}  // namespace

void BM_fit_tensorboard_overhead(benchmark::State& state) {
  constexpr std::size_t batch = 64, steps = 50;
  auto float_model = fashion::make_cnn(1);
  xq::build(float_model, {1, 28, 28, 1});
  auto logged = make_qat_cnn(float_model, true);
  auto plain = make_qat_cnn(float_model, true);
  const xq::dataset data{random_tensor({batch * steps, 28, 28, 1}, 7), bench::random_labels(batch * steps, 8)};
  xq::adam logged_opt(xq::trainable_parameters(logged)), plain_opt(xq::trainable_parameters(plain));
  const std::string dir = (std::filesystem::temp_directory_path() / "xq_bench_tensorboard").string();
  std::filesystem::remove_all(dir);
  xq::tensorboard_options tb;
  tb.log_dir = dir;
  tb.update_freq = 25;
  tb.histogram_freq = state.range(0) ? 1 : 0;
  auto timer = std::make_shared<timed_logging>(std::make_shared<xq::tensorboard>(tb));
  xq::fit_options with, without;
  with.epochs = without.epochs = 1;
  with.batch_size = without.batch_size = batch;
  with.verbose = without.verbose = false;
  with.threads = without.threads = xq::thread_policy::fixed;  // the same thread count for both
  with.callbacks.push_back(timer);
  double with_seconds = 0, without_seconds = 0;
  std::vector<double> ratios;
  using clock = std::chrono::steady_clock;
  bool logged_first = true;  // the order alternates: whichever runs second finds warmer caches
  for (auto _ : state) {
    double w = 0, p = 0;
    for (int k = 0; k < 2; ++k) {
      const bool logging = (k == 0) == logged_first;
      const auto t0 = clock::now();
      if (logging) xq::fit(logged, logged_opt, xq::sparse_softmax_cross_entropy, data, with);
      else xq::fit(plain, plain_opt, xq::sparse_softmax_cross_entropy, data, without);
      (logging ? w : p) = std::chrono::duration<double>(clock::now() - t0).count();
    }
    logged_first = !logged_first;
    with_seconds += w;
    without_seconds += p;
    ratios.push_back(w / p - 1.0);
  }
  std::sort(ratios.begin(), ratios.end());
  const double n = static_cast<double>(state.iterations());
  state.counters["logged_ms_per_step"] = 1e3 * with_seconds / (n * steps);
  state.counters["plain_ms_per_step"] = 1e3 * without_seconds / (n * steps);
  state.counters["logging_ms_per_step"] = 1e3 * timer->seconds / (n * steps);
  state.counters["logging_share"] = timer->seconds / without_seconds;
  state.counters["overhead_median"] = ratios[ratios.size() / 2];
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_fit_tensorboard_overhead)
    ->ArgName("histograms")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(6)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The CNN's two convolutions (3x3, same, batch 64): 28x28x1 -> 32 and 14x14x32 -> 64.
struct conv_case {
  std::size_t hw, cin, cout;
};
constexpr conv_case conv_cases[] = {{28, 1, 32}, {14, 32, 64}};

/// `share_of_fp32_peak`: the rate of `flops` per iteration (2 per multiply-add) over this
/// core's measured fp32 FMA peak (machine_peak.hpp) times the threads OpenMP may use.
void add_share_of_fp32_peak(benchmark::State& state, double flops) {
  const double peak_flops = 2.0 * bench_peak::fp32_fma_peak() * double(xq::kernels::max_threads());
  if (peak_flops > 0)
    state.counters["share_of_fp32_peak"] = benchmark::Counter(
        flops * static_cast<double>(state.iterations()) / peak_flops, benchmark::Counter::kIsRate);
}

double conv_flops(const conv_case& c, std::size_t batch) {
  return 2.0 * static_cast<double>(batch * c.hw * c.hw * c.cout * 9 * c.cin);
}

// Forward only (no tape), and forward + backward (input and weight gradients).
void BM_conv2d(benchmark::State& state) {
  const conv_case c = conv_cases[state.range(0)];
  const bool with_backward = state.range(1) != 0;
  const std::size_t batch = 64;
  xq::conv2d conv = xq::conv2d(c.cout, 3).padding(xq::padding::same).use_bias(false);
  // As in the CNN: the first conv's input is data (no input gradient), the second's is not.
  const bool input_grad = with_backward && c.cin > 1;
  xq::var x(random_tensor({batch, c.hw, c.hw, c.cin}, 4), input_grad);
  {
    xq::no_grad off;
    conv(x);
  }
  for (auto _ : state) {
    if (with_backward) {
      xq::tape tape;
      auto y = conv(x);
      tape.backward(y);
      x.state()->zero_grad();
      conv.kernel()->zero_grad();
    } else {
      xq::no_grad off;
      benchmark::DoNotOptimize(conv(x).value().data());
    }
  }
  // Backward does one GEMM of the forward's size per gradient (kernel; input when wanted).
  const double flops = conv_flops(c, batch) * (1.0 + (with_backward ? 1.0 : 0.0) + (input_grad ? 1.0 : 0.0));
  state.counters["GFLOP_per_s"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  add_share_of_fp32_peak(state, flops);
}
BENCHMARK(BM_conv2d)
    ->ArgNames({"conv", "backward"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The reference: the forward GEMM of each conv ([N*H*W, 9*Cin] x [9*Cin, Cout]) alone.
void BM_sgemm_reference(benchmark::State& state) {
  const conv_case c = conv_cases[state.range(0)];
  const std::size_t m = 64 * c.hw * c.hw, k = 9 * c.cin, n = c.cout;
  const xq::tensor a = random_tensor({m, k}, 5), b = random_tensor({k, n}, 6);
  xq::tensor out = xq::tensor::from_shape({m, n});
  for (auto _ : state) {
    xq::kernels::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, out.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP_per_s"] = benchmark::Counter(
      conv_flops(c, 64) * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  add_share_of_fp32_peak(state, conv_flops(c, 64));
}
BENCHMARK(BM_sgemm_reference)->ArgName("conv")->DenseRange(0, 1)->Unit(benchmark::kMicrosecond)->UseRealTime();

/// This core's measured peaks (machine_peak.hpp), for the shares above and the README.
void BM_machine_peak(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(bench_peak::fp32_fma_peak());
  state.counters["fp32_GFLOP_per_s"] = 2e-9 * bench_peak::fp32_fma_peak();
  state.counters["vnni_GOP_per_s"] = 2e-9 * bench_peak::vnni_peak();
}
BENCHMARK(BM_machine_peak)->Iterations(1);

}  // namespace
BENCHMARK_MAIN();
