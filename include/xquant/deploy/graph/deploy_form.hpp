#pragma once
/// \file deploy_form.hpp
/// The deploy protocol's plumbing (layer_builder.hpp states the protocol): whether a layer
/// type has a deploy form, the table of forms a model's typed walk fills (one entry per
/// layer path), and the forms of the traced functions (`xq::ops::relu(x)` in forward code),
/// which are found by the function's name.

#include <cstddef>
#include <map>
#include <string>
#include <type_traits>
#include <utility>

#include "../../config.hpp"
#include "../../core/type_name.hpp"
#include "layer_builder.hpp"

namespace xq::deploy {

namespace detail {
template <class L, class = void>
struct has_deploy_form : std::false_type {};
template <class L>
struct has_deploy_form<L, std::void_t<decltype(describe_deployment(std::declval<const L&>(),
                                                                   std::declval<layer_builder&>()))>>
    : std::true_type {};
}  // namespace detail

/// Whether `describe_deployment(const L&, layer_builder&)` is found for `L` (by
/// argument-dependent lookup: in L's namespace or in xq::deploy).
template <class L>
struct has_deploy_form : detail::has_deploy_form<L> {};
template <class L>
inline constexpr bool has_deploy_form_v = has_deploy_form<L>::value;

/// One layer of a model as the graph build sees it: its form (or none), type-erased.
struct layer_form {
  const void* layer = nullptr;
  value_id (*describe)(const void* layer, layer_builder& b) = nullptr;  ///< null: no form
  std::string type;  ///< the layer's C++ type, for the error when it has no form
};

/// Layer forms by path (the model's typed walk fills it).
using form_table = std::map<std::string, layer_form>;

/// The form of `l`, or an entry saying it has none.
template <class L>
layer_form form_of(const L& l) {
  layer_form f;
  f.layer = &l;
  f.type = xq::detail::type_short_name<L>();
  if constexpr (has_deploy_form_v<L>)
    f.describe = [](const void* p, layer_builder& b) -> value_id { return describe_deployment(*static_cast<const L*>(p), b); };
  return f;
}

/// The form of a traced function, by its name ("relu", "add", "slice").
using function_form = value_id (*)(layer_builder& b);

/// Registers (or replaces) the form of the traced function `name`: a program whose forward
/// code calls a function of its own that records itself in the trace says how it deploys.
XQ_DECL void register_function_form(const std::string& name, function_form form);
/// The form of function `name`, or null.
XQ_DECL function_form find_function_form(const std::string& name);

}  // namespace xq::deploy

