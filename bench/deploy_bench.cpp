/// \file deploy_bench.cpp
/// Speed of the integer engine (include/xquant/deploy/) against xquant's float inference
/// of the same networks (bench/README.md, "The integer and binary engines"):
///
///  - the Fashion-MNIST CNN of examples/fashion_mnist/cnn.hpp: its float inference
///    (`model(var(x))` under no_grad and inference mode) and its QAT twin
///    (`quantize_model`, NVIDIA's scheme, batch norms folded, fine-tuned a few steps)
///    lowered by `xq::deploy::lower`, run with the fast kernels and with the scalar
///    reference kernels;
///  - the binarized CNN of examples/fashion_mnist_bnn/bnn.hpp (`make_binary_cnn`,
///    trained a few steps, lowered: XNOR-popcount) and its float twin (`make_float_cnn`).
///
/// The VM this runs on drifts by up to 1.5x within a minute, so the figures to read are
/// ratios of two things timed alternately in the same loop (`BM_*_over_float`):
/// `speedup` = float time / engine time. The single cases give `images_per_s` each.
/// `BM_engine_ops` times every op of the lowered models on its own and reports
/// milliseconds per op kind (`<kind>_ms`): where an engine's time goes.
/// Only inference is timed; the models are trained and lowered once, before.
#include <benchmark/benchmark.h>

#include "machine_peak.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <xquant/core/mode.hpp>
#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/deploy/binary_gemm.hpp>
#include <xquant/deploy/engine_kernels.hpp>
#include <xquant/deploy/integer_gemm.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/kernels/parallel.hpp>
#include <xquant/transform/quantize_model.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>

#include "../examples/fashion_mnist/cnn.hpp"
#include "../examples/fashion_mnist_bnn/bnn.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

/// CPU seconds of the whole process (every thread). On this shared VM the wall clock also
/// counts the time another process held the core; with one thread, CPU time does not.
/// (With more threads it counts OpenMP workers spinning at barriers too.)
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// 28x28x1 images whose class (0..9) is where a bright 6x6 square sits on uniform noise:
/// learnable in a few steps, so the trained ranges, folded kernels and batch-norm
/// statistics look like a trained network's.
xq::dataset synthetic_fashion(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> noise(0.0f, 0.5f);
  xq::tensor x = xq::tensor::from_shape({n, 28, 28, 1});
  xq::tensor y = xq::tensor::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t label = rng() % 10, top = 2 + (label / 5) * 12, left = 1 + (label % 5) * 5;
    for (std::size_t r = 0; r < 28; ++r)
      for (std::size_t c = 0; c < 28; ++c) {
        const bool in_square = r >= top && r < top + 6 && c >= left && c < left + 6;
        x(i, r, c, 0) = noise(rng) + (in_square ? 0.5f : 0.0f);
      }
    y(i) = float(label);
  }
  return xq::dataset{x, y};
}

xq::fit_options few_steps() {
  xq::fit_options o;
  o.epochs = 1;
  o.batch_size = 64;
  o.verbose = false;
  return o;
}

void set_threads(int threads) {
#if defined(_OPENMP)
  omp_set_num_threads(threads);
#else
  (void)threads;
#endif
}

/// Sets the OpenMP thread count for its scope and restores the previous one.
class thread_count {
 public:
  explicit thread_count(int threads) {
#if defined(_OPENMP)
    saved_ = omp_get_max_threads();
#endif
    set_threads(threads);
  }
  ~thread_count() { set_threads(saved_); }
  thread_count(const thread_count&) = delete;
  thread_count& operator=(const thread_count&) = delete;

 private:
  int saved_ = 1;
};

