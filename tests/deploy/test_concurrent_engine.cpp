// The integer engine run from several threads at once (issue 34, finding 1): `run` is
// const and keeps nothing between calls, so threads sharing one lowered model get the
// single-thread outputs, bit for bit, for the fast kernels, the reference kernels and the
// binary network's. This file is also part of the ThreadSanitizer test
// (tests/CMakeLists.txt, XQ_TSAN_TESTS).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "deploy_models.hpp"

#include <xquant/deploy/lower.hpp>

#include "../test_support.hpp"

namespace {

/// `engine.run(x, o)` on four threads at once, three times each: each the one-thread output.
void check_concurrent_runs(const xq::deploy::integer_model& engine, const xq::tensor& x, const xq::deploy::run_options& o) {
  constexpr int threads = 4, repeats = 3;
  const xq::tensor alone = engine.run(x, o);
  std::vector<int> same(threads, 0);
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      for (int r = 0; r < repeats; ++r) same[t] += xq::testing::same_bits(engine.run(x, o), alone) ? 1 : 0;
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    CAPTURE(t);
    CHECK(same[t] == repeats);
  }
}

}  // namespace

TEST_CASE("integer engine: run from several threads on one lowered model gives the one-thread outputs",
          "[deploy][concurrency]") {
  const xq::dataset data = deploy_test::quadrant_data(64, 5);
  xq::deploy::run_options fast, reference;
  reference.reference_kernels = true;
  SECTION("a folded-BN QAT CNN") {
    auto model = deploy_test::make_small_cnn();
    auto qat = deploy_test::trained_qat(model, data);
    const xq::deploy::integer_model engine = xq::deploy::lower(qat, {12, 12, 1});
    check_concurrent_runs(engine, data.inputs, fast);
    check_concurrent_runs(engine, data.inputs, reference);
  }
  SECTION("a binarized CNN") {
    auto model = deploy_test::make_binary_cnn();
    xq::build(model, {1, 12, 12, 1});
    deploy_test::train(model, data, 1, 1e-3f);
    const xq::deploy::integer_model engine = xq::deploy::lower(model, {12, 12, 1});
    check_concurrent_runs(engine, data.inputs, fast);
  }
}
