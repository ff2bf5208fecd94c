#pragma once
/// \file thread_governor.hpp
/// Picks the thread count of a repeated step (a training step) by timing it.
///
/// A parallel region is only as fast as its slowest thread. When another process keeps a
/// core busy, the thread that shares it runs a fraction of the time, and every region
/// (every GEMM, convolution, elementwise pass: about a hundred per training step) waits
/// for the scheduler to give it a slice. xquant's CNN step on this 2-core VM then took
/// several times as long on two threads as on one. Thresholds (threads.hpp) cannot see
/// this: the work is large, the machine is what changed. So the step is timed: the
/// governor runs a few steps at each candidate count (one thread first, then up to the
/// maximum), keeps the fastest on average, and probes again after `reprobe_every` steps
/// (twice as many each time the same count wins, up to `max_reprobe_every`), or at once
/// when the last `window` steps average `slowdown_to_reprobe` times the chosen count's
/// time (the machine got busier). A probe step far slower than the best time known
/// (`abandon_ratio`) ends that count's probe at once: on a busy core a losing count then
/// costs one slow step per probe, not `probe_steps` of them.
///
/// The thread count changes results only where a large GEMM or oneDNN's kernel gradient
/// splits its work by it; in deterministic mode (threads.hpp) it changes none, which is
/// why `fit` adapts by default only there (fit.hpp, `thread_policy`).
///
/// \code
///   xq::kernels::thread_governor governor;
///   for (...) {
///     const auto step = governor.step();  // sets this thread's OpenMP count, times the step
///     ...forward, backward, optimizer step...
///   }
/// \endcode

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <limits>
#include <numeric>
#include <vector>

#include "threads.hpp"

namespace xq::kernels {

struct thread_governor_options {
  int max_threads = 0;              ///< the largest count tried; 0: openmp_threads() when the governor is made
  std::size_t probe_steps = 4;      ///< steps timed at each count (their mean is compared)
  /// Steps at the chosen count before the next probe; doubled (up to `max_reprobe_every`)
  /// each time a probe keeps the same count, back to this when it changes: a probe runs
  /// steps at the losing counts, which on a busy core cost twice a step each.
  std::size_t reprobe_every = 200;
  std::size_t max_reprobe_every = 3200;
  /// The mean of the last `window` steps this much slower than the chosen count's probe:
  /// probe now (the machine got busier).
  double slowdown_to_reprobe = 1.5;
  std::size_t window = 8;
  /// A probe step more than this times the best known mean (of the counts already probed
  /// in this probe, and of the chosen count at the last probe) ends its count's probe:
  /// that step alone is its mean.
  double abandon_ratio = 1.25;
};

class thread_governor {
 public:
  explicit thread_governor(thread_governor_options options = {}) : options_(options) {
    // The maximum halved down to one, tried from one up: one thread first gives the
    // others a baseline to be abandoned against (a busy core slows every count but one).
    // The count asked for, not what the idle cores allow now (max_threads()): the machine's
    // load may change, and each step's regions are limited to the idle cores anyway.
    int top = options_.max_threads > 0 ? options_.max_threads : openmp_threads();
    for (int t = top; t >= 1; t = t == 1 ? 0 : std::max(1, t / 2)) candidates_.push_back(t);
    std::reverse(candidates_.begin(), candidates_.end());
    if (options_.probe_steps == 0) options_.probe_steps = 1;
    chosen_ = candidates_.front();
    reprobe_after_ = options_.reprobe_every;
    start_probe();
  }

  /// The counts tried, in the order probed: one first, the maximum last.
  const std::vector<int>& candidates() const noexcept { return candidates_; }
  /// The count the last probe chose (one before the first probe ends).
  int chosen() const noexcept { return chosen_; }
  /// Whether the governor is timing candidates now.
  bool probing() const noexcept { return probing_; }
  /// How many probes have ended.
  std::size_t probes() const noexcept { return probes_done_; }
  /// The last probe's mean step time at each candidate (seconds; empty before the first).
  const std::vector<double>& probe_means() const noexcept { return last_means_; }

  /// The thread count for the next step.
  int next() const noexcept { return probing_ ? candidates_[probe_index_] : chosen_; }