/// integer_model.ipp's im2col at this commit (the batch's whole column matrix, cleared,
/// then one copy per tap), for BM_conv2d_s16's unfused path.
std::vector<std::int16_t> im2col_as_the_op_does(const std::vector<std::int16_t>& x, std::size_t n, std::size_t hw,
                                                std::size_t c) {
  const std::size_t k = 9 * c;
  std::vector<std::int16_t> cols;
  cols.assign(n * hw * hw * k, 0);
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < hw; ++i)
      for (std::size_t j = 0; j < hw; ++j) {
        std::int16_t* row = cols.data() + ((b * hw + i) * hw + j) * k;
        for (std::size_t u = 0; u < 3; ++u) {
          const long y = long(i + u) - 1;
          for (std::size_t v = 0; v < 3; ++v) {
            const long xx = long(j + v) - 1;
            if (y < 0 || y >= long(hw) || xx < 0 || xx >= long(hw)) continue;
            const std::int16_t* src = x.data() + ((b * hw + std::size_t(y)) * hw + std::size_t(xx)) * c;
            std::copy(src, src + c, row + (u * 3 + v) * c);
          }
        }
      }
  return cols;
}

/// The CNN and its lowered QAT twin, trained and lowered once, when first needed.
struct cnn_networks {
  fashion::cnn cnn = fashion::make_cnn(1);
  std::optional<xq::quantize_t<fashion::cnn>> qat;  // built from the trained cnn
  xq::deploy::integer_model engine;

  cnn_networks() {
    const xq::dataset data = synthetic_fashion(512, 1);
    // The float CNN: a few steps, then its QAT twin (batch norms folded), a few more.
    xq::build(cnn, {1, 28, 28, 1});
    xq::adam opt(xq::trainable_parameters(cnn), {2e-3f});
    xq::fit(cnn, opt, xq::sparse_softmax_cross_entropy, data, few_steps());
    xq::quantize_options qo;
    qo.fold_batch_norm = true;
    qat.emplace(xq::quantize_model(cnn, qo, xq::tensor::shape_type{1, 28, 28, 1}));
    xq::adam qopt(xq::trainable_parameters(*qat), {5e-4f});
    xq::fit(*qat, qopt, xq::sparse_softmax_cross_entropy, data, few_steps());
    engine = xq::deploy::lower(*qat, {28, 28, 1});
  }
};

/// The binarized CNN (trained a few steps: batch-norm statistics, latent kernels) lowered,
/// and its float twin.
struct binary_networks {
  decltype(bnn::make_binary_cnn()) binary = bnn::make_binary_cnn();
  decltype(bnn::make_float_cnn()) twin = bnn::make_float_cnn();
  xq::deploy::integer_model engine;

  binary_networks() {
    const xq::dataset data = synthetic_fashion(512, 1);
    xq::set_seed(1);
    xq::build(binary, {1, 28, 28, 1});
    xq::adam opt(xq::trainable_parameters(binary), {1e-2f});
    xq::fit(binary, opt, xq::sparse_softmax_cross_entropy, data, few_steps());
    engine = xq::deploy::lower(binary, {28, 28, 1});
    xq::build(twin, {1, 28, 28, 1});
  }
};

cnn_networks& cnn_nets() {
  static cnn_networks n;
  return n;
}

binary_networks& binary_nets() {
  static binary_networks n;
  return n;
}

const xq::tensor& batch_of(std::size_t batch) {
  static std::map<std::size_t, xq::tensor> cache;
  auto it = cache.find(batch);
  if (it == cache.end()) it = cache.emplace(batch, synthetic_fashion(batch, 7).inputs).first;
  return it->second;
}

/// Fast and reference kernels must give the same output bits; a benchmark of a wrong
/// kernel is skipped with an error.
bool same_as_reference(const xq::deploy::integer_model& m, const xq::tensor& x) {
  xq::deploy::run_options ref;
  ref.reference_kernels = true;
  return m.run(x, ref) == m.run(x);
}

void set_rate(benchmark::State& state, std::size_t batch) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
  state.counters["images_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * batch), benchmark::Counter::kIsRate);
}

template <class Model>
void float_inference(Model& model, const xq::tensor& x) {
  const xq::no_grad off;
  const xq::training_mode inference(false);
  auto y = model(xq::var(x));
  benchmark::DoNotOptimize(y.value().data());
}

