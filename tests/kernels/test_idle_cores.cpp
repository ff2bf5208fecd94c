// The idle-core limit (include/xquant/kernels/idle_cores.hpp; issue 34, finding 9): with
// every core kept busy by other processes a parallel region gets one thread, by default,
// so that two threads are never slower than one on a busy machine (before, a region took
// the OpenMP count and waited for the thread the OS did not run). The unit tests run with
// XQ_IDLE_CORE_LIMIT=0 (tests/CMakeLists.txt, for the bit comparisons between runs); this
// file turns the limit on where it tests it.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <csignal>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <xquant/kernels/idle_cores.hpp>
#include <xquant/kernels/threads.hpp>

namespace {

#if defined(__linux__) && defined(_OPENMP)
/// `n` child processes that keep a core busy each until destroyed.
class busy_processes {
 public:
  explicit busy_processes(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        volatile unsigned long spin = 0;
        for (;;) spin = spin + 1;  // killed by the parent
      }
      if (pid > 0) children_.push_back(pid);
    }
  }
  ~busy_processes() {
    for (const pid_t pid : children_) kill(pid, SIGKILL);
    for (const pid_t pid : children_) waitpid(pid, nullptr, 0);
  }
  busy_processes(const busy_processes&) = delete;
  busy_processes& operator=(const busy_processes&) = delete;
  std::size_t size() const noexcept { return children_.size(); }

 private:
  std::vector<pid_t> children_;
};

/// Runs `f` with the calling thread's OpenMP count at 2.
template <class F>
void on_two_threads(F&& f) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  f();
  omp_set_num_threads(saved);
}

/// max_threads() after three intervals of the idle-core sampler (200 ms each) have passed
/// with the machine as it is now: the decision is on the present load.
int max_threads_after_three_intervals() {
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    xq::kernels::max_threads();  // measures an interval when one is due
  }
  return xq::kernels::max_threads();
}
#endif

}  // namespace

TEST_CASE("idle-core limit: with every core busy elsewhere a region gets one thread, by default",
          "[kernels][threads][idle_cores]") {
#if defined(__linux__) && defined(_OPENMP)
  // The library's default, whatever the environment of the test run says.
  const xq::idle_core_limit_scope as_by_default(XQ_IDLE_CORE_LIMIT_DEFAULT != 0);
  CHECK(xq::idle_core_limit());
  on_two_threads([] {
    const int cores = int(std::thread::hardware_concurrency());
    const busy_processes busy(cores);
    REQUIRE(busy.size() == std::size_t(cores));
    CHECK(max_threads_after_three_intervals() == 1);
    const xq::kernels::core_load load = xq::kernels::current_core_load();
    CAPTURE(load.cores, load.busy_elsewhere, load.seconds);
    CHECK(load.cores >= 1);
    CHECK(load.seconds > 0.0);
    CHECK(load.busy_elsewhere >= double(load.cores) - 0.75);
    // What the kernels use follows: the count OpenBLAS and oneDNN read, set by the scope.
    const xq::kernels::openmp_threads_scope allowed(xq::kernels::max_threads());
    CHECK(omp_get_max_threads() == 1);
  });
#endif
}

TEST_CASE("idle-core limit: off, a region gets the OpenMP count however busy the machine",
          "[kernels][threads][idle_cores]") {
#if defined(__linux__) && defined(_OPENMP)
  on_two_threads([] {
    const busy_processes busy{static_cast<int>(std::thread::hardware_concurrency())};
    {
      const xq::idle_core_limit_scope off(false);
      CHECK_FALSE(xq::idle_core_limit());
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      CHECK(xq::kernels::max_threads() == 2);
      CHECK(xq::kernels::openmp_threads() == 2);
    }
    // The scope restored the thread's setting; set_idle_core_limit sets the process's.
    const bool process = xq::idle_core_limit();
    xq::set_idle_core_limit(false);
    CHECK(xq::kernels::max_threads() == 2);
    xq::set_idle_core_limit(process);
  });
#endif
}

TEST_CASE("idle-core limit: inside a parallel region a kernel gets one thread", "[kernels][threads][idle_cores]") {
#if defined(_OPENMP)
  const xq::idle_core_limit_scope off(false);
  int inside = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp master
    inside = xq::kernels::max_threads();
  }
  CHECK(inside == 1);
#endif
}
