#pragma once
/// \file layer_call.hpp
/// What happens around every call of a leaf layer (`xq::layer<Self>::operator()`) and of
/// a quantizer, and around the functions that have a layer form (`xq::ops::relu`):
///
///  - the graph trace (graph_trace.hpp), when one is active, gets a node for the call —
///    only for the outermost call: a wrapper's float layer and its quantizers run inside
///    the wrapper's call and belong to its node;
///  - a reachability check, when one is active (`build`, `fit`'s first step,
///    `quantize_model`, `summarize` run one), refuses a leaf that the model calls but
///    cannot reach through its children: a member left out of XQ_CHILDREN would never be
///    trained, saved or quantized, and the quantized twin would hold a fresh layer in its
///    place. The error names the stray layer and the composite that holds it.
///
/// With neither active a call costs two thread-local reads.

#include <cstddef>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "error.hpp"
#include "graph_trace.hpp"
#include "var.hpp"

namespace xq::detail {

/// The composites and leaves a model reaches through its children (model.hpp fills it).
class reachable_layers {
 public:
  /// A reachable object (leaf or composite) at `address`.
  void add(const void* address) { objects_.insert(address); }
  /// A reachable composite of `size` bytes at `address`, with its path and type (to name
  /// the owner of a stray member).
  void add_composite(const void* address, std::size_t size, std::string path, std::string type);
  bool contains(const void* address) const { return objects_.count(address) != 0; }

  /// "block_1 (conv_block)": the innermost reachable composite whose storage holds
  /// `address` (the stray member's owner), or "" when none does.
  std::string owner_of(const void* address) const;

 private:
  struct composite {
    const char* begin;
    std::size_t size;
    std::string path, type;
  };
  std::unordered_set<const void*> objects_;
  std::vector<composite> composites_;
};

struct leaf_call_state {
  int depth = 0;                             ///< leaf calls in progress on this thread
  const reachable_layers* check = nullptr;   ///< the active reachability check, if any
};
inline leaf_call_state& this_thread_leaf_calls() noexcept {
  thread_local leaf_call_state s;
  return s;
}

/// Adds the vars among a call's arguments (a var, or a vector of them) to `out`.
inline void collect_vars(std::vector<var>& out, const var& v) { out.push_back(v); }
inline void collect_vars(std::vector<var>& out, const std::vector<var>& vs) { out.insert(out.end(), vs.begin(), vs.end()); }
template <class T>
void collect_vars(std::vector<var>&, const T&) {}

/// Throws the error of a leaf call the active reachability check `check` refuses: the
/// layer at `object`, called `name`, of type `type()` (see leaf_call_scope).
[[noreturn]] XQ_DECL void throw_unreachable_layer(const reachable_layers& check, const void* object,
                                                  const std::string& name, std::string (*type)());

/// One leaf call in progress (RAII): checks reachability on the outermost call, counts
/// the depth, and reports the call to an active trace.
class leaf_call_scope {
 public:
  /// `object`: the layer's address as the model walk sees it (the most-derived object);
  /// `name` and `type()` (called only for the message): what the error calls it.
  leaf_call_scope(const void* object, const std::string& name, std::string (*type)()) : state_(this_thread_leaf_calls()) {
    if (state_.depth == 0 && state_.check && !state_.check->contains(object))
      throw_unreachable_layer(*state_.check, object, name, type);
    ++state_.depth;
  }
  ~leaf_call_scope() { --state_.depth; }
  leaf_call_scope(const leaf_call_scope&) = delete;
  leaf_call_scope& operator=(const leaf_call_scope&) = delete;

  /// Whether this is the outermost leaf call (the one a trace records).
  bool outermost() const noexcept { return state_.depth == 1; }

 private:
  leaf_call_state& state_;
};

/// Reports a layer call to the active trace, if any (the caller checked `outermost`).
XQ_DECL void trace_layer_call(const std::string& path, std::string type, layer_role role,
                              const std::vector<var>& inputs, const var& output);

/// A leaf call of one var, its bookkeeping compiled once (core/layer.hpp's run_leaf_call
/// for any arguments): `call(self, x)` computes the output. Most layer calls take this
/// path, so a program's layer types each add one small thunk, not a copy of the bookkeeping.
XQ_DECL var run_unary_leaf_call(const void* object, const std::string& path, std::string (*type)(), layer_role role,
                                var (*call)(const void* self, const var& x), const var& x);

/// Whether a function with a layer form should report its call: a trace is active and
/// the call comes from forward code, not from inside a layer.
inline bool function_call_traced() noexcept {
  return graph_trace::current() != nullptr && this_thread_leaf_calls().depth == 0;
}

/// Reports a call of function `xq::ops::<name>` (see `function_call_traced`), with its
/// arguments other than its inputs (traced_call::attributes).
XQ_DECL void trace_function_call(const char* name, layer_role role, const std::vector<var>& inputs,
                                 const var& output, std::vector<std::int64_t> attributes = {});

/// `y`, the result of `xq::ops::<name>(x)`, reported to an active trace when the call
/// came from forward code (a function with a layer form: activations, merges).
inline var traced_function(const char* name, layer_role role, const var& x, var y) {
  if (function_call_traced()) trace_function_call(name, role, {x}, y);
  return y;
}
inline var traced_function(const char* name, layer_role role, const std::vector<var>& inputs, var y) {
  if (function_call_traced()) trace_function_call(name, role, inputs, y);
  return y;
}
/// The same, with the call's arguments other than its inputs (transpose's permutation).
inline var traced_function(const char* name, layer_role role, const std::vector<var>& inputs, var y,
                           std::vector<std::int64_t> attributes) {
  if (function_call_traced()) trace_function_call(name, role, inputs, y, std::move(attributes));
  return y;
}

/// The body of a function with a layer form that is built from others (ops::attend from
/// matmul and transpose, ops::split from slices): while it runs, the functions it calls
/// are part of its own node, not nodes of their own (RAII, as a leaf call's depth).
class function_body_scope {
 public:
  function_body_scope() noexcept : state_(this_thread_leaf_calls()) { ++state_.depth; }
  ~function_body_scope() { --state_.depth; }
  function_body_scope(const function_body_scope&) = delete;
  function_body_scope& operator=(const function_body_scope&) = delete;

 private:
  leaf_call_state& state_;
};

/// Runs `body` with `check` active on this thread (restores the previous one after).
template <class Body>
decltype(auto) with_reachability_check(const reachable_layers& check, Body&& body) {
  struct restore {
    leaf_call_state& s;
    const reachable_layers* previous;
    ~restore() { s.check = previous; }
  } r{this_thread_leaf_calls(), this_thread_leaf_calls().check};
  r.s.check = &check;
  return body();
}

}  // namespace xq::detail

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/layer_call.ipp"
#endif
