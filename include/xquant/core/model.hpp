#pragma once
/// \file model.hpp
/// Walks over a model (any layer, leaf or composite): paths, the parameter list,
/// building before the first call.

#include <memory>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "children.hpp"
#include "mode.hpp"
#include "parameter.hpp"
#include "tape.hpp"

namespace xq {

namespace detail {
template <class T, class = void>
struct has_parameters : std::false_type {};
template <class T>
struct has_parameters<T, std::void_t<decltype(std::declval<T&>().parameters())>> : std::true_type {};

template <class T, class = void>
struct has_set_path : std::false_type {};
template <class T>
struct has_set_path<T, std::void_t<decltype(std::declval<T&>().set_path(std::string()))>>
    : std::true_type {};

inline std::string join_path(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "/" + name;
}
}  // namespace detail

/// Calls `f(layer)` for every layer of `model`, parents before their children
/// (leaves and composites alike; the model itself first).
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
  if constexpr (detail::has_set_path<Layer>::value) {
    if (!prefix.empty() || !has_children_v<Layer>) model.set_path(prefix.empty() ? model.name() : prefix);
  }
  if constexpr (has_children_v<Layer>)
    for_each_child(model, [&](auto& child, const std::string& name) {
      set_paths(child, detail::join_path(prefix, name));
    });
}

/// Every distinct parameter of `model`, in first-use order. A weight shared by
/// two layers appears once (so an optimizer steps it once).
template <class Layer>
std::vector<parameter_ptr> parameters(Layer& model) {
  std::vector<parameter_ptr> out;
  std::unordered_set<const parameter*> seen;
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (detail::has_parameters<L>::value)
      for (const auto& p : l.parameters())
        if (p && seen.insert(p.get()).second) out.push_back(p);
  });
  return out;
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

/// Builds every parameter by one inference call on zeros of `input_shape`
/// (batch axis included), recording nothing and updating no statistics.
template <class Layer>
void build(Layer& model, const tensor::shape_type& input_shape) {
  no_grad off;
  training_mode inference(false);
  (void)model(var(xt::zeros<float>(input_shape)));
  set_paths(model);
}

}  // namespace xq
