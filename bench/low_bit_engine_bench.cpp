/// \file low_bit_engine_bench.cpp
/// Speed of the integer engine's block-scaled GEMM (include/xquant/deploy/engine/
/// block_scaled_gemm.hpp) against xquant's float GEMM (kernels/gemm.hpp: OpenBLAS SGEMM)
/// and the int16 engine's gemm_s16 on the same shapes (bench/README.md, "The block-scaled
/// GEMM"):
///
///  - shape 0..2: a small transformer LM's projections for 64 tokens (K x N = 128 x 128,
///    128 x 512, 512 x 128); shape 3: a 3x3 32->64 convolution as a GEMM at batch 64 on
///    14x14 (m = 12544, K = 288, N = 64);
///  - format 0: int4 weights in groups of 32 (torchao's 8da4w: per-token uint8 codes with a
///    zero point); 1: FP4 E2M1 weights x 2 stored as 4-bit codes, blocks of 32 (MXFP4's
///    elements); 2: the same FP4 values stored as int8;
///  - threads 1 or 2: OMP_NUM_THREADS for all three, each entry point deciding by its own
///    threshold (XQ_GEMM_PARALLEL_THRESHOLD, XQ_INTEGER_GEMM_PARALLEL_THRESHOLD) as a caller
///    sees it: the LM shapes (1 to 4 Mi MACs) stay on one thread.
///
/// The VM drifts, so the three kernels are timed alternately in the same loop; the reported
/// time is the block-scaled kernel's (manual time), and the counters give the others and
/// the ratios: `vs_float` = float time / block-scaled time, `vs_s16` = gemm_s16 time /
/// block-scaled time, `GMAC_per_s` of the block-scaled kernel. Before timing, each case
/// checks the kernel against block_scaled_gemm_reference bit for bit and reports an error
/// if they differ.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <xquant/deploy/engine/block_scaled_gemm.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/transform/low_bit_schemes.hpp>
#include <xquant/xquant.hpp>

#include "../examples/fashion_mnist/cnn.hpp"
#include <xquant/deploy/engine/integer_gemm.hpp>
#include <xquant/kernels/gemm.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using clock_type = std::chrono::steady_clock;
using xq::deploy::block_element;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

void set_threads(int threads) {
#if defined(_OPENMP)
  omp_set_num_threads(threads);
#else
  (void)threads;
#endif
}

struct gemm_shape {
  const char* name;
  std::size_t m, k, n;
};
constexpr gemm_shape shapes[] = {
    {"lm_128x128", 64, 128, 128},
    {"lm_128x512", 64, 128, 512},
    {"lm_512x128", 64, 512, 128},
    {"conv3x3_32to64", 64 * 14 * 14, 3 * 3 * 32, 64},
};

struct weight_format {
  const char* name;
  block_element kind;
};
constexpr weight_format formats[] = {
    {"int4_g32", block_element::int4},
    {"fp4_g32", block_element::fp4_e2m1},
    {"fp4_as_int8_g32", block_element::int8},
};

