// Threads (kernels/threads.hpp): deterministic mode gives the same bits on 1, 2 and 3
// threads (a long-reduction GEMM, a conv2d forward and backward, dense training steps),
// and small work opens no parallel region. Without OpenMP every run is on one thread and
// the comparisons hold trivially.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <xquant/core/children.hpp>
#include <xquant/core/mode.hpp>
#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/kernels/gemm.hpp>
#include <xquant/kernels/im2col.hpp>
#include <xquant/kernels/parallel.hpp>
#include <xquant/kernels/threads.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/global_average_pool2d.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/losses.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

const int thread_counts[] = {1, 2, 3};

/// Runs `f` with the calling thread's OpenMP thread count set to `threads` (all of them,
/// however busy the machine: the idle-core limit off, kernels/idle_cores.hpp).
template <class F>
auto on_threads(int threads, F&& f) {
  const xq::idle_core_limit_scope exactly(false);
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  auto result = f();
  omp_set_num_threads(saved);
  return result;
#else
  (void)threads;
  return f();
#endif
}

bool in_parallel() {
#if defined(_OPENMP)
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

xq::tensor random_tensor(const xq::tensor::shape_type& shape, unsigned seed) {
  xq::tensor t = xq::tensor::from_shape(shape);
  const std::vector<float> v = random_values(t.size(), seed);
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

bool same_bits(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && same_bits(a.data(), b.data(), a.size());
}
bool same_bits(const xq::tensor& a, const xq::tensor& b) {
  return a.shape() == b.shape() && same_bits(a.data(), b.data(), a.size());
}

std::vector<float> values_of(const xq::tensor& t) { return std::vector<float>(t.begin(), t.end()); }

/// Whether a GEMM of this size is split into blocks in deterministic mode (so that the
/// comparisons below are not between single calls only).
bool split(std::size_t m, std::size_t n, std::size_t k) {
  return double(m) * double(n) * double(k) >= double(XQ_GEMM_PARALLEL_THRESHOLD);
}

}  // namespace

TEST_CASE("deterministic mode: a long-reduction GEMM has the same bits on 1, 2 and 3 threads", "[kernels][threads]") {
  const xq::deterministic_mode on;
  REQUIRE(xq::deterministic());
  const std::size_t k = 50000;
  // (transpose A, transpose B, m, n): C cut by rows (m >= n) and by columns (m < n).
  struct shape {
    bool ta, tb;
    std::size_t m, n;
  };
  const shape shapes[] = {{false, false, 64, 48}, {true, false, 40, 72}, {false, true, 96, 20}, {true, true, 17, 33}};
  for (const shape& s : shapes) {
    INFO("transpose " << s.ta << s.tb << ", m " << s.m << ", n " << s.n << ", k " << k);
    REQUIRE(split(s.m, s.n, k));
    const std::vector<float> a = random_values(s.m * k, 1), b = random_values(k * s.n, 2);
    const std::size_t lda = s.ta ? s.m : k, ldb = s.tb ? k : s.n;
    std::vector<std::vector<float>> c;
    for (int threads : thread_counts) {
      c.push_back(on_threads(threads, [&] {
        std::vector<float> out = random_values(s.m * s.n, 3);  // beta = 0.5 reads C
        xq::kernels::gemm(s.ta, s.tb, s.m, s.n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.5f, out.data(), s.n);
        return out;
      }));
    }
    CHECK(same_bits(c[0], c[1]));
    CHECK(same_bits(c[0], c[2]));
  }
}

TEST_CASE("deterministic mode: blocks are spread over the threads", "[kernels][threads]") {
  const xq::deterministic_mode on;
  const std::size_t m = 256, n = 256, k = 256;
  REQUIRE(split(m, n, k));
  const std::vector<float> a = random_values(m * k, 4), b = random_values(k * n, 5);
  std::vector<float> c(m * n);
  const unsigned long before = xq::kernels::parallel_region_count();
  on_threads(2, [&] {
    xq::kernels::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    return 0;
  });
#if defined(_OPENMP)
  CHECK(xq::kernels::parallel_region_count() == before + 1);
#else
  CHECK(xq::kernels::parallel_region_count() == before);
#endif
}

TEST_CASE("deterministic mode: conv2d forward and backward have the same bits on 1, 2 and 3 threads",
          "[kernels][threads][conv2d]") {
  const xq::deterministic_mode on;
  // 16 images of 16x16x16, 3x3 same, 32 filters: every GEMM (forward, kernel and input
  // gradients: 4096 x 32 x 144) is split, and im2col/col2im are threaded.
  const std::size_t batch = 16, hw = 16, cin = 16, filters = 32;
  REQUIRE(split(batch * hw * hw, filters, 9 * cin));
  REQUIRE(batch * hw * hw * 9 * cin >= XQ_PARALLEL_ITEMS_THRESHOLD);
  xq::set_seed(11);
  auto conv = xq::conv2d(filters, 3).padding(xq::padding::same);
  conv.build(cin);
  conv.bias()->value = random_tensor({filters}, 12);
  const xq::tensor x0 = random_tensor({batch, hw, hw, cin}, 13);
  const xq::tensor dy = random_tensor({batch, hw, hw, filters}, 14);

  struct result {
    xq::tensor y, dx, dkernel, dbias;
  };
  std::vector<result> r;
  for (int threads : thread_counts) {
    r.push_back(on_threads(threads, [&] {
      conv.kernel()->zero_grad();
      conv.bias()->zero_grad();
      xq::var x(x0, true);
      xq::tape tape;
      xq::var y = conv(x);
      tape.backward(y, dy);
      return result{y.value(), x.grad(), conv.kernel()->grad, conv.bias()->grad};
    }));
  }
  for (std::size_t i = 1; i < r.size(); ++i) {
    INFO(thread_counts[i] << " threads against 1");
    CHECK(same_bits(r[0].y, r[i].y));
    CHECK(same_bits(r[0].dx, r[i].dx));
    CHECK(same_bits(r[0].dkernel, r[i].dkernel));
    CHECK(same_bits(r[0].dbias, r[i].dbias));
  }
}

TEST_CASE("deterministic mode: dense training steps have the same bits on 1, 2 and 3 threads",
          "[kernels][threads][dense]") {
  const xq::deterministic_mode on;
  // Batch 128, 512 -> 256 -> 10: the first layer's GEMMs (128 x 256 x 512 and its
  // gradients) are split.
  const std::size_t batch = 128, in = 512, hidden = 256, classes = 10;
  REQUIRE(split(batch, hidden, in));
  const xq::tensor x0 = random_tensor({batch, in}, 21);
  xq::tensor labels = xq::tensor::from_shape({batch});
  for (std::size_t i = 0; i < batch; ++i) labels(i) = float(i % classes);

  struct result {
    std::vector<float> logits, dkernel, dbias, dx, kernel_after, bias_after;
  };
  std::vector<result> r;
  for (int threads : thread_counts) {
    r.push_back(on_threads(threads, [&] {
      xq::set_seed(22);
      auto model = xq::sequential<xq::dense, xq::relu, xq::dense>(xq::dense(hidden), xq::relu(), xq::dense(classes));
      xq::build(model, {1, in});
      xq::adam opt(xq::trainable_parameters(model));
      result out;
      for (int step = 0; step < 2; ++step) {  // the second step starts from updated weights
        xq::var x(x0, true);
        xq::tape tape;
        xq::var logits = model(x);
        tape.backward(xq::sparse_softmax_cross_entropy(logits, labels));
        out.logits = values_of(logits.value());
        out.dkernel = values_of(model.get<0>().kernel()->grad);
        out.dbias = values_of(model.get<0>().bias()->grad);
        out.dx = values_of(x.grad());
        opt.step();
        opt.zero_grad();
      }
      out.kernel_after = values_of(model.get<0>().kernel()->value);
      out.bias_after = values_of(model.get<0>().bias()->value);
      return out;
    }));
  }
  for (std::size_t i = 1; i < r.size(); ++i) {
    INFO(thread_counts[i] << " threads against 1");
    CHECK(same_bits(r[0].logits, r[i].logits));
    CHECK(same_bits(r[0].dkernel, r[i].dkernel));
    CHECK(same_bits(r[0].dbias, r[i].dbias));
    CHECK(same_bits(r[0].dx, r[i].dx));
    CHECK(same_bits(r[0].kernel_after, r[i].kernel_after));
    CHECK(same_bits(r[0].bias_after, r[i].bias_after));
  }
}

TEST_CASE("deterministic mode: a GEMM below the threshold keeps the default mode's bits", "[kernels][threads]") {
  const std::size_t m = 40, n = 30, k = 70;
  REQUIRE_FALSE(split(m, n, k));
  const std::vector<float> a = random_values(m * k, 31), b = random_values(k * n, 32);
  std::vector<float> plain(m * n), det(m * n);
  xq::kernels::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, plain.data(), n);
  {
    const xq::deterministic_mode on;
    xq::kernels::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, det.data(), n);
  }
  CHECK(same_bits(plain, det));
}

