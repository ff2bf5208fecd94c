#pragma once
/// \file model_quantizers.hpp
/// The quantizers of a whole model: the one walk over them (`for_each_quantizer`: every
/// quantizer, of every family — a wrapper's input, kernel and output quantizers, a quant
/// layer's, a standalone one in a `sequential`), model-wide switches (PyTorch's
/// `enable_observer` / `disable_fake_quant` applied to a model), and their metrics by
/// name. `fit` resets the metrics at each epoch's start and reports them at its end
/// (`epoch_record::quantizer_metrics`), as Keras resets and reports Larq's metrics.
///
/// \code
///   xq::for_each_quantizer(qat, [](xq::fake_quantizer& q) { ... });   // only fake quantizers
///   xq::for_each_quantizer(qat, [](auto& q) { ... });                 // every quantizer
///   xq::enable_fake_quant(qat, false);       // calibration: observe ranges, quantize nothing
///   xq::enable_quantizer_metrics(model, xq::quantizer_metric::flip_ratio | xq::quantizer_metric::gradient_flow);
/// \endcode
///
/// Names carry the quantizers' paths, so call `xq::set_paths(model)` first when the
/// model has not been through `fit`, `build` or `set_paths` yet (these functions do
/// not set paths themselves: on a part of a larger model that would rename its layers).

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/layer_traits.hpp"
#include "../core/model.hpp"
#include "quantizer_layer.hpp"
#include "quantizer_metrics.hpp"

namespace xq {

/// Calls `f(q)` for every quantizer `q` of `model` whose type `f` accepts (a lambda
/// taking `xq::fake_quantizer&` visits the fake quantizers only; `auto&` visits all), in
/// model order: parents before children, a layer's quantizers after the layer.
template <class Model, class F>
void for_each_quantizer(Model& model, F&& f) {
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (is_quantizer_v<L>) {
      if constexpr (std::is_invocable_v<F&, L&>) f(l);
    }
  });
}

/// Number of quantizers in `model` (on or off).
template <class Model>
std::size_t count_quantizers(Model& model) {
  std::size_t n = 0;
  for_each_quantizer(model, [&](const quantizer_base&) { ++n; });
  return n;
}

/// Turns the observers of every quantizer of `model` on or off (off: the ranges and
/// other tracked state stay as they are; training still quantizes with them).
template <class Model>
void enable_observers(Model& model, bool on = true) {
  for_each_quantizer(model, [&](quantizer_base& q) { q.enable_observer(on); });
}

/// Turns fake quantization of every quantizer of `model` on or off (off: values pass
/// through; observers still watch training batches — calibration).
template <class Model>
void enable_fake_quant(Model& model, bool on = true) {
  for_each_quantizer(model, [&](quantizer_base& q) { q.enable_fake_quant(on); });
}

/// Every metric of every quantizer of `model` that is on and has some on, in model
/// order: ("flip_ratio/<path>", value), ("gradient_flow/<path>", value). Empty when none.
template <class Model>
std::vector<std::pair<std::string, double>> quantizer_metrics(Model& model) {
  std::vector<std::pair<std::string, double>> out;
  for_each_quantizer(model, [&](const quantizer_base& q) {
    if (!q.enabled()) return;
    q.for_each_metric([&](std::string name, double value) { out.emplace_back(std::move(name), value); });
  });
  return out;
}

/// Starts every quantizer metric of `model` from zero (flip ratio keeps its previous
/// values, as Larq's `reset_state`).
template <class Model>
void reset_quantizer_metrics(Model& model) {
  for_each_quantizer(model, [](quantizer_base& q) { q.reset_metrics(); });
}

/// Turns exactly `metrics` on for every quantizer of `model` (`quantizer_metric::none`
/// turns them off), their figures from zero. An alternative to `metrics_scope`, which
/// reaches only the kernel quantizers of quant layers built inside it.
template <class Model>
void enable_quantizer_metrics(Model& model, quantizer_metric metrics) {
  for_each_quantizer(model, [&](quantizer_base& q) { q.set_metrics(metrics); });
}

}  // namespace xq