void BM_block_scaled_gemm(benchmark::State& state) {
  const gemm_shape s = shapes[state.range(0)];
  const weight_format f = formats[state.range(1)];
  const int threads = int(state.range(2));
  constexpr std::size_t block = 32;
  const std::size_t blocks = (s.k + block - 1) / block;
  std::mt19937 rng(17);

  // The activations: per-token uint8 codes with a zero point (8da4w), or FP4 x 2 + 12.
  const bool fp4 = f.kind != block_element::int4;
  static constexpr int e2m1_x2[] = {0, 1, 2, 3, 4, 6, 8, 12, -1, -2, -3, -4, -6, -8, -12};
  std::vector<std::uint8_t> codes(s.m * s.k);
  std::vector<std::int32_t> za(s.m);
  std::vector<float> sa(s.m);
  for (auto& v : codes) v = std::uint8_t(fp4 ? 12 + e2m1_x2[rng() % 15] : int(rng() % 256));
  for (auto& v : za) v = fp4 ? 12 : std::int32_t(rng() % 256);
  for (auto& v : sa) v = 0.01f + float(rng() % 100) * 1e-4f;
  std::vector<std::int8_t> w(s.k * s.n);
  for (auto& v : w) v = std::int8_t(fp4 ? e2m1_x2[rng() % 15] : int(rng() % 16) - 8);
  std::vector<float> sb(blocks * s.n);
  for (auto& v : sb) v = 0.02f + float(rng() % 100) * 1e-4f;

  xq::deploy::block_scaled_activations act;
  act.codes = codes.data();
  act.ld = s.k;
  act.zero_points = za.data();
  act.scales = sa.data();
  const xq::deploy::packed_block_scaled_matrix packed(w.data(), s.k, s.n, f.kind, block, sb.data(),
                                                      f.kind == block_element::int4 ? 32 : 8);

  // The same products for the other two: centred activations (a - za) and the weights, as
  // int16 for gemm_s16 and as float for the SGEMM.
  std::vector<std::int16_t> a16(s.m * s.k), w16(s.k * s.n);
  std::vector<float> af(s.m * s.k), wf(s.k * s.n);
  for (std::size_t i = 0; i < s.m; ++i)
    for (std::size_t k = 0; k < s.k; ++k) {
      const int centred = int(codes[i * s.k + k]) - za[i];
      a16[i * s.k + k] = std::int16_t(centred);
      af[i * s.k + k] = float(centred) * sa[i];
    }
  for (std::size_t t = 0; t < w.size(); ++t) {
    w16[t] = w[t];
    wf[t] = float(w[t]) * sb[(t / s.n / block) * s.n + t % s.n];
  }
  const xq::deploy::packed_s16_matrix packed16(w16.data(), s.k, s.n);

  std::vector<float> c(s.m * s.n), want(s.m * s.n), cf(s.m * s.n);
  std::vector<std::int32_t> c32(s.m * s.n);
  set_threads(threads);
  xq::deploy::block_scaled_gemm(s.m, act, packed, c.data());
  xq::deploy::block_scaled_gemm_reference(s.m, s.n, s.k, block, act, w.data(), sb.data(), want.data());
  if (std::memcmp(c.data(), want.data(), c.size() * sizeof(float)) != 0) {
    state.SkipWithError("block_scaled_gemm and its reference differ");
    return;
  }

  double t_bs = 0, t_float = 0, t_s16 = 0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    xq::kernels::gemm(false, false, s.m, s.n, s.k, 1.0f, af.data(), s.k, wf.data(), s.n, 0.0f, cf.data(), s.n);
    benchmark::DoNotOptimize(cf.data());
    t_float += seconds_since(t0);
    t0 = clock_type::now();
    xq::deploy::gemm_s16(s.m, a16.data(), s.k, packed16, nullptr, c32.data());
    benchmark::DoNotOptimize(c32.data());
    t_s16 += seconds_since(t0);
    t0 = clock_type::now();
    xq::deploy::block_scaled_gemm(s.m, act, packed, c.data());
    benchmark::DoNotOptimize(c.data());
    const double t = seconds_since(t0);
    t_bs += t;
    state.SetIterationTime(t);
  }
  set_threads(1);
  const double n = double(state.iterations()), macs = double(s.m) * double(s.n) * double(s.k);
  state.SetLabel(std::string(s.name) + " " + f.name);
  state.counters["bs_us"] = 1e6 * t_bs / n;
  state.counters["float_us"] = 1e6 * t_float / n;
  state.counters["s16_us"] = 1e6 * t_s16 / n;
  state.counters["vs_float"] = t_bs > 0 ? t_float / t_bs : 0.0;
  state.counters["vs_s16"] = t_bs > 0 ? t_s16 / t_bs : 0.0;
  state.counters["GMAC_per_s"] = t_bs > 0 ? macs * n / t_bs / 1e9 : 0.0;
  state.counters["bits_per_weight"] = packed.bits_per_value();
}
BENCHMARK(BM_block_scaled_gemm)
    ->ArgNames({"shape", "format", "threads"})
    ->ArgsProduct({{0, 1, 2, 3}, {0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseManualTime();


// ---- the engine on whole models: the CNN and an LM's projections ---------------------------

/// An LM block's projections: 128 -> 512 -> 128 on 64 tokens (its MLP; attention's four
/// projections are 128 -> 128).
template <class Dense = xq::dense>
struct projections {
  Dense up{xq::dense(512)};
  Dense down{xq::dense(128)};
  XQ_CHILDREN(up, down)
  xq::var operator()(const xq::var& x) { return down(xq::ops::relu(up(x))); }
};

/// The schemes compared: 0 int8 (NVIDIA), 1 int4-g32 weights with int8 inputs (W4A8),
/// 2 8da4w, 3 MXFP4, 4 NVFP4.
xq::quantization_scheme engine_scheme(std::int64_t i) {
  switch (i) {
    case 1: return xq::schemes::w4a8(32);
    case 2: return xq::schemes::torchao_8da4w(32);
    case 3: return xq::schemes::mx();
    case 4: return xq::schemes::nvfp4();
    default: return xq::schemes::nvidia();
  }
}

/// Float inference and the lowered model's engine on the same batch, alternated, on
/// `threads` threads: `engine_over_float` = engine time / float time (below 1: faster).
template <class Model>
void time_engine(benchmark::State& state, Model model, const xq::tensor::shape_type& shape) {
  const int threads = int(state.range(1));
  xq::build(model, shape);
  xq::quantize_options o;
  o.scheme = engine_scheme(state.range(0));
  o.fold_batch_norm = true;
  auto q = xq::quantize_model(model, o, shape);
  xq::tensor x = xq::tensor::from_shape(shape);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(0.0f, 1.0f);
  for (float& v : x) v = d(rng);
  {
    const xq::training_mode train;  // ranges for the static int8 inputs
    q(xq::var(x));
  }
  const std::vector<std::size_t> sample(shape.begin() + 1, shape.end());
  const auto engine = xq::deploy::lower(q, sample);
  set_threads(threads);
  double float_s = 0, engine_s = 0;
  for (auto _ : state) {
    const auto t0 = clock_type::now();
    {
      const xq::no_grad nothing;
      benchmark::DoNotOptimize(model(xq::var(x)).value().data());
    }
    const auto t1 = clock_type::now();
    benchmark::DoNotOptimize(engine.run(x).data());
    engine_s += seconds_since(t1);
    float_s += std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(seconds_since(t0));
  }
  set_threads(2);
  const double n = double(state.iterations());
  state.counters["float_ms"] = 1e3 * float_s / n;
  state.counters["engine_ms"] = 1e3 * engine_s / n;
  state.counters["engine_over_float"] = engine_s / float_s;
  state.counters["weight_bytes"] = double(engine.weight_bytes());
  state.SetLabel(o.scheme.name);
}

void BM_low_bit_engine_cnn(benchmark::State& state) {
  time_engine(state, fashion::make_cnn(1), {64, 28, 28, 1});
}
BENCHMARK(BM_low_bit_engine_cnn)
    ->ArgNames({"format", "threads"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

void BM_low_bit_engine_projections(benchmark::State& state) {
  time_engine(state, projections<>(), {64, 128});
}
BENCHMARK(BM_low_bit_engine_projections)
    ->ArgNames({"format", "threads"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseManualTime();
}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("block_scaled_path", xq::kernels::isa_name(xq::deploy::block_scaled_gemm_isa()));
  benchmark::AddCustomContext("cpu_features", xq::kernels::cpu().describe());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
