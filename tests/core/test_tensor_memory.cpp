// The tensor memory cache (core/memory.hpp): freed blocks serve the next tensor of their
// size class, the bound evicts the oldest, alignment, and a training step that after its
// first run takes every large tensor from the cache.
#include <catch2/catch.hpp>

#include <cstdint>
#include <thread>
#include <vector>

#include <xquant/core/memory.hpp>
#include <xquant/core/tape.hpp>
#include <xquant/core/tensor.hpp>
#include <xquant/layers/activation.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/max_pool2d.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/core/mode.hpp>

#include "../gradient_check.hpp"

namespace {

std::uintptr_t address(const xq::tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data()); }

/// Restores the default bound when a test that changes it ends.
struct limit_guard {
  std::size_t saved = xq::tensor_memory().cache_limit;
  ~limit_guard() { xq::set_tensor_cache_limit(saved); }
};

}  // namespace

TEST_CASE("tensor memory: a freed block serves the next tensor of its size class", "[memory]") {
  std::uintptr_t first = 0;
  {
    auto t = xq::tensor::from_shape({123457});
    first = address(t);
  }
  const auto before = xq::tensor_memory();
  {
    auto same = xq::tensor::from_shape({123457});
    CHECK(address(same) == first);
    auto near = xq::tensor::from_shape({123458});  // same class (rounded to 1/8 of its power of two)
    CHECK(address(near) != first);
    const auto during = xq::tensor_memory();
    CHECK(during.hits == before.hits + 1);
    CHECK(during.bytes_cached + 123457 * sizeof(float) <= before.bytes_cached);
  }
  {
    auto near = xq::tensor::from_shape({123458});
    CHECK(address(near) == first);  // the block freed last comes first
  }
  const auto after = xq::tensor_memory();
  CHECK(after.bytes_in_use == before.bytes_in_use);
}

TEST_CASE("tensor memory: small blocks bypass the cache, every block is 64-byte aligned", "[memory]") {
  const auto before = xq::tensor_memory();
  for (std::size_t n : {1u, 3u, 17u, 1000u, 4095u}) {
    auto t = xq::tensor::from_shape({n});
    CHECK(address(t) % xq::tensor_alignment == 0);
  }
  const auto after = xq::tensor_memory();
  CHECK(after.hits == before.hits);
  CHECK(after.misses == before.misses);
  for (std::size_t n : {4096u, 50000u, 1000003u}) {
    auto t = xq::tensor::from_shape({n});
    CHECK(address(t) % xq::tensor_alignment == 0);
    xq::mask_tensor m(t.shape());
    CHECK(reinterpret_cast<std::uintptr_t>(m.data()) % xq::tensor_alignment == 0);
  }
}

TEST_CASE("tensor memory: the bound evicts the blocks cached longest ago", "[memory]") {
  const limit_guard guard;
  xq::release_cached_tensor_memory();
  CHECK(xq::tensor_memory().bytes_cached == 0);
  const std::size_t a = 300000, b = 400000;  // floats: different size classes
  xq::set_tensor_cache_limit(a * sizeof(float) + b * sizeof(float) / 2);  // room for a, not a and b
  {
    auto ta = xq::tensor::from_shape({a});
    auto tb = xq::tensor::from_shape({b});
    (void)ta;
    (void)tb;
  }  // tb is freed (and cached) first, then ta: caching ta evicts the older tb
  auto s = xq::tensor_memory();
  CHECK(s.bytes_cached <= s.cache_limit);
  CHECK(s.bytes_cached >= a * sizeof(float));
  const auto hits = s.hits;
  {
    auto ta = xq::tensor::from_shape({a});
    CHECK(xq::tensor_memory().hits == hits + 1);
    auto tb = xq::tensor::from_shape({b});
    CHECK(xq::tensor_memory().hits == hits + 1);  // evicted: a miss
  }
  // A block larger than the bound is never cached.
  xq::set_tensor_cache_limit(1 << 16);
  const auto evictions = xq::tensor_memory().evictions;
  { auto big = xq::tensor::from_shape({100000}); }
  CHECK(xq::tensor_memory().evictions > evictions);
  CHECK(xq::tensor_memory().bytes_cached <= (1u << 16));
  xq::set_tensor_cache_limit(0);  // off: everything given back
  CHECK(xq::tensor_memory().bytes_cached == 0);
}

TEST_CASE("tensor memory: threads allocating and freeing at once keep the books straight", "[memory]") {
  const auto before = xq::tensor_memory();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        auto x = xq::tensor::from_shape({std::size_t(5000 + 1000 * ((i + t) % 7))});
        x.fill(float(i));
        auto y = x;  // a copy: a second block of the same class
        REQUIRE(y(0) == float(i));
      }
    });
  for (auto& th : threads) th.join();
  const auto after = xq::tensor_memory();
  CHECK(after.bytes_in_use == before.bytes_in_use);
  CHECK(after.hits + after.misses - before.hits - before.misses == 4 * 200 * 2);
}

TEST_CASE("tensor memory: after its first run a training step takes every large tensor from the cache",
          "[memory]") {
  xq::conv2d conv = xq::conv2d(8, 3).padding(xq::padding::same);
  xq::batch_norm norm;
  xq::max_pool2d pool(2);
  xq::flatten flat;
  xq::dense head(10);
  const xq::var x(xq::testing::uniform({16, 14, 14, 3}, -1.0f, 1.0f, 7));
  xq::tensor labels = xq::tensor::from_shape({16});
  for (std::size_t i = 0; i < 16; ++i) labels(i) = float(i % 10);
  auto step = [&] {
    const xq::training_mode train(true);
    xq::tape tape;
    auto loss = xq::sparse_softmax_cross_entropy(head(flat(pool(xq::ops::relu(norm(conv(x)))))), labels);
    tape.backward(loss);
  };
  step();
  step();
  const auto before = xq::tensor_memory();
  step();
  step();
  const auto after = xq::tensor_memory();
  CHECK(after.misses == before.misses);
  CHECK(after.hits > before.hits);
  CHECK(after.bytes_in_use == before.bytes_in_use);
}
