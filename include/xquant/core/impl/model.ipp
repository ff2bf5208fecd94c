#pragma once
/// \file model.ipp
/// The model walks of core/model.hpp over layer_ref: compiled by every translation unit in
/// header-only mode, once in <xquant/src.hpp> in separate mode.

#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "../model.hpp"

namespace xq {
namespace detail {

XQ_DECL void set_paths(layer_ref model, const std::string& prefix) {
  const layer_ops& o = *model.ops;
  // A composite keeps its own name as the prefix of its children unless it holds
  // parameters itself (then it is named like a leaf).
  if (o.set_path && (!prefix.empty() || !o.children || o.has_parameters))
    o.set_path(model.object, prefix.empty() && o.name ? o.name(model.object) : prefix);
  if (!o.children) return;
  const std::string base = prefix.empty() && o.has_parameters && o.path ? o.path(model.object) : prefix;
  for_each_child_ref(model, [&](layer_ref child, const std::string& name) { set_paths(child, join_path(base, name)); });
}

XQ_DECL bool paths_are_set(layer_ref model, const std::string& prefix) {
  const layer_ops& o = *model.ops;
  // The path set_paths gives this layer (its rule, above), when it gives one.
  std::string own = prefix;
  if (o.set_path && (!prefix.empty() || !o.children || o.has_parameters)) {
    if (prefix.empty() && o.name) own = o.name(model.object);
    if (o.path && o.path(model.object) != own) return false;
  }
  if (!o.children) return true;
  const std::string base = prefix.empty() && o.has_parameters && o.path ? o.path(model.object) : prefix;
  bool named = true;
  for_each_child_ref(model, [&](layer_ref child, const std::string& name) {
    if (named) named = paths_are_set(child, join_path(base, name));
  });
  return named;
}

XQ_DECL void set_stale_paths(layer_ref model, const std::string& prefix) {
  // One mutex for every model: renaming is rare (a model's first inference call, or after
  // it was renamed), and checking a model's paths takes microseconds.
  static std::mutex m;
  const std::lock_guard<std::mutex> lock(m);
  if (!paths_are_set(model, prefix)) set_paths(model, prefix);
}

XQ_DECL std::vector<parameter_ptr> parameters(layer_ref model) {
  std::vector<parameter_ptr> out;
  std::unordered_set<const parameter*> seen;
  for_each_layer_ref(model, [&](layer_ref l) {
    if (!l.ops->parameters) return;
    for (const auto& p : l.ops->parameters(l.object))
      if (p && seen.insert(p.get()).second) out.push_back(p);
  });
  return out;
}

/// `reachable_from`'s recursion: `l` at `path`.
XQ_DECL void add_reachable(layer_ref l, const std::string& path, reachable_layers& r) {
  const layer_ops& o = *l.ops;
  if (o.quantizer) r.add(o.quantizer(l.object));
  if (o.float_layer) r.add(o.float_layer(l.object));
  if (o.children) {
    r.add_composite(l.object, o.size, path, o.type());
    for_each_child_ref(l, [&](layer_ref child, const std::string& name) { add_reachable(child, join_path(path, name), r); });
  } else {
    r.add(l.object);
  }
}

XQ_DECL reachable_layers reachable_from(layer_ref model) {
  reachable_layers r;
  add_reachable(model, "", r);
  return r;
}

XQ_DECL std::vector<std::string> layer_paths(layer_ref model) {
  std::vector<std::string> out;
  for_each_layer_ref(model, [&](layer_ref l) {
    if (l.ops->set_path && l.ops->path && !l.ops->quantizer) out.push_back(l.ops->path(l.object));
  });
  return out;
}

}  // namespace detail
}  // namespace xq
