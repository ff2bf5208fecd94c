// The thread governor (kernels/thread_governor.hpp), fed step times by hand: it probes
// every candidate count, keeps the fastest, probes again on schedule and when steps slow
// down, and its step scope sets and restores the calling thread's OpenMP count. fit's
// adaptive policy trains to the same bits as the fixed one in deterministic mode.
#include <catch2/catch.hpp>

#include <vector>

#include <xquant/kernels/thread_governor.hpp>
#include <xquant/kernels/threads.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using xq::kernels::thread_governor;
using xq::kernels::thread_governor_options;

/// Feeds `steps` steps to the governor, each taking seconds_at(count).
template <class Time>
void run_steps(thread_governor& g, std::size_t steps, Time seconds_at) {
  for (std::size_t i = 0; i < steps; ++i) {
    const int t = g.next();
    g.record(t, seconds_at(t));
  }
}

}  // namespace

TEST_CASE("thread governor: candidates from one up to the maximum, halving it", "[kernels][threads][governor]") {
  CHECK(thread_governor(thread_governor_options{8}).candidates() == std::vector<int>{1, 2, 4, 8});
  CHECK(thread_governor(thread_governor_options{6}).candidates() == std::vector<int>{1, 3, 6});
  CHECK(thread_governor(thread_governor_options{2}).candidates() == std::vector<int>{1, 2});
  const thread_governor one(thread_governor_options{1});
  CHECK(one.candidates() == std::vector<int>{1});
  CHECK_FALSE(one.probing());
  CHECK(one.next() == 1);
}

TEST_CASE("thread governor: keeps the fastest count and probes again", "[kernels][threads][governor]") {
  thread_governor_options o;
  o.max_threads = 2;
  o.probe_steps = 3;
  o.reprobe_every = 10;
  thread_governor g(o);
  CHECK(g.chosen() == 1);  // before the first probe ends: one thread
  // Warm-up (not counted), then 3 steps at 1 thread and 3 at 2: two threads faster on average.
  run_steps(g, 1 + 6, [](int t) { return t == 2 ? 0.010 : 0.018; });
  CHECK_FALSE(g.probing());
  CHECK(g.probes() == 1);
  CHECK(g.chosen() == 2);
  // A busy core: two threads now stall; after 10 steps the scheduled probe finds one faster.
  run_steps(g, 10, [](int t) { return t == 2 ? 0.0149 : 0.018; });  // not 1.5x slower: no early probe
  CHECK(g.probing());
  // One thread's first step is 1.9x the chosen count's last mean: its probe ends there;
  // two threads' first step is 3.2x one thread's: its probe too. Two steps in all.
  run_steps(g, 2, [](int t) { return t == 2 ? 0.060 : 0.019; });
  CHECK(g.probes() == 2);
  CHECK(g.chosen() == 1);
  CHECK(g.next() == 1);
  REQUIRE(g.probe_means().size() == 2);
  CHECK(g.probe_means()[0] == Approx(0.019));
  CHECK(g.probe_means()[1] == Approx(0.060));
  // The count changed: the next probe after 10 steps again, 3 steps at the chosen count
  // and one at two threads. It keeps one thread, so the one after waits twice as long.
  run_steps(g, 10 + 4, [](int t) { return t == 2 ? 0.060 : 0.019; });
  CHECK(g.probes() == 3);
  CHECK(g.chosen() == 1);
  run_steps(g, 19, [](int t) { return t == 2 ? 0.060 : 0.019; });
  CHECK_FALSE(g.probing());
  run_steps(g, 1, [](int t) { return t == 2 ? 0.060 : 0.019; });
  CHECK(g.probing());
}

TEST_CASE("thread governor: a slower run of steps starts a probe at once", "[kernels][threads][governor]") {
  thread_governor_options o;
  o.max_threads = 2;
  o.probe_steps = 1;
  o.reprobe_every = 1000;
  o.window = 8;
  thread_governor g(o);
  run_steps(g, 1 + 2, [](int t) { return t == 2 ? 0.010 : 0.018; });
  REQUIRE(g.chosen() == 2);
  REQUIRE_FALSE(g.probing());
  // One stalled step among normal ones: noise, the window's mean stays under 1.5x.
  for (int i = 0; i < 7; ++i) g.record(2, 0.010);
  g.record(2, 0.040);
  CHECK_FALSE(g.probing());
  // Steps keep stalling: the machine changed.
  for (int i = 0; i < 3; ++i) g.record(2, 0.040);
  CHECK(g.probing());
  run_steps(g, 2, [](int t) { return t == 2 ? 0.040 : 0.019; });
  CHECK(g.chosen() == 1);
  REQUIRE(g.probe_means().size() == 2);
  CHECK(g.probe_means()[0] == Approx(0.019));
  CHECK(g.probe_means()[1] == Approx(0.040));
  // A time recorded for another count than the one probed is ignored.
  thread_governor h(o);
  h.record(1, 1.0);  // warm-up
  h.record(2, 0.001);
  CHECK(h.probing());
  CHECK(h.next() == 1);
}

TEST_CASE("thread governor: a step scope sets the count for the step and restores it", "[kernels][threads][governor]") {
#if defined(_OPENMP)
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  thread_governor_options o;
  o.probe_steps = 1;
  thread_governor g(o);
  REQUIRE(g.candidates() == std::vector<int>{1, 2});
  {
    const auto warm_up = g.step();
    CHECK(omp_get_max_threads() == 1);
  }
  { const auto at_one = g.step(); }
  {
    const auto at_two = g.step();
    CHECK(at_two.threads() == 2);
    CHECK(omp_get_max_threads() == 2);
  }
  CHECK(omp_get_max_threads() == 2);
  CHECK_FALSE(g.probing());
  omp_set_num_threads(saved);
#else
  thread_governor g;
  CHECK(g.candidates() == std::vector<int>{1});
#endif
}
