#pragma once
/// \file tape.hpp
/// Define-by-run autodiff. While a `tape` is alive on a thread, every operation
/// on `xq::var`s that needs a gradient records a backward step on it; `backward`
/// runs them in reverse order. A composite layer therefore only writes its
/// forward code; a layer called twice records two steps whose parameter
/// gradients add up.
///
/// \code
///   xq::tape tape;                       // recording starts
///   xq::var logits = model(x);
///   xq::var loss = xq::sparse_softmax_cross_entropy(logits, labels);
///   tape.backward(loss);                 // parameter grads are filled in
/// \endcode

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "var.hpp"

namespace xq {

class tape;

namespace detail {
struct tape_registry {
  tape* active = nullptr;
  int no_grad_depth = 0;
};
inline tape_registry& this_thread_tapes() {
  thread_local tape_registry r;
  return r;
}
/// Numbers the tapes of the process from 1, so a value knows which one recorded it.
inline std::uint64_t next_tape_serial() noexcept {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace detail

/// Told as a backward pass runs its steps (RAII: `backward_listener_scope`, on the thread
/// that runs `tape::backward`): data-parallel training sends each bucket of finished
/// gradients to the other ranks while the rest of the backward pass runs
/// (include/xquant/distributed/data_parallel.hpp). Steps run from the last recorded to the
/// first; step k is the k-th to run, counted from 0.
class backward_listener {
 public:
  virtual ~backward_listener() = default;
  /// Before the first step: `steps` will run.
  virtual void backward_begins(std::size_t steps) = 0;
  /// After the `k`-th step to run (0-based): every gradient that step added is in place.
  virtual void step_ran(std::size_t k) = 0;

  /// The one active on this thread, or null.
  static backward_listener* active() noexcept { return slot(); }

 private:
  friend class backward_listener_scope;
  static backward_listener*& slot() noexcept {
    thread_local backward_listener* l = nullptr;
    return l;
  }
};

/// Makes `l` the active backward_listener on this thread while alive (restores the previous one).
class backward_listener_scope {
 public:
  explicit backward_listener_scope(backward_listener& l) noexcept : previous_(backward_listener::slot()) {
    backward_listener::slot() = &l;
  }
  ~backward_listener_scope() { backward_listener::slot() = previous_; }
  backward_listener_scope(const backward_listener_scope&) = delete;
  backward_listener_scope& operator=(const backward_listener_scope&) = delete;

 private:
  backward_listener* previous_;
};

/// Records backward steps while alive (the innermost tape on this thread wins).
class tape {
 public:
  tape() : previous_(detail::this_thread_tapes().active), serial_(detail::next_tape_serial()) {
    detail::this_thread_tapes().active = this;
  }
  ~tape() { detail::this_thread_tapes().active = previous_; }
  tape(const tape&) = delete;
  tape& operator=(const tape&) = delete;

  /// Adds a backward step (called by operations, not by users).
  void record(std::function<void()> step) { steps_.push_back(std::move(step)); }

  /// Seeds d`output`/d`output` = 1 (for a scalar loss: the usual backward) and runs
  /// every recorded step in reverse; then forgets them. A tape runs backward once: a
  /// second call, an empty `output`, one that needs no gradient (computed from data
  /// only, or under `no_grad`) and one recorded on another tape (one that has ended,
  /// say) throw `argument_error` before anything runs.
  void backward(const var& output);
  /// Same, with an explicit output gradient of the output's shape.
  void backward(const var& output, tensor output_grad);

  std::size_t size() const noexcept { return steps_.size(); }
  void clear() noexcept { steps_.clear(); }
  /// This tape's number (what `variable_state::recorded_on` holds for values it recorded).
  std::uint64_t serial() const noexcept { return serial_; }

 private:
  XQ_DECL void check_backward_output(const var& output) const;

  std::vector<std::function<void()>> steps_;
  tape* previous_;
  std::uint64_t serial_;
  bool backward_ran_ = false;
};

/// Within its scope nothing is recorded (inference, calibration, weight updates).
class no_grad {
 public:
  no_grad() { ++detail::this_thread_tapes().no_grad_depth; }
  ~no_grad() { --detail::this_thread_tapes().no_grad_depth; }
  no_grad(const no_grad&) = delete;
  no_grad& operator=(const no_grad&) = delete;
};

/// The tape operations record on now, or nullptr (no tape, or inside `no_grad`).
inline tape* recording_tape() noexcept {
  auto& r = detail::this_thread_tapes();
  return r.no_grad_depth > 0 ? nullptr : r.active;
}

/// True when an operation on these inputs must record a backward step.
template <class... Vars>
bool needs_grad(const Vars&... inputs) noexcept {
  return recording_tape() != nullptr && (inputs.requires_grad() || ...);
}
inline bool needs_grad(const std::vector<var>& inputs) noexcept {
  if (recording_tape() == nullptr) return false;
  for (const auto& v : inputs)
    if (v.requires_grad()) return true;
  return false;
}

/// The building block of every differentiable operation: wraps `value` as the
/// operation's output and, when `record` is true, records `backward`, which is
/// called with the output's gradient (a `const tensor&`) only if some gradient
/// reached the output. `backward` adds into its inputs' states itself.
template <class Backward>
var make_result(tensor value, bool record, Backward&& backward) {
  var out(std::move(value), record);
  if (record) {
    out.state()->recorded_on = recording_tape()->serial();
    // The step owns the output's state: steps downstream of it run (and are
    // released) first, and the gradient they left must still be there.
    recording_tape()->record([out_state = out.state(), bw = std::forward<Backward>(backward)]() mutable {
      if (out_state->has_grad()) bw(static_cast<const tensor&>(out_state->grad));
    });
  }
  return out;
}

/// Adds `g` into `v`'s gradient if `v` wants one.
inline void add_grad(const var& v, tensor&& g) {
  if (v.requires_grad()) v.state()->accumulate_grad(std::move(g));
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tape.ipp"
#endif