  /// Records that a step run at `threads` took `seconds`. The first step is warm-up (it
  /// allocates and makes primitives) and is not counted. Means, not medians, are
  /// compared: on a busy machine most steps at two threads run near their quiet time and a
  /// few stall for a scheduler slice, and the stalls are the cost.
  void record(int threads, double seconds) {
    if (!warmed_up_) {
      warmed_up_ = true;
      return;
    }
    if (probing_) {
      if (threads != candidates_[probe_index_]) return;
      probe_sum_ += seconds;
      const bool hopeless = seconds > options_.abandon_ratio * best_known_mean();
      if (++probe_count_ < options_.probe_steps && !hopeless) return;
      means_[probe_index_] = probe_sum_ / double(probe_count_);
      probe_sum_ = 0.0;
      probe_count_ = 0;
      if (++probe_index_ < candidates_.size()) return;
      const auto best = std::size_t(std::min_element(means_.begin(), means_.end()) - means_.begin());
      reprobe_after_ = probes_done_ > 0 && candidates_[best] == chosen_
                           ? std::min(2 * reprobe_after_, std::max(options_.max_reprobe_every, options_.reprobe_every))
                           : options_.reprobe_every;
      chosen_ = candidates_[best];
      chosen_seconds_ = means_[best];
      last_means_ = means_;
      probing_ = false;
      ++probes_done_;
      since_probe_ = 0;
      recent_.clear();
      return;
    }
    ++since_probe_;
    recent_.push_back(seconds);
    if (recent_.size() > options_.window) recent_.erase(recent_.begin());
    const double recent_mean =
        recent_.empty() ? 0.0 : std::accumulate(recent_.begin(), recent_.end(), 0.0) / double(recent_.size());
    const bool slowed = recent_.size() == options_.window && recent_mean > options_.slowdown_to_reprobe * chosen_seconds_;
    if (since_probe_ >= reprobe_after_ || slowed) start_probe();
  }

  /// Sets the calling thread's OpenMP thread count to next() for its lifetime, restores
  /// it after, and records the time between.
  class step_scope {
   public:
    explicit step_scope(thread_governor& g) : governor_(g), threads_(g.next()) {
#if defined(_OPENMP)
      saved_ = omp_get_max_threads();
      omp_set_num_threads(threads_);
#endif
      start_ = std::chrono::steady_clock::now();
    }
    ~step_scope() {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
#if defined(_OPENMP)
      omp_set_num_threads(saved_);
#endif
      governor_.record(threads_, seconds);
    }
    step_scope(const step_scope&) = delete;
    step_scope& operator=(const step_scope&) = delete;
    int threads() const noexcept { return threads_; }

   private:
    thread_governor& governor_;
    int threads_;
    int saved_ = 1;
    std::chrono::steady_clock::time_point start_;
  };

  /// One step: `const auto s = governor.step();` around the step's work.
  step_scope step() { return step_scope(*this); }

 private:
  /// The lowest mean step time known while probing candidate `probe_index_`: the
  /// candidates probed before it in this probe, and the chosen count's at the last probe
  /// (unless it is the one probed now); infinity when none is known.
  double best_known_mean() const noexcept {
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < probe_index_; ++i) best = std::min(best, means_[i]);
    if (probes_done_ > 0 && chosen_ != candidates_[probe_index_]) best = std::min(best, chosen_seconds_);
    return best;
  }

  void start_probe() {
    probing_ = candidates_.size() > 1;
    probe_index_ = 0;
    probe_count_ = 0;
    probe_sum_ = 0.0;
    means_.assign(candidates_.size(), 0.0);
    if (!probing_) chosen_ = candidates_.front();
  }

  thread_governor_options options_;
  std::vector<int> candidates_;
  std::vector<double> means_, last_means_, recent_;
  std::size_t probe_index_ = 0, probe_count_ = 0, probes_done_ = 0, since_probe_ = 0, reprobe_after_ = 0;
  double probe_sum_ = 0.0;
  int chosen_ = 1;
  double chosen_seconds_ = 0.0;
  bool probing_ = false, warmed_up_ = false;
};

}  // namespace xq::kernels