TEST_CASE("deterministic_mode restores the previous mode", "[kernels][threads]") {
  const bool start = xq::deterministic();
  {
    const xq::deterministic_mode on;
    CHECK(xq::deterministic());
    {
      const xq::deterministic_mode off(false);
      CHECK_FALSE(xq::deterministic());
    }
    CHECK(xq::deterministic());
  }
  CHECK(xq::deterministic() == start);
  xq::set_deterministic(!start);
  CHECK(xq::deterministic() == !start);
  xq::set_deterministic(start);
}

namespace {
/// The README's model: conv 3x3 (8 filters) + batch norm + relu, global average
/// pooling, dense 3; every region in a step on 32 12x12x1 images is small.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm>
struct tiny_block {
  Conv conv{xq::conv2d(8, 3).padding(xq::padding::same)};
  Norm norm;
  XQ_CHILDREN(conv, norm)
  xq::var operator()(const xq::var& x) { return xq::ops::relu(norm(conv(x))); }
};
}  // namespace

TEST_CASE("small work opens no parallel region", "[kernels][threads]") {
  on_threads(2, [] {
    const unsigned long before = xq::kernels::parallel_region_count();

    SECTION("parallel_for and parallel_for_items below the thresholds run on the caller's thread") {
      bool any_in_parallel = false;
      xq::kernels::parallel_for(XQ_PARALLEL_THRESHOLD - 1, 64, [&](std::size_t, std::size_t) {
        any_in_parallel = any_in_parallel || in_parallel();
      });
      xq::kernels::parallel_for_items(64, xq::detail::batch_threads(XQ_PARALLEL_ITEMS_THRESHOLD - 1),
                                      [&](std::size_t, std::size_t) { any_in_parallel = any_in_parallel || in_parallel(); });
      CHECK_FALSE(any_in_parallel);
      CHECK(xq::kernels::parallel_region_count() == before);
    }
    SECTION("a GEMM below the threshold, in both modes") {
      const std::size_t m = 64, n = 64, k = 64;
      REQUIRE_FALSE(split(m, n, k));
      const std::vector<float> a = random_values(m * k, 41), b = random_values(k * n, 42);
      std::vector<float> c(m * n);
      xq::kernels::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
      const xq::deterministic_mode on;
      xq::kernels::gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
      CHECK(xq::kernels::parallel_region_count() == before);
#if defined(_OPENMP)
      CHECK(omp_get_max_threads() == 2);  // the single-threaded scope restored it
#endif
    }
    SECTION("a training step of the README's tiny model") {
      xq::set_seed(51);
      auto model = xq::sequential<tiny_block<>, xq::global_average_pool2d, xq::dense>(
          tiny_block<>(), xq::global_average_pool2d(), xq::dense(3));
      xq::build(model, {1, 12, 12, 1});
      xq::adam opt(xq::trainable_parameters(model));
      xq::tensor labels = xq::tensor::from_shape({32});
      for (std::size_t i = 0; i < 32; ++i) labels(i) = float(i % 3);
      const xq::training_mode train;
      xq::tape tape;
      xq::var loss = xq::sparse_softmax_cross_entropy(model(xq::var(random_tensor({32, 12, 12, 1}, 52))), labels);
      tape.backward(loss);
      opt.step();
      CHECK(xq::kernels::parallel_region_count() == before);
    }
    SECTION("large work does open one (the hook counts)") {
      std::vector<float> v(XQ_PARALLEL_THRESHOLD);
      xq::kernels::parallel_for(v.size(), 64, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) v[i] = 1.0f;
      });
#if defined(_OPENMP)
      CHECK(xq::kernels::parallel_region_count() == before + 1);
#else
      CHECK(xq::kernels::parallel_region_count() == before);
#endif
    }
    return 0;
  });
}
