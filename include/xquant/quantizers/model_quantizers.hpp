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
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/layer_traits.hpp"
#include "../core/layer_ref.hpp"
#include "../core/model.hpp"
#include "quantizer_layer.hpp"
#include "quantizer_metrics.hpp"

namespace xq {

/// Calls `f(q)` for every quantizer `q` of `model` whose type `f` accepts (a lambda
/// taking `xq::fake_quantizer&` visits the fake quantizers only; `auto&` visits all), in
/// model order: parents before children, a layer's quantizers after the layer.
namespace detail {

/// The parameter type of a callable with exactly one, non-generic parameter (a lambda
/// `[](const fake_quantizer& q) {...}`, a function pointer); void otherwise.
template <class M>
struct sole_parameter_of_member {
  using type = void;
};
template <class C, class R, class A>
struct sole_parameter_of_member<R (C::*)(A)> {
  using type = A;
};
template <class C, class R, class A>
struct sole_parameter_of_member<R (C::*)(A) const> {
  using type = A;
};
template <class C, class R, class A>
struct sole_parameter_of_member<R (C::*)(A) noexcept> {
  using type = A;
};
template <class C, class R, class A>
struct sole_parameter_of_member<R (C::*)(A) const noexcept> {
  using type = A;
};
template <class F, class = void>
struct sole_parameter {
  using type = void;
};
template <class F>
struct sole_parameter<F, std::void_t<decltype(&F::operator())>> : sole_parameter_of_member<decltype(&F::operator())> {};
template <class R, class A>
struct sole_parameter<R (*)(A)> {
  using type = A;
};

/// Calls `call(f, q)` for every quantizer `q` under `model`, in for_each_quantizer's order;
/// compiled once (core/layer_ref.hpp says why).
XQ_DECL void for_each_quantizer_ref(layer_ref model, void (*call)(void* f, quantizer_base& q), void* f);

/// quantizer_metrics and reset_quantizer_metrics (below) of the layer `model`.
XQ_DECL std::vector<std::pair<std::string, double>> quantizer_metrics(layer_ref model);
XQ_DECL void reset_quantizer_metrics(layer_ref model);

}  // namespace detail

/// Calls `f(q)` for every quantizer `q` of `model` whose type `f` accepts (a lambda
/// taking `xq::fake_quantizer&` visits the fake quantizers only; `auto&` visits all), in
/// model order: parents before children, a layer's quantizers after the layer.
template <class Model, class F>
void for_each_quantizer(Model& model, F&& f) {
  using A = typename detail::sole_parameter<std::decay_t<F>>::type;
  using Q = std::remove_cv_t<std::remove_reference_t<A>>;
  if constexpr (std::is_lvalue_reference_v<A> && std::is_base_of_v<quantizer_base, Q> &&
                (!std::is_const_v<Model> || std::is_const_v<std::remove_reference_t<A>>)) {
    // A quantizer class named by the callable: the compiled walk, filtered by that class.
    using G = std::remove_reference_t<F>;
    detail::for_each_quantizer_ref(
        as_layer_ref(model),
        [](void* g, quantizer_base& q) {
          if constexpr (std::is_same_v<Q, quantizer_base>) {
            (*static_cast<G*>(g))(q);
          } else if (auto* p = dynamic_cast<Q*>(&q)) {
            (*static_cast<G*>(g))(*p);
          }
        },
        const_cast<void*>(static_cast<const void*>(std::addressof(f))));
  } else {
    // A generic callable (`auto& q`), or one taking a mutable quantizer of a const model:
    // each quantizer with its own type, `f` called where it accepts it.
    for_each_layer(model, [&](auto& l) {
      using L = std::remove_reference_t<decltype(l)>;
      if constexpr (is_quantizer_v<L>) {
        if constexpr (std::is_invocable_v<F&, L&>) f(l);
      }
    });
  }
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
  return detail::quantizer_metrics(as_layer_ref(model));
}

/// Starts every quantizer metric of `model` from zero (flip ratio keeps its previous
/// values, as Larq's `reset_state`).
template <class Model>
void reset_quantizer_metrics(Model& model) {
  static_assert(!std::is_const_v<Model>, "xquant: resetting quantizer metrics needs a non-const model");
  detail::reset_quantizer_metrics(as_layer_ref(model));
}

/// Turns exactly `metrics` on for every quantizer of `model` (`quantizer_metric::none`
/// turns them off), their figures from zero. An alternative to `metrics_scope`, which
/// reaches only the kernel quantizers of quant layers built inside it.
template <class Model>
void enable_quantizer_metrics(Model& model, quantizer_metric metrics) {
  for_each_quantizer(model, [&](quantizer_base& q) { q.set_metrics(metrics); });
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/model_quantizers.ipp"
#endif
