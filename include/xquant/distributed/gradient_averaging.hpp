#pragma once
/// \file gradient_averaging.hpp
/// Averaging the gradients of data-parallel training over the ranks, so that N ranks of
/// batch B take the step one process of batch N·B takes (the loss being a mean over the
/// batch). Horovod's design: gradients are packed into fused buckets of at most
/// `bucket_bytes` (one allreduce per bucket instead of one per tensor) and
///  - `average_gradients` reduces them after the backward pass, blocking;
///  - `overlapped_gradient_averaging` sends each bucket off while the backward pass is
///    still running, as soon as the last step that adds to its gradients has run, so the
///    network works while the cores compute the earlier layers' gradients.
///
/// How the overlap knows a gradient is final: a tape's steps hold their inputs opaquely,
/// so the first backward pass is watched (core/tape.hpp's backward_listener, and each
/// parameter's grad_updates count) to learn after which step each parameter receives its
/// last contribution; later passes launch each bucket there. Buckets hold parameters in
/// reverse order (the last layers' gradients finish first) and launch in bucket order on
/// every rank, which MPI's collective matching needs. Should a gradient change after its
/// bucket left (the forward code took another path), every rank learns it from one small
/// allreduce, the whole reduction is redone after the pass, and the schedule is learned
/// again: the result never depends on the schedule being right.
///
/// A parameter with no gradient on any rank keeps none; one that some rank lacks counts
/// zeros there (each bucket carries a presence count per parameter).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "communicator.hpp"

namespace xq::dist {

/// Horovod's default fusion buffer: 64 MiB.
inline constexpr std::size_t default_bucket_bytes = std::size_t(64) << 20;

namespace detail {

/// The parameters of one fused allreduce, its buffer ([gradients..., presence per member])
/// and its state in the current backward pass.
struct gradient_bucket {
  std::vector<std::size_t> members;  // indices into the parameter list
  std::size_t floats = 0;            // gradient values, presence counts excluded
  std::vector<float> buffer;
  pending_allreduce pending;
  std::vector<std::uint64_t> updates_at_launch;  // each member's grad_updates() when packed
  long long ready_after = -1;                    // the step after which it may leave (-1: before any)
};

/// Packs bucket `b`'s gradients (zeros for a member without one) and presence counts.
inline void pack(gradient_bucket& b, const std::vector<parameter_ptr>& params) {
  b.buffer.resize(b.floats + b.members.size());
  b.updates_at_launch.resize(b.members.size());
  std::size_t at = 0;
  for (std::size_t k = 0; k < b.members.size(); ++k) {
    const variable_state& p = *params[b.members[k]];
    if (p.has_grad()) std::copy(p.grad.begin(), p.grad.end(), b.buffer.begin() + std::ptrdiff_t(at));
    else std::fill_n(b.buffer.begin() + std::ptrdiff_t(at), p.value.size(), 0.0f);
    at += p.value.size();
    b.buffer[b.floats + k] = p.has_grad() ? 1.0f : 0.0f;
    b.updates_at_launch[k] = p.grad_updates();
  }
}

/// Sets the members' gradients to bucket `b`'s reduced sums divided by `ranks`.
inline void unpack(const gradient_bucket& b, const std::vector<parameter_ptr>& params, int ranks) {
  const float inverse = 1.0f / float(ranks);
  std::size_t at = 0;
  for (std::size_t k = 0; k < b.members.size(); ++k) {
    variable_state& p = *params[b.members[k]];
    const std::size_t n = p.value.size();
    if (b.buffer[b.floats + k] > 0.0f) {
      if (!p.has_grad()) p.accumulate_grad(tensor::from_shape(p.value.shape()));
      float* g = p.grad.data();
      for (std::size_t i = 0; i < n; ++i) g[i] = b.buffer[at + i] * inverse;
    }
    at += n;
  }
}

/// Buckets of at most `bucket_bytes` of gradients over `params` taken last to first.
inline std::vector<gradient_bucket> make_buckets(const std::vector<parameter_ptr>& params, std::size_t bucket_bytes) {
  const std::size_t limit = std::max<std::size_t>(bucket_bytes / sizeof(float), 1);
  std::vector<gradient_bucket> buckets;
  for (std::size_t i = params.size(); i-- > 0;) {
    if (!params[i]) continue;
    const std::size_t n = params[i]->value.size();
    if (buckets.empty() || (buckets.back().floats > 0 && buckets.back().floats + n > limit)) buckets.emplace_back();
    buckets.back().members.push_back(i);
    buckets.back().floats += n;
  }
  return buckets;
}

}  // namespace detail

/// Averages every parameter's gradient over the ranks after the backward pass (see the
/// file comment). The ranks must pass the same parameters in the same order.
inline void average_gradients(const std::vector<parameter_ptr>& params, const communicator& c,
                              std::size_t bucket_bytes = default_bucket_bytes) {
  if (c.size() == 1) return;
  std::vector<detail::gradient_bucket> buckets = detail::make_buckets(params, bucket_bytes);
  for (detail::gradient_bucket& b : buckets) {
    detail::pack(b, params);
    c.allreduce(b.buffer.data(), b.buffer.size(), reduction::sum);
    detail::unpack(b, params, c.size());
  }
}

/// Averages `params`' gradients over the ranks, each bucket sent while the backward pass
/// runs (see the file comment). Per training step: `begin()` before the backward pass (it
/// listens to it on this thread), `finish()` after it; then every gradient is the average.
class overlapped_gradient_averaging final : private backward_listener {
 public:
  overlapped_gradient_averaging(const communicator& c, std::vector<parameter_ptr> params,
                                std::size_t bucket_bytes = default_bucket_bytes)
      : c_(c), params_(std::move(params)), buckets_(detail::make_buckets(params_, bucket_bytes)) {}
  overlapped_gradient_averaging(const overlapped_gradient_averaging&) = delete;
  overlapped_gradient_averaging& operator=(const overlapped_gradient_averaging&) = delete;

