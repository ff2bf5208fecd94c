/// \file threads_bench.cpp
/// Where a second thread pays (bench/README.md, "Threads"): each parallel region xquant
/// has, over a range of sizes, and whole training steps, timed on 1 and on 2 threads.
///
/// This machine drifts by 1.5x within a minute (it is shared), so every case runs its
/// work on one thread and then on two within each iteration and reports
///   t1_us, t2_us   microseconds per call on 1 and on 2 threads, and
///   speedup        t1 / t2: above 1, the second thread pays.
/// The sweeps open their regions directly (`parallel_chunks`, `parallel_items`,
/// `cblas_sgemm`), below the thresholds of config.hpp too: they measure the region,
/// which is what the thresholds were chosen from. `BM_train_step` and
/// `BM_deterministic_over_default` run whole models with the thresholds as built.
///
/// Run it with another process busy on the other core to see a shared machine:
///   timeout 600 sh -c 'while :; do :; done' &

#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/kernels/gemm.hpp>
#include <xquant/kernels/im2col.hpp>
#include <xquant/kernels/parallel.hpp>
#include <xquant/kernels/simd.hpp>
#include <xquant/kernels/threads.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/global_average_pool2d.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/numerics/tf_fake_quant.hpp>

#include "../examples/fashion_mnist/cnn.hpp"
#include "training_step.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using clock_type = std::chrono::steady_clock;

void set_threads(int threads) {
#if defined(_OPENMP)
  omp_set_num_threads(threads);
#else
  (void)threads;
#endif
}

/// Runs `work(threads)` on 1 thread, then on 2, each iteration; reports both and the ratio.
template <class Work>
void one_against_two(benchmark::State& state, Work&& work) {
  double seconds[2] = {0, 0};
  for (auto _ : state) {
    double both = 0;
    for (int t = 0; t < 2; ++t) {
      set_threads(t + 1);
      const auto start = clock_type::now();
      work(t + 1);
      const double s = std::chrono::duration<double>(clock_type::now() - start).count();
      seconds[t] += s;
      both += s;
    }
    state.SetIterationTime(both);
  }
  set_threads(2);
  const double n = static_cast<double>(state.iterations());
  state.counters["t1_us"] = 1e6 * seconds[0] / n;
  state.counters["t2_us"] = 1e6 * seconds[1] / n;
  state.counters["speedup"] = seconds[0] / seconds[1];
}

std::vector<float> inputs(std::size_t n, std::uint32_t seed) {
  std::vector<float> x(n);
  for (auto& v : x) {
    seed = seed * 1664525u + 1013904223u;
    v = float(seed >> 8) * (16.0f / 16777216.0f) - 8.0f;
  }
  return x;
}

// ---- the elementwise walkers: parallel_for ------------------------------------------

/// TF's fake_quant_with_min_max_vars forward over n floats (the simd walker's run).
void BM_walker(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto k = xq::tf::detail::nonempty(xq::tf::detail::make_kernel<xq::tf::revision::current,
                                                                       xq::tf::step_form::quotient>(
      -6.0f, 6.0f, xq::tf::fake_quant_grid(8, false, "bench"), "bench"));
  const std::vector<float> x = inputs(n, 1);
  std::vector<float> y(n);
  one_against_two(state, [&](int threads) {
    xq::kernels::parallel_chunks(threads, n, 64, [&](std::size_t b, std::size_t e) {
      xq::kernels::detail::forward_run<xsimd::default_arch, false>(k, x.data() + b, y.data() + b, e - b);
    });
    benchmark::DoNotOptimize(y.data());
  });
}
BENCHMARK(BM_walker)->ArgName("n")->RangeMultiplier(4)->Range(1 << 12, 1 << 24)->UseManualTime();

// ---- the per-item loops: parallel_for_items ------------------------------------------

