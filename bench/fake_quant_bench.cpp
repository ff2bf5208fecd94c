/// \file fake_quant_bench.cpp
/// Throughput of the SIMD walkers against memcpy (bench/README.md).
///
/// Every benchmark is registered as NAME/n:<floats>/omp:<threads>, is timed in
/// wall-clock time (OpenMP workers do not show up in the main thread's CPU
/// time), and reports
///   bytes_per_second  bytes read + written per second, and
///   vs_memcpy         that bandwidth divided by the bandwidth of a memcpy of
///                     n floats (n read + n written) on the same number of
///                     threads, measured once per (n, threads) in this process
///                     (memcpy_reference below).
/// BM_memcpy itself reports vs_memcpy too: it should be close to 1 and shows
/// how noisy the machine is. BM_identity_forward runs the forward walker with
/// a kernel that returns its input: the walker's own ceiling.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <xquant/kernels/scalar.hpp>
#include <xquant/kernels/simd.hpp>
#include <xquant/numerics/tf_fake_quant.hpp>
#include <xquant/numerics/tf_quantize_and_dequantize.hpp>
#include <xquant/numerics/torch_fake_quant.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using policy = xq::simd_policy<>;

constexpr std::int64_t Ki = 1024, Mi = Ki * Ki;
constexpr std::size_t channels = 64;  // per-channel cases: channels on the last axis

// ---- buffers ------------------------------------------------------------------------

struct free_deleter {
  void operator()(void* p) const { std::free(p); }
};

/// A 64-byte aligned array, written once (so every page is mapped before timing).
template <class T>
class buffer {
 public:
  explicit buffer(std::size_t n)
      : data_(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))), n_(n) {
    if (!data_) throw std::bad_alloc();
    std::memset(data_.get(), 0, n * sizeof(T));
  }
  T* data() { return data_.get(); }
  std::size_t size() const { return n_; }

 private:
  std::unique_ptr<T, free_deleter> data_;
  std::size_t n_;
};

/// Deterministic inputs in [-8, 8): a range of [-6, 6] clamps some of them.
void fill_inputs(float* x, std::size_t n, std::uint32_t seed) {
  std::uint32_t s = seed;
  for (std::size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;  // LCG: fast, and good enough for data
    x[i] = float(s >> 8) * (16.0f / 16777216.0f) - 8.0f;
  }
}

void set_threads(int threads) {
#if defined(_OPENMP)
  omp_set_num_threads(threads);
#else
  (void)threads;
#endif
}

/// memcpy of n floats; with two threads each copies one half.
void copy(const float* src, float* dst, std::size_t n, int threads) {
#if defined(_OPENMP)
  if (threads > 1) {
    const std::size_t chunk = (n / std::size_t(threads) + 15) / 16 * 16;
#pragma omp parallel num_threads(threads)
    {
      const std::size_t b = std::min(n, std::size_t(omp_get_thread_num()) * chunk);
      const std::size_t e = std::min(n, b + chunk);
      std::memcpy(dst + b, src + b, (e - b) * sizeof(float));
    }
    return;
  }
#endif
  (void)threads;
  std::memcpy(dst, src, n * sizeof(float));
}

// ---- the memcpy reference -----------------------------------------------------------

/// Bytes per second of memcpy of n floats (2n floats moved) on `threads`
/// threads: the median of 11 trials, each repeating the copy for >= 10 ms
/// after a warm-up (the median, so that a trial the OS or hypervisor
/// interrupted does not count). Computed on first use and cached, so each
/// fake-quant benchmark compares against a copy measured in the same process.
double memcpy_reference(std::size_t n, int threads) {
  static std::map<std::pair<std::size_t, int>, double> cache;
  const auto key = std::make_pair(n, threads);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;

  using clock = std::chrono::steady_clock;
  buffer<float> src(n), dst(n);
  fill_inputs(src.data(), n, 1);
  for (int i = 0; i < 3; ++i) copy(src.data(), dst.data(), n, threads);  // warm up
  // Copies are timed in batches of ~1 MiB or more, so that reading the
  // clock does not count for small n.
  const std::size_t batch = std::max<std::size_t>(1, (std::size_t(1) << 18) / (n ? n : 1));
  std::vector<double> trials;
  for (int t = 0; t < 11; ++t) {
    std::size_t reps = 0;
    const auto start = clock::now();
    double elapsed = 0.0;
    do {
      for (std::size_t b = 0; b < batch; ++b) {
        copy(src.data(), dst.data(), n, threads);
        benchmark::ClobberMemory();
      }
      reps += batch;
      elapsed = std::chrono::duration<double>(clock::now() - start).count();
    } while (elapsed < 0.01);
    trials.push_back(double(reps) * double(2 * n * sizeof(float)) / elapsed);
  }
  std::nth_element(trials.begin(), trials.begin() + 5, trials.end());
  return cache[key] = trials[5];
}

