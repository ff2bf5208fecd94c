#pragma once
/// \file layer_call.ipp
/// The code around leaf calls: reachability check, trace nodes (core/layer_call.hpp).

#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../layer_call.hpp"

namespace xq::detail {

XQ_DECL void reachable_layers::add_composite(const void* address, std::size_t size, std::string path,
                                             std::string type) {
  objects_.insert(address);
  composites_.push_back({static_cast<const char*>(address), size, std::move(path), std::move(type)});
}

XQ_DECL std::string reachable_layers::owner_of(const void* address) const {
  const char* p = static_cast<const char*>(address);
  const composite* best = nullptr;
  for (const auto& c : composites_)
    if (p >= c.begin && p < c.begin + c.size && (!best || c.size <= best->size)) best = &c;
  if (!best) return "";
  return (best->path.empty() ? std::string("the model") : "\"" + best->path + "\"") + " (" + best->type + ")";
}

XQ_DECL void throw_unreachable_layer(const reachable_layers& check, const void* object, const std::string& name,
                                     std::string (*type)()) {
  const std::string owner = check.owner_of(object);
  throw argument_error(
      "layer \"" + name + "\" (" + type() + ")",
      "a layer the model reaches through its children: list it in XQ_CHILDREN(...) of the composite that holds "
      "it" + (owner.empty() ? std::string() : ", " + owner) +
          " (a layer outside the children is never trained, saved or quantized)",
      "a call from the model's forward code to a layer that is not one of its children");
}

XQ_DECL void trace_layer_call(const std::string& path, std::string type, layer_role role,
                              const std::vector<var>& inputs, const var& output) {
  if (graph_trace* t = graph_trace::current())
    t->record(traced_call{path, std::move(type), role, false, {}, nullptr, {}}, inputs, output);
}

XQ_DECL void trace_function_call(const char* name, layer_role role, const std::vector<var>& inputs,
                                 const var& output, std::vector<std::int64_t> attributes) {
  if (graph_trace* t = graph_trace::current())
    t->record(traced_call{"", name, role, true, {}, nullptr, std::move(attributes)}, inputs, output);
}

XQ_DECL var run_unary_leaf_call(const void* object, const std::string& path, std::string (*type)(), layer_role role,
                                var (*call)(const void* self, const var& x), const var& x) {
  const leaf_call_scope scope(object, path, type);
  if (!scope.outermost() || graph_trace::current() == nullptr) return call(object, x);
  var y = call(object, x);
  trace_layer_call(path, type(), role, {x}, y);
  return y;
}

}  // namespace xq::detail
