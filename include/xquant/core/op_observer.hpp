#pragma once
/// \file op_observer.hpp
/// A thread-local hook told about every weighted op (matmul, conv2d, depthwise
/// conv2d) as it runs: the caller's path, the op's output shape and its weight's
/// shape. `xq::summarize` installs one for its single forward pass, so it learns
/// the MACs of layers it cannot see from outside (the leaves of a composite, a layer
/// called twice) exactly, without the layers knowing about summaries.
///
/// \code
///   std::vector<xq::op_event> seen;
///   {
///     xq::observe_ops watch([&](const xq::op_event& e) { seen.push_back(e); });
///     model(x);
///   }                                     // uninstalled here
/// \endcode
///
/// With no observer installed an op pays one thread-local load and a branch.

#include <functional>
#include <string>
#include <utility>

#include "var.hpp"

namespace xq {

/// One weighted op's call, as reported to the installed observer.
struct op_event {
  /// The `path` the op was given (the calling layer's path).
  std::string path;
  /// "matmul", "conv2d" or "depthwise_conv2d".
  const char* op = "";
  /// The shape whose pixels the op's MACs are counted over, batch axis included: the
  /// op's output shape, except for a transposed conv, which reports its input's pixels
  /// with its output channels (each input pixel meets the whole kernel once). Not the
  /// layer's output shape there: `xq::summarize` reads that from its graph trace.
  tensor::shape_type output_shape;
  /// The shape of the weight it multiplied by (the possibly quantized kernel).
  tensor::shape_type weight_shape;
};

/// What an observer is: called once per op, on the thread that ran it.
using op_observer = std::function<void(const op_event&)>;

namespace detail {
inline const op_observer*& this_thread_op_observer() noexcept {
  thread_local const op_observer* current = nullptr;
  return current;
}
}  // namespace detail

/// Whether an observer is installed on this thread (ops skip building the event if not).
inline bool ops_observed() noexcept { return detail::this_thread_op_observer() != nullptr; }

/// Tells the installed observer, if any, that op `op` called by `path` produced
/// `output_shape` from a weight of `weight_shape`. Ops call it after computing.
inline void notify_op(const std::string& path, const char* op, const tensor::shape_type& output_shape,
                      const tensor::shape_type& weight_shape) {
  const op_observer* o = detail::this_thread_op_observer();
  if (!o) return;
  (*o)(op_event{path, op, output_shape, weight_shape});
}

/// Installs an observer on this thread for its lifetime (restoring the previous one
/// after, so observers nest: the inner one sees the ops while it lives).
class observe_ops {
 public:
  explicit observe_ops(op_observer f) : f_(std::move(f)), previous_(detail::this_thread_op_observer()) {
    detail::this_thread_op_observer() = &f_;
  }
  ~observe_ops() { detail::this_thread_op_observer() = previous_; }
  observe_ops(const observe_ops&) = delete;
  observe_ops& operator=(const observe_ops&) = delete;

 private:
  op_observer f_;
  const op_observer* previous_;
};

}  // namespace xq
