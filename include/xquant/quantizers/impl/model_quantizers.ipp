#pragma once
/// \file model_quantizers.ipp
/// The compiled quantizer walk of quantizers/model_quantizers.hpp: compiled by every
/// translation unit in header-only mode, once in <xquant/src.hpp> in separate mode.

#include <string>
#include <utility>
#include <vector>

#include "../model_quantizers.hpp"

namespace xq {
namespace detail {

XQ_DECL void for_each_quantizer_ref(layer_ref model, void (*call)(void* f, quantizer_base& q), void* f) {
  for_each_layer_ref(model, [&](layer_ref l) {
    if (l.ops->quantizer) call(f, *l.ops->quantizer(l.object));
  });
}

XQ_DECL std::vector<std::pair<std::string, double>> quantizer_metrics(layer_ref model) {
  std::vector<std::pair<std::string, double>> out;
  for_each_layer_ref(model, [&](layer_ref l) {
    if (!l.ops->quantizer) return;
    const quantizer_base& q = *l.ops->quantizer(l.object);
    if (!q.enabled()) return;
    q.for_each_metric([&](std::string name, double value) { out.emplace_back(std::move(name), value); });
  });
  return out;
}

XQ_DECL void reset_quantizer_metrics(layer_ref model) {
  for_each_layer_ref(model, [](layer_ref l) {
    if (l.ops->quantizer) l.ops->quantizer(l.object)->reset_metrics();
  });
}

}  // namespace detail
}  // namespace xq
