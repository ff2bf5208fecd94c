#pragma once
/// \file idle_cores.ipp
/// kernels/idle_cores.hpp's code: the process-wide sampler of the cores' CPU time.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

#if defined(__linux__)
#include <sched.h>
#endif

#include "../idle_cores.hpp"

namespace xq::detail {

/// CPU time in clock ticks: busy and total of the cores of the affinity mask, and this
/// process's (user + system). `cores` 0: not measurable here.
struct cpu_times {
  unsigned long long busy = 0, total = 0, own = 0;
  int cores = 0;
};

inline cpu_times read_cpu_times() {
  cpu_times t;
#if defined(__linux__)
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const bool have_mask = sched_getaffinity(0, sizeof mask, &mask) == 0;
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (!f) return {};
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "cpu", 3) != 0) break;  // the cores' lines come first
    if (line[3] < '0' || line[3] > '9') continue;  // "cpu ": the sum over every core
    const int id = std::atoi(line + 3);
    if (have_mask && (id < 0 || id >= CPU_SETSIZE || !CPU_ISSET(id, &mask))) continue;
    // user nice system idle iowait irq softirq steal (guest time is inside user's)
    unsigned long long v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const char* fields = std::strchr(line, ' ');
    if (!fields || std::sscanf(fields, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                               &v[5], &v[6], &v[7]) < 4)
      continue;
    unsigned long long total = 0;
    for (const unsigned long long x : v) total += x;
    t.total += total;
    t.busy += total - v[3] - v[4];
    ++t.cores;
  }
  std::fclose(f);
  // /proc/self/stat: utime and stime are fields 14 and 15, counted after the ')' that ends
  // the command name (which may hold spaces).
  f = std::fopen("/proc/self/stat", "r");
  if (!f) return {};
  char stat[1024];
  const std::size_t n = std::fread(stat, 1, sizeof stat - 1, f);
  std::fclose(f);
  stat[n] = '\0';
  const char* p = std::strrchr(stat, ')');
  unsigned long long user = 0, system = 0;
  if (!p || std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &user, &system) != 2) return {};
  t.own = user + system;
#endif
  return t;
}

/// The process-wide sampler (kernels/idle_cores.hpp).
class idle_core_sampler {
 public:
  static idle_core_sampler& instance() {
    static auto* s = new idle_core_sampler;  // never destroyed: regions may run after main
    return *s;
  }

  int threads(int wanted) {
    if (wanted <= 1) return wanted;
    update_if_due();
    if (unsupported_.load(std::memory_order_relaxed)) return wanted;
    const int allowed = allowed_.load(std::memory_order_relaxed);
    return allowed == 0 ? 1 : std::min(wanted, allowed);  // one thread until measured
  }

  kernels::core_load load() {
    update_if_due();
    const std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }

 private:
  using clock = std::chrono::steady_clock;
  static constexpr long long first_interval_ns = 50'000'000, interval_ns = 200'000'000;

  static long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
  }

  void update_if_due() {
    const long long now = now_ns();
    if (now < next_ns_.load(std::memory_order_relaxed)) return;
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || now < next_ns_.load(std::memory_order_relaxed)) return;  // another thread measures
    const cpu_times t = read_cpu_times();
    if (t.cores == 0) {
      unsupported_.store(true, std::memory_order_relaxed);
      next_ns_.store(std::numeric_limits<long long>::max(), std::memory_order_relaxed);
      return;
    }
    if (!have_previous_ || t.cores != previous_.cores || t.total <= previous_.total) {
      // A first sample (or the affinity mask changed, or no tick has passed yet).
      if (!have_previous_ || t.cores != previous_.cores) {
        previous_ = t;
        previous_ns_ = now;
        have_previous_ = true;
      }
      next_ns_.store(now + first_interval_ns, std::memory_order_relaxed);
      return;
    }
    const double total = double(t.total - previous_.total);
    const double busy = double(t.busy - previous_.busy);
    const double own = t.own >= previous_.own ? double(t.own - previous_.own) : 0.0;
    const double elsewhere = std::clamp(double(t.cores) * (busy - own) / total, 0.0, double(t.cores));
    last_.cores = t.cores;
    last_.busy_elsewhere = elsewhere;
    last_.seconds = double(now - previous_ns_) * 1e-9;
    // The busier of the last two intervals: fewer threads at once when the load comes,
    // more only after two intervals without it (a bursty neighbour does not flip the count
    // every interval).
    const double busier = std::max(elsewhere, previous_elsewhere_);
    previous_elsewhere_ = elsewhere;
    const int idle = int(std::floor(double(t.cores) - busier + 0.25));
    allowed_.store(std::clamp(idle, 1, t.cores), std::memory_order_relaxed);
    previous_ = t;
    previous_ns_ = now;
    next_ns_.store(now + interval_ns, std::memory_order_relaxed);
  }

  std::mutex mutex_;
  std::atomic<long long> next_ns_{0};
  std::atomic<int> allowed_{0};  // 0: not measured yet
  std::atomic<bool> unsupported_{false};
  // Guarded by mutex_:
  cpu_times previous_;
  long long previous_ns_ = 0;
  double previous_elsewhere_ = 0.0;
  bool have_previous_ = false;
  kernels::core_load last_;
};

}  // namespace xq::detail

namespace xq::kernels {

XQ_DECL int idle_core_threads(int wanted) {
  if (wanted <= 1 || !idle_core_limit()) return wanted;
  return xq::detail::idle_core_sampler::instance().threads(wanted);
}

XQ_DECL core_load current_core_load() { return xq::detail::idle_core_sampler::instance().load(); }

}  // namespace xq::kernels