/// The timed loop of every benchmark: runs `body` once per iteration, then
/// reports the bytes it moves (`bytes` per call) and vs_memcpy, its bandwidth
/// over memcpy_reference(n, threads). The loop is timed here as well (wall
/// clock, as UseRealTime), so that vs_memcpy is a plain ratio.
template <class Body>
void run(benchmark::State& state, std::size_t n, int threads, double bytes, Body&& body) {
  const double reference = memcpy_reference(n, threads);  // measured before timing starts
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    body();
    benchmark::ClobberMemory();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double moved = bytes * double(state.iterations());
  state.SetBytesProcessed(std::int64_t(moved));
  state.counters["vs_memcpy"] = seconds > 0 ? moved / seconds / reference : 0.0;
}

// ---- kernels under test -------------------------------------------------------------

/// y = x through the walker: what the walker alone costs (its ceiling).
struct identity_kernel {
  template <class V>
  V forward(const V& x) const {
    return x;
  }
};
auto identity() { return identity_kernel{}; }

// Forwards use the kernel the API runs for a non-empty range (detail::nonempty).
auto tf_vars_kernel() {  // fake_quant_with_min_max_vars: shifted / scale
  return xq::tf::detail::nonempty(
      xq::tf::detail::make_kernel<xq::tf::revision::current, xq::tf::step_form::quotient>(
          -6.0f, 6.0f, xq::tf::fake_quant_grid(8, false, "bench"), "bench"));
}
auto tf_args_forward_kernel() {  // fake_quant_with_min_max_args: * inv_scale
  return xq::tf::detail::nonempty(
      xq::tf::detail::make_kernel<xq::tf::revision::current, xq::tf::step_form::product>(
          -6.0f, 6.0f, xq::tf::fake_quant_grid(8, false, "bench"), "bench"));
}
auto tf_args_kernel() {  // the gradients: * inv_scale, min = max = 0 handled per element
  return xq::tf::detail::make_kernel<xq::tf::revision::current, xq::tf::step_form::product>(
      -6.0f, 6.0f, xq::tf::fake_quant_grid(8, false, "bench"), "bench");
}
auto torch_kernel() {  // fake_quantize_per_tensor_affine, int8: scale, 1 / scale, zp, qmin, qmax
  return xq::torch::fake_quantize_affine_kernel<false>{0.05f, 1.0f / 0.05f, 3.0f, -128.0f, 127.0f};
}
auto qdq_kernel() {  // quantize_and_dequantize_v4, range given, half to even
  const auto r = xq::tf::compute_quantization_range(true, 8, false, -6.0f, 6.0f);
  return xq::tf::quantize_and_dequantize_kernel<xq::tf::round_mode::half_to_even, true>{
      r.min, r.max, r.scale, r.inverse_scale, -6.0f, 6.0f};
}

/// Per-channel ranges of fake_quant_with_min_max_vars_per_channel, walked as the op
/// walks them (with_table: no min = max = 0 channel here, so without that test).
struct tf_channel_table {
  xq::tf::detail::channel_ranges<xq::tf::revision::current, xq::tf::step_form::product> ranges;

  static tf_channel_table make() {
    xq::vector min = xq::vector::from_shape({channels}), max = xq::vector::from_shape({channels});
    for (std::size_t c = 0; c < channels; ++c) {
      min(c) = -1.0f - 0.1f * float(c);
      max(c) = 2.0f + 0.05f * float(c);
    }
    return {{min, max, xq::tf::fake_quant_grid(8, false, "bench"), "bench"}};
  }
};

xq::kernels::channel_layout last_axis(std::size_t n) { return {n / channels, channels, 1}; }

// ---- benchmarks -----------------------------------------------------------------------

std::size_t size_arg(const benchmark::State& state) { return std::size_t(state.range(0)); }
int threads_arg(const benchmark::State& state) { return int(state.range(1)); }

void BM_memcpy(benchmark::State& state) {
  const std::size_t n = size_arg(state);
  const int threads = threads_arg(state);
  buffer<float> x(n), y(n);
  fill_inputs(x.data(), n, 2);
  run(state, n, threads, 8.0 * double(n), [&] { copy(x.data(), y.data(), n, threads); });
}

/// y = f(x) with any of the per-tensor kernels (read n, write n floats).
template <class MakeKernel>
void forward_case(benchmark::State& state, MakeKernel make_kernel) {
  const std::size_t n = size_arg(state);
  const int threads = threads_arg(state);
  set_threads(threads);
  const auto k = make_kernel();
  buffer<float> x(n), y(n);
  fill_inputs(x.data(), n, 3);
  run(state, n, threads, 8.0 * double(n),
      [&] { xq::kernels::forward(policy{}, k, x.data(), y.data(), n); });
}

