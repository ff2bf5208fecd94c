#pragma once
/// \file graph_trace.ipp
/// The graph trace's code (core/graph_trace.hpp).

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../graph_trace.hpp"

namespace xq {

XQ_DECL std::string traced_call::describe() const {
  return function ? "xq::ops::" + type + " (a function)" : path + " (" + type + ")";
}

XQ_DECL void graph_trace::record(traced_call call, const std::vector<var>& inputs, const var& output) {
  call.inputs.clear();
  for (const var& v : inputs) {
    call.inputs.push_back(v.state().get());
    keep_.push_back(v.state());
  }
  call.output = output.state().get();
  keep_.push_back(output.state());
  calls_.push_back(std::move(call));
}

XQ_DECL const traced_call* graph_trace::producer(const variable_state* value) const {
  for (const auto& c : calls_)
    if (c.output == value) return &c;
  return nullptr;
}

XQ_DECL std::vector<const traced_call*> graph_trace::consumers(const variable_state* value) const {
  std::vector<const traced_call*> out;
  for (const auto& c : calls_)
    for (const auto* in : c.inputs)
      if (in == value) out.push_back(&c);
  return out;
}

XQ_DECL std::unordered_map<std::string, std::size_t> graph_trace::call_counts() const {
  std::unordered_map<std::string, std::size_t> n;
  for (const auto& c : calls_)
    if (!c.function) ++n[c.path];
  return n;
}

}  // namespace xq