/// A per-image reduction like global_average_pool2d's: images of 14x14x64, summed per
/// channel (read 12,544 floats, write 64 per image).
void BM_items(benchmark::State& state) {
  const auto images = static_cast<std::size_t>(state.range(0));
  const std::size_t pixels = 14 * 14, c = 64;
  const std::vector<float> x = inputs(images * pixels * c, 2);
  std::vector<float> y(images * c);
  one_against_two(state, [&](int threads) {
    xq::kernels::parallel_items(threads, images, [&](std::size_t begin, std::size_t end) {
      for (std::size_t n = begin; n < end; ++n) {
        float* yr = y.data() + n * c;
        std::fill(yr, yr + c, 0.0f);
        const float* xr = x.data() + n * pixels * c;
        for (std::size_t p = 0; p < pixels; ++p, xr += c) {
          XQ_OMP_SIMD
          for (std::size_t k = 0; k < c; ++k) yr[k] += xr[k];
        }
      }
    });
    benchmark::DoNotOptimize(y.data());
  });
  state.counters["elements"] = double(x.size());
}
BENCHMARK(BM_items)->ArgName("images")->RangeMultiplier(2)->Range(1, 256)->UseManualTime();

// ---- im2col and col2im ---------------------------------------------------------------

/// The second conv of the Fashion-MNIST CNN: 3x3 same on 14x14x32 images.
xq::window2d conv_window(std::size_t images) {
  xq::conv2d_geometry geometry;
  geometry.padding = xq::padding::same;
  const std::array<std::size_t, 4> shape{images, 14, 14, 32};
  return xq::resolve_window("bench", shape, 3, 3, geometry);
}

void BM_im2col(benchmark::State& state) {
  const xq::window2d g = conv_window(static_cast<std::size_t>(state.range(0)));
  const std::vector<float> x = inputs(g.batch * g.in_h * g.in_w * g.channels, 3);
  std::vector<float> cols(g.out_pixels() * g.patch_size());
  one_against_two(state, [&](int threads) {
    xq::kernels::parallel_items(threads, g.batch, [&](std::size_t b, std::size_t e) {
      xq::kernels::im2col_images(x.data(), g, cols.data(), b, e);
    });
    benchmark::DoNotOptimize(cols.data());
  });
  state.counters["elements"] = double(cols.size());
}
BENCHMARK(BM_im2col)->ArgName("images")->RangeMultiplier(2)->Range(1, 64)->UseManualTime();

void BM_col2im(benchmark::State& state) {
  const xq::window2d g = conv_window(static_cast<std::size_t>(state.range(0)));
  const std::vector<float> cols = inputs(g.out_pixels() * g.patch_size(), 4);
  std::vector<float> dx(g.batch * g.in_h * g.in_w * g.channels);
  one_against_two(state, [&](int threads) {
    xq::kernels::parallel_items(threads, g.batch, [&](std::size_t b, std::size_t e) {
      xq::kernels::col2im_images(cols.data(), g, dx.data(), b, e);
    });
    benchmark::DoNotOptimize(dx.data());
  });
  state.counters["elements"] = double(cols.size());
}
BENCHMARK(BM_col2im)->ArgName("images")->RangeMultiplier(2)->Range(1, 64)->UseManualTime();

// ---- OpenBLAS SGEMM ------------------------------------------------------------------

/// C (m x n) = A (m x k) B (k x n), the BLAS called directly (its own threading: below
/// m*n*k = 262,144 OpenBLAS 0.3.21 stays on one thread by itself).
void sgemm_case(benchmark::State& state, std::size_t m, std::size_t n, std::size_t k) {
  const std::vector<float> a = inputs(m * k, 5), b = inputs(k * n, 6);
  std::vector<float> c(m * n);
  one_against_two(state, [&](int) {
    xq::detail::cblas_gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  });
  state.counters["mnk"] = double(m) * double(n) * double(k);
}

/// Square: n x n x n.
void BM_sgemm_square(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  sgemm_case(state, n, n, n);
}
BENCHMARK(BM_sgemm_square)
    ->ArgName("n")
    ->Arg(32)->Arg(48)->Arg(64)->Arg(96)->Arg(128)->Arg(160)->Arg(192)->Arg(256)->Arg(384)->Arg(512)
    ->UseManualTime();

/// The CNN's second conv, forward, on `images` images: (images*196) x 64 x 288.
void BM_sgemm_conv(benchmark::State& state) {
  const auto images = static_cast<std::size_t>(state.range(0));
  sgemm_case(state, images * 196, 64, 288);
}
BENCHMARK(BM_sgemm_conv)->ArgName("images")->RangeMultiplier(2)->Range(1, 64)->UseManualTime();