void BM_identity_forward(benchmark::State& state) { forward_case(state, identity); }
void BM_tf_forward(benchmark::State& state) { forward_case(state, tf_vars_kernel); }
void BM_tf_args_forward(benchmark::State& state) { forward_case(state, tf_args_forward_kernel); }
void BM_torch_forward(benchmark::State& state) { forward_case(state, torch_kernel); }
void BM_qdq_forward(benchmark::State& state) { forward_case(state, qdq_kernel); }

/// y and the bool mask (read n floats, write n floats + n bytes).
void BM_tf_forward_mask(benchmark::State& state) {
  const std::size_t n = size_arg(state);
  const int threads = threads_arg(state);
  set_threads(threads);
  const auto k = tf_vars_kernel();
  buffer<float> x(n), y(n);
  buffer<bool> mask(n);
  fill_inputs(x.data(), n, 4);
  run(state, n, threads, 9.0 * double(n), [&] {
    xq::kernels::forward_with_mask(policy{}, k, x.data(), y.data(), mask.data(), n);
  });
}

/// dx from x and dy (read 2n, write n floats).
void BM_tf_backward(benchmark::State& state) {
  const std::size_t n = size_arg(state);
  const int threads = threads_arg(state);
  set_threads(threads);
  const auto k = tf_args_kernel();
  buffer<float> x(n), dy(n), dx(n);
  fill_inputs(x.data(), n, 5);
  fill_inputs(dy.data(), n, 6);
  run(state, n, threads, 12.0 * double(n),
      [&] { xq::kernels::backward(policy{}, k, x.data(), dy.data(), dx.data(), n); });
}

void BM_tf_channels_forward(benchmark::State& state) {
  const std::size_t n = size_arg(state);
  const int threads = threads_arg(state);
  set_threads(threads);
  const auto t = tf_channel_table::make();
  buffer<float> x(n), y(n);
  fill_inputs(x.data(), n, 7);
  run(state, n, threads, 8.0 * double(n), [&] {
    t.ranges.with_table([&](const auto& table) {
      xq::kernels::forward_channels(policy{}, table, last_axis(n), x.data(), y.data());
    });
  });
}

void BM_tf_channels_forward_mask(benchmark::State& state) {
  const std::size_t n = size_arg(state);
  const int threads = threads_arg(state);
  set_threads(threads);
  const auto t = tf_channel_table::make();
  buffer<float> x(n), y(n);
  buffer<bool> mask(n);
  fill_inputs(x.data(), n, 8);
  run(state, n, threads, 9.0 * double(n), [&] {
    t.ranges.with_table([&](const auto& table) {
      xq::kernels::forward_channels_with_mask(policy{}, table, last_axis(n), x.data(), y.data(), mask.data());
    });
  });
}

void BM_tf_channels_backward(benchmark::State& state) {
  const std::size_t n = size_arg(state);
  const int threads = threads_arg(state);
  set_threads(threads);
  const auto t = tf_channel_table::make();
  buffer<float> x(n), dy(n), dx(n);
  fill_inputs(x.data(), n, 9);
  fill_inputs(dy.data(), n, 10);
  run(state, n, threads, 12.0 * double(n), [&] {
    t.ranges.with_table([&](const auto& table) {
      xq::kernels::backward_channels(policy{}, table, last_axis(n), x.data(), dy.data(), dx.data());
    });
  });
}

/// Sizes 4Ki..16Mi on one thread; 1Mi and 16Mi also on two.
void sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "omp"});
  for (std::int64_t n : {4 * Ki, 64 * Ki, 1 * Mi, 16 * Mi}) b->Args({n, 1});
  for (std::int64_t n : {1 * Mi, 16 * Mi}) b->Args({n, 2});
  b->UseRealTime();
}

BENCHMARK(BM_memcpy)->Apply(sizes);
BENCHMARK(BM_identity_forward)->Apply(sizes);
BENCHMARK(BM_tf_forward)->Apply(sizes);
BENCHMARK(BM_tf_args_forward)->Apply(sizes);
BENCHMARK(BM_tf_forward_mask)->Apply(sizes);
BENCHMARK(BM_tf_backward)->Apply(sizes);
BENCHMARK(BM_tf_channels_forward)->Apply(sizes);
BENCHMARK(BM_tf_channels_forward_mask)->Apply(sizes);
BENCHMARK(BM_tf_channels_backward)->Apply(sizes);
BENCHMARK(BM_torch_forward)->Apply(sizes);
BENCHMARK(BM_qdq_forward)->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
