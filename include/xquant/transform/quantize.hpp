#pragma once
/// \file quantize.hpp
/// The quantize trait: `xq::quantize<L>::type` is the quantized twin of layer type `L`,
/// and `quantize<L>::apply(const L&)` builds it, sharing (not copying) the float
/// layer's parameters. `quantize_t<L>` is the type, `quantize_layer(l)` the function.
///
/// Where twins come from:
///  - a specialization: the default registry (registry.hpp) has one for every built-in
///    layer, and a user adds a layer by writing one (no library edit):
///    \code
///      template <> struct xq::quantize<my::channel_shuffle> {
///        using type = xq::input_quantized<my::channel_shuffle>;   // apply: type(layer)
///        static constexpr bool quantized_by_default = true;        // optional; true if absent
///      };
///    \endcode
///  - a composite (a layer with children, see children.hpp) that is a class template
///    over its child types is rebuilt with each quantizable type argument replaced by
///    its twin: `conv_block<conv2d, batch_norm>` becomes
///    `conv_block<quantize_t<conv2d>, quantize_t<batch_norm>>`, recursively, however
///    deep the nesting. Its twin is value-initialized (`type()`), then each child is
///    assigned the twin of the float child (or, if the composite has a constructor from
///    the float composite, that is used). So a child's initializer must fit both child
///    types: a leaf child from a float layer object (`Conv conv{xq::conv2d(8, 3)};`), a
///    composite child from arguments (`Inner inner{16};`).
/// A layer with neither fails to compile with a message that starts with "xquant:".

#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/children.hpp"
#include "../core/layer_traits.hpp"

