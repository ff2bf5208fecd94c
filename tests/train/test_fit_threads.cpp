// The thread count of fit's steps and of predict's and evaluate's batches (issue 34,
// finding 9): by default they are timed (kernels/thread_governor.hpp), one thread first,
// so that two threads are never slower than one on a model too small to gain from them;
// thread_policy::fixed keeps the OpenMP count throughout. Before, fit timed its steps only
// in deterministic mode, and predict and evaluate never: every step saw the OpenMP count.
// With the idle-core limit off (or fit's fixed, which turns it off for the run) predict and
// evaluate keep the OpenMP count too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/kernels/idle_cores.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/dataset.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>

namespace {

/// A dense layer that records the calling thread's OpenMP count at each call.
struct counting_net {
  xq::dense head{3};
  std::vector<int> threads;
  XQ_CHILDREN(head)
  xq::var operator()(const xq::var& x) {
#if defined(_OPENMP)
    threads.push_back(omp_get_max_threads());
#endif
    return head(x);
  }
};

xq::dataset rows(std::size_t n) {
  xq::tensor x = xq::tensor::from_shape({n, 4}), y = xq::tensor::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < 4; ++j) x(i, j) = float((i + j) % 5) * 0.1f;
    y(i) = float(i % 3);
  }
  return xq::dataset{x, y};
}

bool any_of(const std::vector<int>& v, int value) { return std::find(v.begin(), v.end(), value) != v.end(); }

}  // namespace

TEST_CASE("fit, predict and evaluate time their steps by default, one thread first, and fixed keeps the OpenMP count",
          "[train][fit][threads]") {
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  // The default (the unit tests run with XQ_IDLE_CORE_LIMIT=0). The steps record the
  // OpenMP count the governor sets, which the limit does not change.
  const xq::idle_core_limit_scope as_by_default(true);
  const xq::dataset data = rows(64);               // 32 batches of 2
  xq::set_seed(4);
  counting_net model;
  xq::build(model, {1, 4});
  xq::adam opt(xq::trainable_parameters(model));
  xq::fit_options o;
  o.batch_size = 2;
  o.verbose = false;
  SECTION("default") {
    model.threads.clear();
    xq::fit(model, opt, xq::sparse_softmax_cross_entropy, data, o);
    CHECK(any_of(model.threads, 1));  // the governor's first probe: one thread
    model.threads.clear();
    xq::predict(model, data.inputs, 2);
    CHECK(any_of(model.threads, 1));
    model.threads.clear();
    xq::evaluate(model, xq::sparse_softmax_cross_entropy, data, 2);
    CHECK(any_of(model.threads, 1));
    model.threads.clear();
    xq::predict(model, data.inputs, 8);  // 8 batches: too few to pay for probes, not timed
    CHECK_FALSE(any_of(model.threads, 1));
  }
  SECTION("thread_policy::fixed, and the idle-core limit off") {
    o.threads = xq::thread_policy::fixed;
    o.validation = &data;  // its 32 batches are not timed either
    model.threads.clear();
    xq::fit(model, opt, xq::sparse_softmax_cross_entropy, data, o);
    CHECK_FALSE(any_of(model.threads, 1));
    CHECK(any_of(model.threads, 2));
    const xq::idle_core_limit_scope off(false);
    model.threads.clear();
    xq::predict(model, data.inputs, 2);
    xq::evaluate(model, xq::sparse_softmax_cross_entropy, data, 2);
    CHECK_FALSE(any_of(model.threads, 1));
  }
  CHECK(omp_get_max_threads() == 2);  // every step scope restored the count
  omp_set_num_threads(saved);
#endif
}