/// A dense layer's forward: batch x units x inputs, batch 64, 128 units.
void BM_sgemm_dense(benchmark::State& state) {
  const auto in = static_cast<std::size_t>(state.range(0));
  sgemm_case(state, 64, 128, in);
}
BENCHMARK(BM_sgemm_dense)->ArgName("in")->RangeMultiplier(4)->Range(16, 4096)->UseManualTime();

/// xquant's gemm in deterministic mode (fixed blocks, each on one thread) against the
/// default (OpenBLAS threads it), both on 2 threads, alternately: `det_over_default`.
void BM_gemm_deterministic(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0)), n = static_cast<std::size_t>(state.range(1)),
             k = static_cast<std::size_t>(state.range(2));
  const std::vector<float> a = inputs(m * k, 7), b = inputs(k * n, 8);
  std::vector<float> c(m * n);
  double seconds[2] = {0, 0};
  for (auto _ : state) {
    double both = 0;
    for (int det = 0; det < 2; ++det) {
      const xq::deterministic_mode mode(det != 0);
      const auto start = clock_type::now();
      xq::kernels::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
      const double s = std::chrono::duration<double>(clock_type::now() - start).count();
      seconds[det] += s;
      both += s;
    }
    benchmark::DoNotOptimize(c.data());
    state.SetIterationTime(both);
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["default_us"] = 1e6 * seconds[0] / iterations;
  state.counters["det_us"] = 1e6 * seconds[1] / iterations;
  state.counters["det_over_default"] = seconds[1] / seconds[0];
}
BENCHMARK(BM_gemm_deterministic)
    ->ArgNames({"m", "n", "k"})
    ->Args({3136, 64, 288})    // CNN conv 1 forward, one block of 16 images
    ->Args({64, 288, 12544})   // its kernel gradient (dyᵀ · cols), batch 64
    ->Args({64, 128, 3136})    // the dense layer after the convs
    ->Args({512, 512, 512})
    ->Args({64, 64, 50000})    // a long reduction
    ->UseManualTime();

// ---- whole training steps --------------------------------------------------------------

/// The README's example: conv 3x3 (8 filters, same) + batch norm + relu, global average
/// pooling, dense 3; 12x12x1 images, batch 32. Every region in it is small.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm>
struct tiny_block {
  Conv conv{xq::conv2d(8, 3).padding(xq::padding::same)};
  Norm norm;
  XQ_CHILDREN(conv, norm)
  xq::var operator()(const xq::var& x) { return xq::ops::relu(norm(conv(x))); }
};
using tiny_model = xq::sequential<tiny_block<>, xq::global_average_pool2d, xq::dense>;

/// model 0: the tiny model, batch 32; model 1: the Fashion-MNIST CNN, batch 64.
void BM_train_step(benchmark::State& state) {
  if (state.range(0) == 0) {
    xq::set_seed(1);
    tiny_model model{tiny_block<>(), xq::global_average_pool2d(), xq::dense(3)};
    xq::build(model, {1, 12, 12, 1});
    bench::train_step<tiny_model> step(model, 32, 2, {12, 12, 1}, 3);
    one_against_two(state, [&](int) { step(); });
  } else {
    auto model = fashion::make_cnn(1);
    xq::build(model, {1, 28, 28, 1});
    bench::train_step<fashion::cnn> step(model, 64);
    one_against_two(state, [&](int) { step(); });
  }
}
BENCHMARK(BM_train_step)->ArgName("model")->Arg(0)->Arg(1)->UseManualTime();

/// The CNN's training step in deterministic mode against the default, on the default
/// thread count, alternately: `det_over_default`.
void BM_deterministic_over_default(benchmark::State& state) {
  auto model = fashion::make_cnn(1);
  xq::build(model, {1, 28, 28, 1});
  bench::train_step<fashion::cnn> step(model, 64);
  double seconds[2] = {0, 0};
  for (auto _ : state) {
    double both = 0;
    for (int det = 0; det < 2; ++det) {
      const xq::deterministic_mode mode(det != 0);
      const auto start = clock_type::now();
      step();
      const double s = std::chrono::duration<double>(clock_type::now() - start).count();
      seconds[det] += s;
      both += s;
    }
    state.SetIterationTime(both);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["default_ms"] = 1e3 * seconds[0] / n;
  state.counters["det_ms"] = 1e3 * seconds[1] / n;
  state.counters["det_over_default"] = seconds[1] / seconds[0];
}
BENCHMARK(BM_deterministic_over_default)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
