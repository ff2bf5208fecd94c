/// \file low_bit_bench.cpp
/// Speed of the low-bit formats' kernels (include/xquant/numerics/mx_block.hpp,
/// nvfp4_block.hpp, float8_scaled.hpp, torchao_affine.hpp; the block walker
/// kernels/block_scaled.hpp) against memcpy (bench/README.md, "Low-bit formats").
///
/// BM_<format>_<pass>/n:<floats>/threads:<t>: the pass (forward with its gradient mask where
/// the format's gradient has one, or backward) on a (n / 4096, 4096) float tensor, timed
/// alternately with a memcpy of n floats on the same number of threads (two threads: one half
/// each); `vs_memcpy` = memcpy time / pass time, 1 when the pass runs as fast as a copy of its
/// input to its output. The VM drifts, so only ratios taken in the same loop are reported.
/// n = 64Ki (256 KiB in, 256 KiB out: L2), 1Mi (L3), 16Mi (DRAM). The SIMD policy
/// (xsimd's best architecture of the build: AVX-512 here) with OpenMP threads; a tensor under
/// XQ_PARALLEL_THRESHOLD (256Ki floats) stays on one thread.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <xquant/numerics/float8_scaled.hpp>
#include <xquant/numerics/mx_block.hpp>
#include <xquant/numerics/nvfp4_block.hpp>
#include <xquant/numerics/torchao_affine.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

namespace lb = xq::low_bit;
using policy = xq::simd_policy<>;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

constexpr std::size_t cols = 4096;

/// Values like a layer's activations: smooth, with a rare outlier.
xq::tensor input(std::size_t n) {
  xq::tensor x = xq::tensor::from_shape({n / cols, cols});
  for (std::size_t i = 0; i < n; ++i) x.data()[i] = std::sin(float(i) * 0.37f) * (i % 97 == 0 ? 30.0f : 1.0f);
  return x;
}

struct threads_scope {
#if defined(_OPENMP)
  int saved = omp_get_max_threads();
  explicit threads_scope(int t) { omp_set_num_threads(t); }
  ~threads_scope() { omp_set_num_threads(saved); }
#else
  explicit threads_scope(int) {}
#endif
};

/// memcpy of n floats on `threads` threads (two: one half each).
struct copy_reference {
  std::vector<float> src, dst;
  int threads;
  copy_reference(std::size_t n, int t) : src(n, 1.0f), dst(n, 0.0f), threads(t) {}
  void operator()() {
    const std::size_t n = src.size();
    if (threads <= 1) {
      std::memcpy(dst.data(), src.data(), n * sizeof(float));
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int t = 0; t < threads; ++t) {
        const std::size_t b = n * std::size_t(t) / std::size_t(threads), e = n * std::size_t(t + 1) / std::size_t(threads);
        std::memcpy(dst.data() + b, src.data() + b, (e - b) * sizeof(float));
      }
    }
    benchmark::ClobberMemory();
  }
};

/// The pass alternated with its memcpy reference, each timed on its own.
void run_case(benchmark::State& state, const std::function<std::function<void()>(const xq::tensor&)>& make) {
  const std::size_t n = std::size_t(state.range(0));
  const int threads = int(state.range(1));
  const threads_scope scope(threads);
  const xq::tensor x = input(n);
  std::function<void()> pass = make(x);
  copy_reference copy(n, threads);
  pass();  // warm up: pages mapped, caches filled
  copy();
  double pass_seconds = 0, copy_seconds = 0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    pass();
    const double p = seconds_since(t0);
    t0 = clock_type::now();
    copy();
    copy_seconds += seconds_since(t0);
    pass_seconds += p;
    state.SetIterationTime(p);
  }
  const double bytes = 8.0 * double(n) * double(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
  state.counters["vs_memcpy"] = pass_seconds > 0 ? copy_seconds / pass_seconds : 0.0;
  state.counters["memcpy_GBps"] = copy_seconds > 0 ? bytes / copy_seconds / 1e9 : 0.0;
}

/// Forward (with the mask where the format has one) and backward of each format.
struct format_case {
  std::string name;
  std::function<std::function<void()>(const xq::tensor&)> forward, backward;
};


using factory = std::function<std::function<void()>(const xq::tensor&)>;

