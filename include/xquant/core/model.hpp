#pragma once
/// \file model.hpp
/// Walks over a model (any layer, leaf or composite): paths, the parameter list,
/// building before the first call, and the check that the forward code calls only
/// layers the model reaches through its children.

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "children.hpp"
#include "layer_call.hpp"
#include "layer_ref.hpp"
#include "layer_traits.hpp"
#include "mode.hpp"
#include "model_call.hpp"
#include "parameter.hpp"
#include "tape.hpp"
#include "type_name.hpp"

namespace xq {

namespace detail {

inline std::string join_path(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "/" + name;
}

// The walks below, compiled once over layer_ref (core/layer_ref.hpp says why).

/// set_paths (below) of the layer `model`.
XQ_DECL void set_paths(layer_ref model, const std::string& prefix);

/// Whether every layer of `model` that reports its path has the one `set_paths(model,
/// prefix)` would give it (a layer with `set_path` but no `path()` cannot tell: counted as
/// named). Reads only.
XQ_DECL bool paths_are_set(layer_ref model, const std::string& prefix);

/// `set_paths(model, prefix)` when `paths_are_set` is false, nothing otherwise; the check
/// and the renaming under one process-wide mutex. What the inference entry points
/// (`predict`, `evaluate`) call: several threads may run them on one model at once, and
/// once the paths are right none of them writes to the model (issue 34: a `set_paths` on
/// every call raced on the layers' path strings). Parameter names are left as they are
/// (checkpoints, summaries and `fit` name them with `set_paths`).
XQ_DECL void set_stale_paths(layer_ref model, const std::string& prefix);

/// parameters (below) of the layer `model`.
XQ_DECL std::vector<parameter_ptr> parameters(layer_ref model);

/// The layers `model` reaches through its children, and the float layers its wrappers
/// hold: what `checked_calls` lets a pass call.
XQ_DECL reachable_layers reachable_from(layer_ref model);

/// The paths of the layers of `model` that have one, quantizers aside, parents first.
XQ_DECL std::vector<std::string> layer_paths(layer_ref model);

}  // namespace detail

/// Calls `f(layer)` for every layer of `model`, parents before their children
/// (leaves and composites alike; the model itself first; a wrapper before its quantizers).
template <class Layer, class F>
void for_each_layer(Layer& model, F&& f) {
  f(model);
  if constexpr (has_children_v<Layer>)
    for_each_child(model, [&](auto& child, const std::string&) { for_each_layer(child, f); });
}

/// Gives every layer of `model` its path ("block_1/conv"): a composite's children
/// are named after its members (XQ_CHILDREN) or by the container (sequential),
/// under `prefix`. Parameters are renamed after their layer ("block_1/conv/kernel").
/// `fit` and `evaluate` call it; call it yourself before looking at names.
template <class Layer>
void set_paths(Layer& model, const std::string& prefix = "") {
  static_assert(!std::is_const_v<Layer>, "xquant: set_paths renames the layers of a model; it needs a non-const one");
  detail::set_paths(as_layer_ref(model), prefix);
}

/// Every distinct parameter of `model`, in first-use order. A weight shared by
/// two layers appears once (so an optimizer steps it once).
template <class Layer>
std::vector<parameter_ptr> parameters(Layer& model) {
  return detail::parameters(as_layer_ref(model));
}

/// The trainable ones among `parameters(model)`.
template <class Layer>
std::vector<parameter_ptr> trainable_parameters(Layer& model) {
  std::vector<parameter_ptr> out;
  for (auto& p : parameters(model))
    if (p->trainable()) out.push_back(p);
  return out;
}

/// Number of scalars in `parameters(model)` (each shared weight counted once).
template <class Layer>
std::size_t count_parameters(Layer& model) {
  std::size_t n = 0;
  for (auto& p : parameters(model)) n += p->value.size();
  return n;
}

/// Runs `pass()` (a forward pass of `model`) refusing any leaf layer the pass calls that
/// `model` does not reach through its children (core/layer_call.hpp). `build`, `fit`'s
/// first step, `quantize_model` and `summarize` run their pass this way.
template <class Model, class Pass>
decltype(auto) checked_calls(Model& model, Pass&& pass) {
  const detail::reachable_layers reachable = detail::reachable_from(as_layer_ref(model));
  return detail::with_reachability_check(reachable, std::forward<Pass>(pass));
}

namespace detail {
/// Zeros of each shape, as a model's inputs.
inline var_list zero_inputs(const input_shapes& shapes) {
  var_list inputs;
  inputs.reserve(shapes.size());
  for (const auto& s : shapes) inputs.emplace_back(zeros_tensor(s));
  return inputs;
}
}  // namespace detail

/// Builds every parameter by one inference call on zeros of each of `shapes` (batch
/// axis included; one shape per input, in the order the model takes them: see
/// core/model_call.hpp), recording nothing and updating no statistics; the call also
/// checks that every layer the forward code calls is one of the model's children.
template <class Layer>
void build(Layer& model, const input_shapes& shapes) {
  set_paths(model);
  {
    no_grad off;
    training_mode inference(false);
    checked_calls(model, [&] { return call_model(model, detail::zero_inputs(shapes), "xq::build"); });
  }
  set_paths(model);
}

/// `build` for a model with one input of `input_shape`.
template <class Layer>
void build(Layer& model, const tensor::shape_type& input_shape) {
  build(model, input_shapes(std::vector<tensor::shape_type>{input_shape}));
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/model.ipp"
#endif