namespace xq {

template <class Layer, class Enable = void>
struct quantize;

namespace detail {

/// Twin types of a composite class template's arguments: the quantizable ones are
/// replaced, the others (tags, sizes as types) kept.
template <class T, class = void>
struct rebind_children {};

template <class Layer, class = void>
struct quantize_argument {
  using type = Layer;
};

/// The twin of a composite class template, or nothing (no `type`) when the composite
/// is not a template over types.
template <template <class...> class Composite, class... Args>
struct rebind_children<Composite<Args...>, void> {
  using type = Composite<typename quantize_argument<Args>::type...>;
};

/// The default for every type without a specialization: composites are rebuilt,
/// anything else has no twin (and no `type`, so detection works).
template <class Layer, bool = has_child_tuple_v<Layer>, class = void>
struct default_quantize {};

template <class Layer>
struct default_quantize<Layer, true, std::void_t<typename rebind_children<Layer>::type>> {
  using type = typename rebind_children<Layer>::type;
  static type apply(const Layer& composite);
};

}  // namespace detail

/// The quantized twin of layer type `Layer`: specialize it to support a new layer.
/// A specialization needs `using type = ...;` and may add
/// `static type apply(const Layer&)` (otherwise `type(layer)` builds the twin).
template <class Layer, class Enable>
struct quantize : detail::default_quantize<Layer> {};

/// Whether `Layer` has a quantized twin (a specialization or a rebuildable composite).
template <class Layer, class = void>
struct is_quantizable : std::false_type {};
template <class Layer>
struct is_quantizable<Layer, std::void_t<typename quantize<Layer>::type>> : std::true_type {};
template <class Layer>
inline constexpr bool is_quantizable_v = is_quantizable<Layer>::value;

/// Whether the twin of `Layer` is quantized by default when the scheme does not list its
/// type: `quantize<Layer>::quantized_by_default` when the specialization states it, else
/// true — NVIDIA's procedure: defining a layer's wrapper registers it. (The built-in
/// layers outside NVIDIA's matrix state false: their twins exist so that a traced pass
/// sees them, and a spec can still turn them on.) What "on" places is the scheme's
/// `unlisted_weighted` or `unlisted_weightless` default.
template <class Layer, class = void>
struct quantized_by_default : std::true_type {};
template <class Layer>
struct quantized_by_default<Layer, std::void_t<decltype(quantize<Layer>::quantized_by_default)>>
    : std::bool_constant<quantize<Layer>::quantized_by_default> {};
template <class Layer>
inline constexpr bool quantized_by_default_v = quantized_by_default<Layer>::value;

namespace detail {

template <class Layer>
struct quantize_argument<Layer, std::enable_if_t<is_quantizable_v<Layer>>> {
  using type = typename quantize<Layer>::type;
};

template <class T>
struct is_template_composite : std::false_type {};
template <template <class...> class Composite, class... Args>
struct is_template_composite<Composite<Args...>> : std::true_type {};

/// What `quantize_t` names, with the diagnostics of a layer that has no twin.
template <class Layer>
struct checked_quantize {
  static_assert(is_quantizable_v<Layer> || has_children_v<Layer>,
                "xquant: this layer type has no quantized twin. Either specialize "
                "xq::quantize<Layer> (e.g. `using type = xq::input_quantized<Layer>;` or "
                "xq::weight_quantized<Layer>), or, if it is a composite, list its children "
                "with XQ_CHILDREN(a, b, ...) so it is quantized through them.");
  // (A template composite whose child has no twin already failed the first assert.)
  static_assert(is_quantizable_v<Layer> || !has_children_v<Layer> || is_template_composite<Layer>::value,
                "xquant: this composite is not a class template over its child types, so its "
                "quantized twin cannot be spelled. Write it as `template <class Conv = xq::conv2d, "
                "class Norm = xq::batch_norm> struct block { Conv conv; Norm norm; ... };`, or "
                "specialize xq::quantize<Layer>.");
  struct no_twin {
    using type = Layer;
  };
  using type = typename std::conditional_t<is_quantizable_v<Layer>, quantize<Layer>, no_twin>::type;
};

template <class Layer, class = void>
struct has_quantize_apply : std::false_type {};
template <class Layer>
struct has_quantize_apply<Layer, std::void_t<decltype(quantize<Layer>::apply(std::declval<const Layer&>()))>>
    : std::true_type {};

}  // namespace detail

/// The quantized twin type of `Layer` (a compile error starting with "xquant:" if none).
template <class Layer>
using quantize_t = typename detail::checked_quantize<Layer>::type;

/// Builds the quantized twin of `layer`, sharing its parameters. Its quantizers are
/// off until configured; `quantize_model` is the usual entry point.
template <class Layer>
quantize_t<Layer> quantize_layer(const Layer& layer) {
  if constexpr (!is_quantizable_v<Layer>) {
    return quantize_t<Layer>(layer);  // the static_asserts above have fired
  } else if constexpr (detail::has_quantize_apply<Layer>::value) {
    return quantize<Layer>::apply(layer);
  } else {
    return quantize_t<Layer>(layer);
  }
}

namespace detail {

/// Never defined: what `apply` returns after a failed static_assert, so that the
/// diagnostic is the only error.
template <class T>
T unbuildable_twin();

template <class T>
using settable_name_op = decltype(std::declval<T&>().name(std::declval<const T&>().name()));
template <class T>
struct has_settable_name : detect<T, settable_name_op> {};

template <class Layer>
auto default_quantize<Layer, true, std::void_t<typename rebind_children<Layer>::type>>::apply(
    const Layer& composite) -> type {
  if constexpr (std::is_constructible_v<type, const Layer&> && !std::is_same_v<type, Layer>) {
    return type(composite);
  } else {
    // The rule, stated once (docs/layer_contract.md, "Composites"): leaf children from a
    // float layer object, composite children from arguments.
    static_assert(std::is_default_constructible_v<type> || !std::is_default_constructible_v<Layer>,
                  "xquant: the float composite can be default-constructed but its quantized twin cannot: "
                  "a child's initializer (a default member initializer or the composite's constructor) "
                  "fits the float child type but not its twin. The rule: build a leaf child from a float "
                  "layer object (`Conv conv{xq::conv2d(8, 3)};`: every leaf's twin is made from its float "
                  "layer, not from its arguments), and a composite child from arguments both of its types "
                  "take (`Inner inner{16};`, not `Inner inner{inner<>(16)};`); or give the composite a "
                  "constructor from the float composite.");
    static_assert(std::is_default_constructible_v<type> || std::is_default_constructible_v<Layer>,
                  "xquant: the quantized twin of this composite is built by default construction "
                  "and then given its children's twins; give the composite a default constructor "
                  "(default arguments will do), or a constructor from the float composite.");
    if constexpr (!std::is_default_constructible_v<type>) {
      return unbuildable_twin<type>();  // (the assertions above have failed)
    } else {
    // `type()`, value-initialization, not `type twin{}`: for an aggregate composite the
    // braces copy-list-initialize each member without an initializer, which a child block
    // with an `explicit` default constructor refuses (Clang rejects it; GCC only warns).
    type twin = type();
    auto float_children = children(composite);
    auto twin_children = children(twin);
    static_assert(std::tuple_size_v<decltype(float_children)> == std::tuple_size_v<decltype(twin_children)>,
                  "xquant: a composite's twin must list the same children");
    std::apply(
        [&](auto&... twin_child) {
          std::apply(
              [&](const auto&... float_child) {
                auto assign = [](auto& to, const auto& from) {
                  using twin_type = std::remove_reference_t<decltype(to)>;
                  using from_twin = quantize_t<std::decay_t<decltype(from)>>;
                  static_assert(std::is_same_v<twin_type, from_twin>,
                                "xquant: a child of this composite has a fixed type, so it cannot hold "
                                "its quantized twin. Make the child's type a template parameter of the "
                                "composite (template <class Conv = xq::conv2d> ... Conv conv;).");
                  to = quantize_layer(from);
                };
                (assign(twin_child, float_child), ...);
              },
              float_children);
        },
        twin_children);
    if constexpr (has_settable_name<type>::value) twin.name(composite.name());
    return twin;
    }
  }
}

}  // namespace detail
}  // namespace xq