  /// What the passes so far did.
  struct statistics {
    std::size_t passes = 0;           ///< backward passes finished
    std::size_t buckets_sent = 0;     ///< buckets reduced, in all
    std::size_t sent_during = 0;      ///< of them, sent before the backward pass ended
    std::size_t schedules_learned = 0;
    std::size_t redone = 0;           ///< passes whose reduction was redone (a stale bucket)
  };
  const statistics& stats() const noexcept { return stats_; }
  std::size_t bucket_count() const noexcept { return buckets_.size(); }

  /// From now until finish(), the backward pass on this thread sends buckets as they are ready.
  void begin() {
    next_ = 0;
    backward_listener& self = *this;  // a private base: the scope cannot convert it itself
    if (c_.size() > 1) scope_.emplace(self);
  }

  /// Stops listening without finishing (a step abandoned by an exception).
  void abandon() noexcept { scope_.reset(); }

  /// After the backward pass: the remaining buckets sent, every result in, every gradient
  /// the ranks' average.
  void finish() {
    scope_.reset();
    if (c_.size() == 1) return;
    ++stats_.passes;
    const bool learning = !scheduled_;
    for (; next_ < buckets_.size(); ++next_) launch(buckets_[next_]);
    // A gradient that changed after its bucket left makes the pass redo its reduction.
    float stale = 0.0f;
    for (const detail::gradient_bucket& b : buckets_)
      for (std::size_t k = 0; k < b.members.size(); ++k)
        if (params_[b.members[k]]->grad_updates() != b.updates_at_launch[k]) stale = 1.0f;
    c_.allreduce(&stale, 1, reduction::max);
    for (detail::gradient_bucket& b : buckets_) b.pending.wait();
    if (stale > 0.0f) {
      ++stats_.redone;
      for (detail::gradient_bucket& b : buckets_) {
        detail::pack(b, params_);
        c_.allreduce(b.buffer.data(), b.buffer.size(), reduction::sum);
      }
      scheduled_ = false;  // learn the schedule again on the next pass
    } else if (learning) {
      for (detail::gradient_bucket& b : buckets_) {
        b.ready_after = -1;
        for (std::size_t i : b.members) b.ready_after = std::max(b.ready_after, last_touch_[i]);
      }
      scheduled_ = true;
      ++stats_.schedules_learned;
    }
    for (const detail::gradient_bucket& b : buckets_) detail::unpack(b, params_, c_.size());
    stats_.buckets_sent += buckets_.size();
  }

 private:
  void backward_begins(std::size_t) override {
    if (!scheduled_) {  // learning: watch every parameter's contributions
      seen_.resize(params_.size());
      last_touch_.assign(params_.size(), -1);
      for (std::size_t i = 0; i < params_.size(); ++i) seen_[i] = params_[i] ? params_[i]->grad_updates() : 0;
      return;
    }
    launch_ready(-1);
  }

  void step_ran(std::size_t k) override {
    if (!scheduled_) {
      for (std::size_t i = 0; i < params_.size(); ++i)
        if (params_[i] && params_[i]->grad_updates() != seen_[i]) {
          seen_[i] = params_[i]->grad_updates();
          last_touch_[i] = static_cast<long long>(k);
        }
      return;
    }
    launch_ready(static_cast<long long>(k));
    // MPI moves a collective along only inside MPI calls: look in on those in flight.
    for (std::size_t b = 0; b < next_; ++b) buckets_[b].pending.test();
  }

  void launch_ready(long long step) {
    while (next_ < buckets_.size() && buckets_[next_].ready_after <= step) {
      launch(buckets_[next_++]);
      ++stats_.sent_during;  // only called while the backward pass runs
    }
  }

  void launch(detail::gradient_bucket& b) {
    detail::pack(b, params_);
    b.pending = c_.start_allreduce(b.buffer.data(), b.buffer.size(), reduction::sum);
  }

  const communicator& c_;
  std::vector<parameter_ptr> params_;
  std::vector<detail::gradient_bucket> buckets_;
  std::optional<backward_listener_scope> scope_;
  bool scheduled_ = false;
  std::size_t next_ = 0;
  std::vector<std::uint64_t> seen_;
  std::vector<long long> last_touch_;
  statistics stats_;
};

}  // namespace xq::dist
