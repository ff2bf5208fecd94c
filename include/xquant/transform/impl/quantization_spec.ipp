#pragma once
/// \file quantization_spec.ipp
/// quantization_spec's code (transform/quantization_spec.hpp).

#include <string>
#include <utility>

#include "../quantization_spec.hpp"

namespace xq {

XQ_DECL quantization_spec& quantization_spec::add(std::string path, layer_quantization what) {
  entries_.push_back({std::move(path), false, std::move(what)});
  return *this;
}

XQ_DECL quantization_spec& quantization_spec::add_type(std::string type, layer_quantization what) {
  entries_.push_back({std::move(type), true, std::move(what)});
  return *this;
}

XQ_DECL quantization_spec& quantization_spec::append(const quantization_spec& other) {
  entries_.insert(entries_.end(), other.entries_.begin(), other.entries_.end());
  return *this;
}

XQ_DECL const quantization_spec::entry* quantization_spec::find(const std::string& path,
                                                                const std::string& type) const {
  const entry* by_type = nullptr;
  const entry* by_prefix = nullptr;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->by_type) {
      if (it->key == type && !by_type) by_type = &*it;
      continue;
    }
    if (it->key == path) return &*it;
    if (encloses(it->key, path) && (!by_prefix || it->key.size() > by_prefix->key.size())) by_prefix = &*it;
  }
  return by_prefix ? by_prefix : by_type;
}

XQ_DECL bool quantization_spec::encloses(const std::string& composite, const std::string& path) {
  return !composite.empty() && path.size() > composite.size() && path.compare(0, composite.size(), composite) == 0 &&
         path[composite.size()] == '/';
}

XQ_DECL bool quantization_spec::names(const std::string& path) const {
  for (const auto& e : entries_)
    if (!e.by_type && (e.key == path || encloses(e.key, path))) return true;
  return false;
}

XQ_DECL bool quantization_spec::places(const std::string& path) const {
  for (const auto& e : entries_)
    if (!e.by_type && (e.key == path || (e.what.block == block_placement::every_layer && encloses(e.key, path))))
      return true;
  return false;
}

}  // namespace xq
