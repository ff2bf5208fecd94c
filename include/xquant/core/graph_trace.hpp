#pragma once
/// \file graph_trace.hpp
/// The layer graph of one forward pass, as the user's code called it.
///
/// xquant's graph is whatever the forward code calls (a layer called twice is two
/// nodes), so passes that need to know who feeds whom (batch-norm folding, NVIDIA's
/// residual QDQ case, per-call-site ranges) run the quantized model once with a
/// `graph_trace` active. Every quantized wrapper reports its calls: its path, its
/// float layer's type and the states of its inputs and output. Values produced by
/// plain functions (`xq::ops::relu`) are not nodes; an edge through one is unknown,
/// and the passes treat an unknown producer as "not a conv/bn chain".

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "var.hpp"

namespace xq {

/// One call of a quantized layer during a traced pass.
struct traced_call {
  std::string path;                ///< the layer's path ("block/conv")
  std::string type;                ///< its float layer's type ("conv2d")
  std::vector<const variable_state*> inputs;
  const variable_state* output = nullptr;
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

  /// Called by wrappers. Keeps the states alive until the trace ends, so no address is
  /// reused by a later value and mistaken for an edge.
  void record(std::string path, std::string type, const std::vector<var>& inputs, const var& output) {
    traced_call call{std::move(path), std::move(type), {}, output.state().get()};
    for (const var& v : inputs) {
      call.inputs.push_back(v.state().get());
      keep_.push_back(v.state());
    }
    keep_.push_back(output.state());
    calls_.push_back(std::move(call));
  }

  const std::vector<traced_call>& calls() const noexcept { return calls_; }

  /// The call that produced `value`, or nullptr (a model input, or a plain function's result).
  const traced_call* producer(const variable_state* value) const {
    for (const auto& c : calls_)
      if (c.output == value) return &c;
    return nullptr;
  }
  /// Every call that takes `value` as an input (one entry per use).
  std::vector<const traced_call*> consumers(const variable_state* value) const {
    std::vector<const traced_call*> out;
    for (const auto& c : calls_)
      for (const auto* in : c.inputs)
        if (in == value) out.push_back(&c);
    return out;
  }
  /// How many times each path was called in the pass.
  std::unordered_map<std::string, std::size_t> call_counts() const {
    std::unordered_map<std::string, std::size_t> n;
    for (const auto& c : calls_) ++n[c.path];
    return n;
  }

 private:
  static graph_trace*& active() noexcept {
    thread_local graph_trace* t = nullptr;
    return t;
  }
  std::vector<traced_call> calls_;
  std::vector<std::shared_ptr<variable_state>> keep_;
  graph_trace* previous_;
};

namespace detail {
/// Reports one wrapper call to the active trace, if any (a pointer test otherwise).
inline void trace_call(const std::string& path, const std::string& type, const std::vector<var>& inputs,
                       const var& output) {
  if (graph_trace* t = graph_trace::current()) t->record(path, type, inputs, output);
}
}  // namespace detail

}  // namespace xq
