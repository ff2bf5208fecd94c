#pragma once
/// \file graph_trace.hpp
/// The layer graph of one forward pass, as the user's code called it.
///
/// xquant's graph is whatever the forward code calls (a layer called twice is two
/// nodes), so passes that need to know who feeds whom (batch-norm folding, NVIDIA's
/// residual QDQ case, tfmot's and PyTorch's fusion rules, per-call-site ranges) run the
/// model once with a `graph_trace` active. What it records:
///  - every call of a leaf layer that is not itself inside another leaf's call (a
///    wrapper's inner float layer and its quantizers are part of the wrapper's node):
///    its path, its type ("conv2d"; a wrapper reports the type it wraps), its role
///    (core/layer_traits.hpp) and the states of its inputs and output;
///  - every call of a function that has a layer form (`xq::ops::relu(x)`,
///    `xq::ops::add(a, b)`) made by forward code: a node with `function` set, its type
///    the function's name and no path. A pass can then follow an edge through it, and
///    refuse to place a quantizer on it (a function has nowhere to keep one).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "layer_traits.hpp"
#include "var.hpp"

namespace xq {

/// One call of a layer (or of a function with a layer form) during a traced pass.
struct traced_call {
  std::string path;                 ///< the layer's path ("block/conv"); empty for a function
  std::string type;                 ///< "conv2d" (a wrapper: the type it wraps); a function: "relu"
  layer_role role = layer_role::other;
  bool function = false;            ///< called as `xq::ops::<type>(...)`, not through a layer
  std::vector<const variable_state*> inputs;
  const variable_state* output = nullptr;
  /// A function's arguments other than its inputs, where export needs them (transpose's
  /// permutation, matmul's two transpose flags, slice's axis, begin and end).
  std::vector<std::int64_t> attributes;

  /// For messages: "block/conv (conv2d)" or "xq::ops::relu (a function)".
  std::string describe() const;
};

/// Records the calls of one forward pass while alive (innermost wins).
class graph_trace {
 public:
  graph_trace() : previous_(active()) { active() = this; }
  ~graph_trace() { active() = previous_; }
  graph_trace(const graph_trace&) = delete;
  graph_trace& operator=(const graph_trace&) = delete;

  /// The trace recording now on this thread, or nullptr.
  static graph_trace* current() noexcept { return active(); }

  /// Called by layers and functions. Keeps the states alive until the trace ends, so no
  /// address is reused by a later value and mistaken for an edge.
  void record(traced_call call, const std::vector<var>& inputs, const var& output);

  const std::vector<traced_call>& calls() const noexcept { return calls_; }

  /// The call that produced `value`, or nullptr (a model input, or a value no layer or
  /// traced function made).
  const traced_call* producer(const variable_state* value) const;
  /// Every call that takes `value` as an input (one entry per use).
  std::vector<const traced_call*> consumers(const variable_state* value) const;
  /// How many times each layer path was called in the pass (functions not counted).
  std::unordered_map<std::string, std::size_t> call_counts() const;

 private:
  static graph_trace*& active() noexcept {
    thread_local graph_trace* t = nullptr;
    return t;
  }
  std::vector<traced_call> calls_;
  std::vector<std::shared_ptr<variable_state>> keep_;
  graph_trace* previous_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/graph_trace.ipp"
#endif