std::vector<format_case> cases() {
  std::vector<format_case> out;
  const auto add = [&](std::string name, factory fwd, factory bwd) { out.push_back({std::move(name), fwd, bwd}); };
  // The incoming gradient, and the forward's mask and state, made before timing.
  const auto dy_of = [](const xq::tensor& x) { return std::make_shared<xq::tensor>(input(x.size())); };
  const auto mask_of = [](const xq::tensor& x) { return std::make_shared<std::vector<unsigned char>>(x.size(), 1); };

  const auto mx = [&](const char* name, lb::mx_variant v, lb::element_type e) {
    lb::mx_spec s;
    s.variant = v;
    s.element.type = e;
    add(name,
        [s](const xq::tensor& x) {
          return std::function<void()>([&x, s] { benchmark::DoNotOptimize(lb::mx_quantize_dequantize<policy>(x, s).data()); });
        },
        [dy_of](const xq::tensor& x) {  // the MX peers pass the gradient through: dx = dy
          auto dy = dy_of(x);
          return std::function<void()>([dy] { benchmark::DoNotOptimize(xq::tensor(*dy).data()); });
        });
  };
  mx("mxfp4_torchao_rceil", lb::mx_variant::torchao_rceil, lb::element_type::e2m1);
  mx("mxfp8_torchao_rceil", lb::mx_variant::torchao_rceil, lb::element_type::e4m3fn);
  mx("mxfp4_microxcaling", lb::mx_variant::microxcaling_nearest, lb::element_type::e2m1);
  mx("mxfp4_modelopt", lb::mx_variant::modelopt_mxfp4, lb::element_type::e2m1);

  const auto nv = [&](const char* name, lb::nvfp4_variant v) {
    lb::nvfp4_spec s;
    s.variant = v;
    add(name,
        [s, mask_of](const xq::tensor& x) {
          auto m = mask_of(x);
          return std::function<void()>([&x, s, m] {
            bool* mask = s.variant == lb::nvfp4_variant::modelopt_triton ? reinterpret_cast<bool*>(m->data()) : nullptr;
            benchmark::DoNotOptimize(lb::nvfp4_quantize_dequantize<policy>(x, s, "bench", nullptr, mask).data());
          });
        },
        [s, dy_of, mask_of](const xq::tensor& x) {
          auto dy = dy_of(x);
          auto m = mask_of(x);
          return std::function<void()>([s, dy, m] {
            benchmark::DoNotOptimize(lb::nvfp4_backward<policy>(*dy, s, reinterpret_cast<const bool*>(m->data())).data());
          });
        });
  };
  nv("nvfp4_torchao", lb::nvfp4_variant::torchao);
  nv("nvfp4_transformer_engine", lb::nvfp4_variant::transformer_engine);
  nv("nvfp4_modelopt_triton", lb::nvfp4_variant::modelopt_triton);

  const auto f8 = [&](const char* name, lb::fp8_variant v, lb::fp8_granularity g) {
    lb::fp8_spec s;
    s.variant = v;
    s.granularity = g;
    add(name,
        [s](const xq::tensor& x) {
          return std::function<void()>([&x, s] { benchmark::DoNotOptimize(lb::fp8_quantize_dequantize<policy>(x, s).data()); });
        },
        [s, dy_of](const xq::tensor& x) {
          auto dy = dy_of(x);
          auto st = std::make_shared<lb::fp8_state>();
          lb::fp8_quantize_dequantize<policy>(x, s, "bench", st.get());
          return std::function<void()>(
              [&x, s, dy, st] { benchmark::DoNotOptimize(lb::fp8_backward<policy>(x, *dy, s, *st).data()); });
        });
  };
  f8("fp8_torchao_per_tensor", lb::fp8_variant::torchao, lb::fp8_granularity::per_tensor);
  f8("fp8_torchao_per_row", lb::fp8_variant::torchao, lb::fp8_granularity::per_row);
  f8("fp8_transformer_engine_per_tensor", lb::fp8_variant::transformer_engine, lb::fp8_granularity::per_tensor);

  const auto ix = [&](const char* name, lb::intx_scheme scheme, int bits, int group) {
    lb::intx_spec s;
    s.scheme = scheme;
    s.bits = bits;
    s.group_size = group;
    add(name,
        [s, mask_of](const xq::tensor& x) {
          auto m = mask_of(x);
          return std::function<void()>([&x, s, m] {
            benchmark::DoNotOptimize(
                lb::intx_quantize_dequantize<policy>(x, s, "bench", nullptr, reinterpret_cast<bool*>(m->data())).data());
          });
        },
        [s, dy_of, mask_of](const xq::tensor& x) {
          auto dy = dy_of(x);
          auto m = mask_of(x);
          auto st = std::make_shared<lb::intx_state>();
          lb::intx_quantize_dequantize<policy>(x, s, "bench", st.get(), reinterpret_cast<bool*>(m->data()));
          return std::function<void()>([&x, s, dy, m, st] {
            benchmark::DoNotOptimize(
                lb::intx_backward<policy>(x, *dy, s, *st, reinterpret_cast<const bool*>(m->data())).data());
          });
        });
  };
  ix("int4_symmetric_g32", lb::intx_scheme::intx_symmetric, 4, 32);
  ix("int8_per_token", lb::intx_scheme::intx_per_token, 8, 0);
  ix("int4_weight_only_g128", lb::intx_scheme::int4_weight_only, 4, 128);
  return out;
}

const bool registered = [] {
  for (const auto& c : cases()) {
    for (const char* pass : {"forward", "backward"}) {
      const auto make = std::string(pass) == "forward" ? c.forward : c.backward;
      benchmark::RegisterBenchmark(("BM_" + c.name + "_" + pass).c_str(),
                                   [make](benchmark::State& s) { run_case(s, make); })
          ->ArgNames({"n", "threads"})
          ->ArgsProduct({{1 << 16, 1 << 20, 1 << 24}, {1, 2}})
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
