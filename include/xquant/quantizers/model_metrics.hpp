#pragma once
/// \file model_metrics.hpp
/// The quantizer metrics of a whole model: every quantizer layer in it (standalone
/// ones in a `sequential`, and the input/kernel quantizers of quant layers, which are
/// their children), their figures by name, and switching them on or resetting them
/// all at once. `fit` resets them at each epoch's start and reports them at its end
/// (`epoch_record::quantizer_metrics`), as Keras resets and reports Larq's metrics.
///
/// \code
///   xq::enable_quantizer_metrics(model, xq::quantizer_metric::flip_ratio | xq::quantizer_metric::gradient_flow);
///   auto h = xq::fit(model, opt, loss, train, options);
///   for (const auto& [name, value] : h.last().quantizer_metrics)   // "flip_ratio/dense_1/kernel_quantizer", ...
///     std::cout << name << ' ' << value << '\n';
/// \endcode
///
/// Names carry the quantizers' paths, so call `xq::set_paths(model)` first when the
/// model has not been through `fit`, `build` or `set_paths` yet (these functions do
/// not set paths themselves: on a part of a larger model that would rename its layers).

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/model.hpp"
#include "quantizer_layer.hpp"
#include "quantizer_metrics.hpp"

namespace xq {

/// Calls `f(quantizer)` for every quantizer layer of `model` (`is_quantizer_layer_v`),
/// in model order (parents before children: a quant layer's quantizers after it).
template <class Model, class F>
void for_each_quantizer_layer(Model& model, F&& f) {
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (is_quantizer_layer_v<std::remove_const_t<L>>) f(l);
  });
}

/// Every metric of every quantizer of `model` that has some on, in model order:
/// ("flip_ratio/<path>", value), ("gradient_flow/<path>", value). Empty when none.
template <class Model>
std::vector<std::pair<std::string, double>> quantizer_metrics(Model& model) {
  std::vector<std::pair<std::string, double>> out;
  for_each_quantizer_layer(model, [&](const auto& q) {
    q.for_each_metric([&](std::string name, double value) { out.emplace_back(std::move(name), value); });
  });
  return out;
}

/// Starts every quantizer metric of `model` from zero (flip ratio keeps its previous
/// values, as Larq's `reset_state`).
template <class Model>
void reset_quantizer_metrics(Model& model) {
  for_each_quantizer_layer(model, [](auto& q) { q.reset_metrics(); });
}

/// Turns exactly `metrics` on for every quantizer of `model` (`quantizer_metric::none`
/// turns them off), their figures from zero. An alternative to `metrics_scope`, which
/// reaches only the kernel quantizers of quant layers built inside it.
template <class Model>
void enable_quantizer_metrics(Model& model, quantizer_metric metrics) {
  for_each_quantizer_layer(model, [&](auto& q) { q.metrics(metrics); });
}

/// Number of quantizer layers in `model`.
template <class Model>
std::size_t count_quantizer_layers(Model& model) {
  std::size_t n = 0;
  for_each_quantizer_layer(model, [&](const auto&) { ++n; });
  return n;
}

}  // namespace xq