void engine_inference(const xq::deploy::integer_model& m, const xq::tensor& x, bool reference) {
  xq::deploy::run_options o;
  o.reference_kernels = reference;
  auto y = m.run(x, o);
  benchmark::DoNotOptimize(y.data());
}

// ---- single cases: images/s ----------------------------------------------------------

void BM_float_cnn(benchmark::State& state) {
  const xq::tensor& x = batch_of(std::size_t(state.range(0)));
  auto& n = cnn_nets();
  float_inference(n.cnn, x);
  for (auto _ : state) float_inference(n.cnn, x);
  set_rate(state, x.shape()[0]);
}
BENCHMARK(BM_float_cnn)->ArgName("batch")->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond)->UseRealTime();

/// kernels: 0 the fast ones, 1 the scalar references.
void BM_integer_cnn(benchmark::State& state) {
  const xq::tensor& x = batch_of(std::size_t(state.range(0)));
  const bool reference = state.range(1) != 0;
  auto& n = cnn_nets();
  if (!same_as_reference(n.engine, x)) state.SkipWithError("fast kernels differ from the reference");
  for (auto _ : state) engine_inference(n.engine, x, reference);
  set_rate(state, x.shape()[0]);
}
BENCHMARK(BM_integer_cnn)
    ->ArgNames({"batch", "reference"})
    ->ArgsProduct({{64, 256}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_float_bnn_twin(benchmark::State& state) {
  const xq::tensor& x = batch_of(std::size_t(state.range(0)));
  auto& n = binary_nets();
  float_inference(n.twin, x);
  for (auto _ : state) float_inference(n.twin, x);
  set_rate(state, x.shape()[0]);
}
BENCHMARK(BM_float_bnn_twin)->ArgName("batch")->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_binary_cnn(benchmark::State& state) {
  const xq::tensor& x = batch_of(std::size_t(state.range(0)));
  const bool reference = state.range(1) != 0;
  auto& n = binary_nets();
  if (!same_as_reference(n.engine, x)) state.SkipWithError("fast kernels differ from the reference");
  for (auto _ : state) engine_inference(n.engine, x, reference);
  set_rate(state, x.shape()[0]);
}
BENCHMARK(BM_binary_cnn)
    ->ArgNames({"batch", "reference"})
    ->ArgsProduct({{64}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// ---- ratios: the engine and its float network alternated ------------------------------

/// The multiply-adds of the engine's integer convs and dense layers per image (0 for a
/// network without them): each output value's K products, read from one image's run.
double linear_macs_per_image(const xq::deploy::integer_model& engine, const xq::tensor& batch) {
  std::vector<std::size_t> one(batch.shape().begin(), batch.shape().end());
  one[0] = 1;
  xq::tensor x = xq::tensor::from_shape(one);
  std::copy(batch.data(), batch.data() + x.size(), x.data());
  const auto values = engine.run_all(x);
  double macs = 0;
  for (const auto& op : engine.ops)
    if (const auto* l = dynamic_cast<const xq::deploy::integer_linear_op*>(op.get())) {
      using form = xq::deploy::integer_linear_op::form;
      const double window = double(l->geometry.window[0]) * double(l->geometry.window[1]);
      const double k = l->shape_form == form::dense ? double(l->in_channels)
                       : l->shape_form == form::depthwise_conv2d ? window
                                                                 : window * double(l->in_channels);
      macs += double(values.at(l->output).elements()) * k;
    }
  return macs;
}

/// One float inference, then one engine inference, each timed on its own; the reported
/// (manual) time is the engine's. `speedup` = float time / engine time.
template <class Model>
void over_float(benchmark::State& state, Model& model, const xq::deploy::integer_model& engine) {
  const xq::tensor& x = batch_of(std::size_t(state.range(0)));
  if (!same_as_reference(engine, x)) state.SkipWithError("fast kernels differ from the reference");
  float_inference(model, x);
  engine_inference(engine, x, false);
  double float_seconds = 0, engine_seconds = 0, float_cpu = 0, engine_cpu = 0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    double c0 = process_cpu_seconds();
    float_inference(model, x);
    float_seconds += seconds_since(t0);
    float_cpu += process_cpu_seconds() - c0;
    t0 = clock_type::now();
    c0 = process_cpu_seconds();
    engine_inference(engine, x, false);
    const double e = seconds_since(t0);
    engine_cpu += process_cpu_seconds() - c0;
    engine_seconds += e;
    state.SetIterationTime(e);
  }
  const double iterations = static_cast<double>(state.iterations());
  const double images = iterations * static_cast<double>(x.shape()[0]);
  state.counters["float_ms"] = 1e3 * float_seconds / iterations;
  state.counters["engine_ms"] = 1e3 * engine_seconds / iterations;
  state.counters["float_images_per_s"] = float_seconds > 0 ? images / float_seconds : 0.0;
  state.counters["engine_images_per_s"] = engine_seconds > 0 ? images / engine_seconds : 0.0;
  state.counters["speedup"] = engine_seconds > 0 ? float_seconds / engine_seconds : 0.0;
  state.counters["cpu_speedup"] = engine_cpu > 0 ? float_cpu / engine_cpu : 0.0;
  // Operations per second and their share of this core's measured peaks (machine_peak.hpp;
  // one thread: the peaks are one core's): the float network against the fp32 FMA peak,
  // the integer engine against VPDPBUSD's.
  const double macs = linear_macs_per_image(engine, x) * images;
  if (macs > 0 && float_seconds > 0 && engine_seconds > 0) {
    state.counters["float_GFLOP_per_s"] = 2e-9 * macs / float_seconds;
    state.counters["engine_GOP_per_s"] = 2e-9 * macs / engine_seconds;
    if (bench_peak::fp32_fma_peak() > 0) state.counters["float_share_of_fp32_peak"] = macs / float_seconds / bench_peak::fp32_fma_peak();
    if (bench_peak::vnni_peak() > 0) state.counters["engine_share_of_vnni_peak"] = macs / engine_seconds / bench_peak::vnni_peak();
  }
}

void BM_integer_over_float(benchmark::State& state) { over_float(state, cnn_nets().cnn, cnn_nets().engine); }
BENCHMARK(BM_integer_over_float)->ArgName("batch")->Arg(64)->Arg(256)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_binary_over_float(benchmark::State& state) { over_float(state, binary_nets().twin, binary_nets().engine); }
BENCHMARK(BM_binary_over_float)->ArgName("batch")->Arg(64)->UseManualTime()->Unit(benchmark::kMillisecond);

// ---- where the time goes: each op on its own -------------------------------------------

/// model:0 the integer CNN, 1 the binarized one; every op of one inference run and timed
/// alone, summed per op kind (`<kind>_ms` wall, `<kind>_cpu_ms` process CPU time, per
/// inference). The reported time is the sum of the wall times.
void BM_engine_ops(benchmark::State& state) {
  const xq::tensor& x = batch_of(std::size_t(state.range(0)));
  const bool reference = state.range(2) != 0;
  const xq::deploy::integer_model& m = state.range(1) == 0 ? cnn_nets().engine : binary_nets().engine;
  xq::deploy::run_options o;
  o.reference_kernels = reference;
  std::map<std::string, double> seconds, cpu;
  for (auto _ : state) {
    std::vector<xq::deploy::engine_tensor> values(m.value_count);
    xq::deploy::engine_tensor& in = values.at(m.input_value);
    in.shape.assign(x.shape().begin(), x.shape().end());
    in.real.assign(x.begin(), x.end());
    double total = 0;
    for (const auto& op : m.ops) {
      const auto t0 = clock_type::now();
      const double c0 = process_cpu_seconds();
      op->run(values, o);
      const double s = seconds_since(t0);
      cpu[op->kind()] += process_cpu_seconds() - c0;
      seconds[op->kind()] += s;
      total += s;
    }
    state.SetIterationTime(total);
  }
  for (const auto& [kind, s] : seconds) state.counters[kind + "_ms"] = 1e3 * s / double(state.iterations());
  for (const auto& [kind, s] : cpu) state.counters[kind + "_cpu_ms"] = 1e3 * s / double(state.iterations());
}
BENCHMARK(BM_engine_ops)
    ->ArgNames({"batch", "model", "reference"})
    ->ArgsProduct({{64}, {0, 1}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// ---- the engine kernels on the networks' shapes, against the ops' loops they replace ------

/// The CNN's convolutions at batch 64 (conv:0 28x28x1 -> 32, conv:1 14x14x32 -> 64, 3x3
/// same, float-multiplier requantization): path:0 as integer_model.ipp runs them at this
/// commit (im2col of the whole batch, gemm_s16, requantizer::apply), fused:1 one
/// conv2d_nhwc_s16 call (engine_kernels.hpp). One thread.
void BM_conv2d_s16(benchmark::State& state) {
  struct shape {
    std::size_t hw, c, f;
  };
  const shape s = state.range(0) == 0 ? shape{28, 1, 32} : shape{14, 32, 64};
  const bool fused = state.range(1) != 0;
  const std::size_t n = 64, k = 9 * s.c, rows = n * s.hw * s.hw;
  const thread_count one(1);
  std::mt19937 rng(7);
  std::vector<std::int16_t> x(rows * s.c), kernel(k * s.f), out(rows * s.f);
  for (auto& v : x) v = std::int16_t(int(rng() % 255) - 127);
  for (auto& v : kernel) v = std::int16_t(int(rng() % 255) - 127);
  std::vector<std::int32_t> bias(s.f, 100);
  std::vector<double> m(s.f, 0.0003);
  const xq::deploy::requantizer r(xq::deploy::requantization::float_multiplier, m, "conv");
  xq::deploy::window_geometry g;
  g.window = {3, 3};
  g.pads = {1, 1, 1, 1};
  const xq::deploy::packed_s16_matrix plain(kernel.data(), k, s.f);
  const xq::deploy::packed_s16_matrix conv = xq::deploy::pack_conv2d_weights_s16(kernel.data(), 3, 3, s.c, s.f);
  xq::deploy::linear_epilogue e;
  e.requant = &r;
  e.qmin = -127;
  e.qmax = 127;
  for (auto _ : state) {
    if (fused) {
      xq::deploy::conv2d_nhwc_s16(x.data(), n, s.hw, s.hw, s.c, g, conv, bias.data(), e, out.data(), nullptr);
    } else {
      const std::vector<std::int16_t> cols = im2col_as_the_op_does(x, n, s.hw, s.c);
      std::vector<std::int32_t> acc(rows * s.f);
      xq::deploy::gemm_s16(rows, cols.data(), k, plain, bias.data(), acc.data());
      r.apply(acc.data(), rows, 0, -127, 127, out.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GMAC_per_s"] = benchmark::Counter(double(rows * s.f * k) * double(state.iterations()) / 1e9,
                                                    benchmark::Counter::kIsRate);
  if (bench_peak::vnni_peak() > 0)
    state.counters["share_of_vnni_peak"] = benchmark::Counter(
        double(rows * s.f * k) * double(state.iterations()) / bench_peak::vnni_peak(), benchmark::Counter::kIsRate);
  state.SetLabel(xq::kernels::isa_name(xq::deploy::integer_product_isa(true)));
}
BENCHMARK(BM_conv2d_s16)
    ->ArgNames({"conv", "fused"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// The BNN's first binary block at batch 64: binary conv 14x14x64 -> 128, max pool 2x2,
/// batch norm, sign. fused:0 the four kernels one after the other (binary_conv2d_nhwc,
/// max_pool_nhwc_s32, batch_norm_f32, sign_bits), each writing its tensor; fused:1
/// binary_conv2d_pool_norm_sign_bits, image by image. One thread.
void BM_binary_block(benchmark::State& state) {
  const bool fused = state.range(0) != 0;
  const std::size_t n = 64, hw = 14, words = 1, filters = 128;
  const thread_count one(1);
  std::mt19937_64 rng(9);
  std::vector<std::uint64_t> x(n * hw * hw * words), weights(filters * 9 * words), bits(n * 7 * 7 * 2);
  for (auto& v : x) v = rng();
  for (auto& v : weights) v = rng();
  std::vector<float> mean(filters, 2.0f), scale(filters, 0.5f), offset(filters, 0.25f);
  xq::deploy::window_geometry conv, pool;
  conv.window = {3, 3};
  conv.pads = {1, 1, 1, 1};
  pool.window = {2, 2};
  pool.strides = {2, 2};
  const auto k = std::int32_t(9 * 64);
  for (auto _ : state) {
    if (fused) {
      xq::deploy::binary_conv2d_pool_norm_sign_bits(x.data(), n, hw, hw, words, conv, weights.data(), filters, k, pool,
                                                    mean.data(), scale.data(), offset.data(), bits.data());
    } else {
      std::vector<std::int32_t> acc(n * hw * hw * filters), pooled(n * 7 * 7 * filters);
      std::vector<float> y(pooled.size());
      xq::deploy::binary_conv2d_nhwc(x.data(), n, hw, hw, words, conv, weights.data(), filters, k, acc.data());
      xq::deploy::max_pool_nhwc_s32(acc.data(), n, hw, hw, filters, pool, pooled.data());
      xq::deploy::batch_norm_f32(pooled.data(), pooled.size(), mean.data(), scale.data(), offset.data(), filters,
                                 y.data());
      xq::deploy::sign_bits(y.data(), n * 7 * 7, filters, bits.data());
    }
    benchmark::DoNotOptimize(bits.data());
  }
}
BENCHMARK(BM_binary_block)->ArgName("fused")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

// ---- where a second thread pays: the kernels' regions on 1 and on 2 threads ---------------

/// Runs `work(threads)` on 1 thread, then on 2, in every iteration (the machine drifts too
/// much between runs); reports t1_us, t2_us and speedup = t1 / t2. The regions are opened
/// directly (`parallel_chunks`), below the thresholds too: this is what
/// XQ_INTEGER_GEMM_PARALLEL_THRESHOLD and XQ_BINARY_GEMM_PARALLEL_THRESHOLD come from.
template <class Work>
void one_and_two_threads(benchmark::State& state, Work&& work) {
  const thread_count restore(1);
  work(1);
  work(2);
  double t1 = 0, t2 = 0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    work(1);
    t1 += seconds_since(t0);
    t0 = clock_type::now();
    work(2);
    t2 += seconds_since(t0);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["t1_us"] = 1e6 * t1 / n;
  state.counters["t2_us"] = 1e6 * t2 / n;
  state.counters["speedup"] = t2 > 0 ? t1 / t2 : 0.0;
}

/// gemm_s16 of a 3x3 32->64 convolution's shape (K = 288, N = 64) with `rows` rows:
/// rows * 18Ki multiply-adds (rows:64 is 1.1 Mi, rows:12544 the CNN's second conv at
/// batch 64, 231 Mi).
void BM_gemm_s16_threads(benchmark::State& state) {
  const std::size_t m = std::size_t(state.range(0)), n = 64, k = 288;
  std::mt19937 rng(3);
  std::vector<std::int16_t> a(m * k), b(k * n);
  for (auto& v : a) v = std::int16_t(int(rng() % 511) - 255);
  for (auto& v : b) v = std::int16_t(int(rng() % 255) - 127);
  const xq::deploy::packed_s16_matrix packed(b.data(), k, n);
  std::vector<std::int32_t> c(m * n);
  const std::size_t block = xq::deploy::detail::gemm_s16_block_rows(k), blocks = (m + block - 1) / block;
  std::vector<const std::int16_t*> starts(m);
  for (std::size_t i = 0; i < m; ++i) starts[i] = a.data() + i * k;
  const xq::kernels::cpu_isa isa = xq::deploy::integer_product_isa(false);  // A spans 511 values: VPMADDWD
  one_and_two_threads(state, [&](int threads) {
    set_threads(threads);
    xq::kernels::parallel_chunks(threads, blocks, 1, [&](std::size_t b0, std::size_t b1) {
      xq::deploy::integer_operand op;
      op.s16 = starts.data() + b0 * block;
      op.rows = std::min(m, b1 * block) - b0 * block;
      op.groups = packed.pairs();
      xq::deploy::integer_product(isa, op, packed, nullptr, c.data() + b0 * block * n);
    });
    benchmark::DoNotOptimize(c.data());
  });
  state.counters["Mi_MACs"] = double(m * n * k) / double(1 << 20);
}
BENCHMARK(BM_gemm_s16_threads)
    ->ArgName("rows")
    ->Arg(64)->Arg(128)->Arg(256)->Arg(512)->Arg(1024)->Arg(12544)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// binary_gemm of the BNN's first binary conv's shape (9 words per row, N = 128) with
/// `rows` rows: rows * 1152 word operations.
void BM_binary_gemm_threads(benchmark::State& state) {
  const std::size_t m = std::size_t(state.range(0)), n = 128, words = 9;
  std::mt19937_64 rng(5);
  std::vector<std::uint64_t> a(m * words), b(n * words);
  for (auto& v : a) v = rng();
  for (auto& v : b) v = rng();
  std::vector<std::int32_t> c(m * n);
  constexpr std::size_t block = 64;
  const std::size_t blocks = (m + block - 1) / block;
  one_and_two_threads(state, [&](int threads) {
    set_threads(threads);
    xq::kernels::parallel_chunks(threads, blocks, 1, [&](std::size_t b0, std::size_t b1) {
      const std::size_t i0 = b0 * block, i1 = std::min(m, b1 * block);
      xq::deploy::binary_gemm(i1 - i0, n, words, 576, a.data() + i0 * words, b.data(), c.data() + i0 * n);
    });
    benchmark::DoNotOptimize(c.data());
  });
  state.counters["Mi_word_ops"] = double(m * n * words) / double(1 << 20);
}
BENCHMARK(BM_binary_gemm_threads)
    ->ArgName("rows")
    ->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Arg(12544)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// ---- the machine's references: memcpy bandwidth, the core's measured peaks ----------------

/// One core's fp32 FMA and VPDPBUSD peaks (machine_peak.hpp), as operations per second
/// (2 per multiply-add).
void BM_machine_peak(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(bench_peak::fp32_fma_peak());
  state.counters["fp32_GFLOP_per_s"] = 2e-9 * bench_peak::fp32_fma_peak();
  state.counters["vnni_GOP_per_s"] = 2e-9 * bench_peak::vnni_peak();
}
BENCHMARK(BM_machine_peak)->Iterations(1);

/// memcpy of 16 MiB (DRAM-bound), 1 thread: how fast the machine is in this run.
void BM_memcpy(benchmark::State& state) {
  const std::size_t bytes = std::size_t(16) << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(2 * bytes * state.iterations()));
}
BENCHMARK(BM_memcpy)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
#if defined(_OPENMP)
  benchmark::AddCustomContext("omp_threads", std::to_string(omp_get_max_threads()));
#endif
  benchmark::AddCustomContext("cpu_features", xq::kernels::cpu().describe());
  benchmark::AddCustomContext("integer_kernel", xq::kernels::isa_name(xq::deploy::integer_product_isa(true)));
  benchmark::AddCustomContext("binary_kernel", xq::kernels::isa_name(xq::deploy::binary_gemm_isa()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
