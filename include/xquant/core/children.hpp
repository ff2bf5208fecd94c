#pragma once
/// \file children.hpp
/// Tuple-of-children reflection: how xquant sees inside a composite layer.
///
/// A composite lists its children once:
/// \code
///   struct conv_block {
///     xq::conv2d conv{32, 3};
///     xq::batch_norm norm;
///     XQ_CHILDREN(conv, norm)            // paths "conv" and "norm" under the block
///     xq::var operator()(const xq::var& x) { return xq::ops::relu(norm(conv(x))); }
///   };
/// \endcode
/// or, without touching the type, specializes `xq::children_of<T>` with
/// `static auto get(T&)` (a tuple of references) and `static std::vector<std::string> names()`.
///
/// A layer whose children are only known at run time (the quantizers of a wrapper, one
/// per input or per call site) defines `template <class F> void visit_children(F&& f)`
/// (and its const twin) calling `f(child, name)` for each; walks see it like any
/// composite, but the quantize trait cannot rebuild it from its children's types.

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"

/// Declares a composite's children (members, in call order) and names them after
/// the members.
#define XQ_CHILDREN(...)                                                   \
  auto children() noexcept { return std::tie(__VA_ARGS__); }               \
  auto children() const noexcept { return std::tie(__VA_ARGS__); }         \
  static std::vector<std::string> child_names() {                          \
    return ::xq::detail::split_member_names(#__VA_ARGS__);                 \
  }

namespace xq {

/// Non-intrusive children: specialize with `get(T&)` and `names()`.
template <class T, class = void>
struct children_of {};

namespace detail {

/// "conv, norm" -> {"conv", "norm"}; a trailing "_" of a private member is dropped.
XQ_DECL std::vector<std::string> split_member_names(const char* list);

template <class T, class = void>
struct has_member_children : std::false_type {};
template <class T>
struct has_member_children<T, std::void_t<decltype(std::declval<T&>().children())>> : std::true_type {};

template <class T, class = void>
struct has_external_children : std::false_type {};
template <class T>
struct has_external_children<T, std::void_t<decltype(children_of<T>::get(std::declval<T&>()))>>
    : std::true_type {};

struct child_visitor_probe {
  template <class Child>
  void operator()(Child&, const std::string&) const {}
};
template <class T, class = void>
struct has_visit_children : std::false_type {};
template <class T>
struct has_visit_children<T, std::void_t<decltype(std::declval<T&>().visit_children(child_visitor_probe{}))>>
    : std::true_type {};

}  // namespace detail

/// Whether `T` lists its children as a tuple (XQ_CHILDREN or `children_of<T>`): the form
/// the quantize trait rebuilds a composite from.
template <class T>
struct has_child_tuple : std::bool_constant<detail::has_member_children<std::remove_const_t<T>>::value ||
                                            detail::has_external_children<std::remove_const_t<T>>::value> {};
template <class T>
inline constexpr bool has_child_tuple_v = has_child_tuple<T>::value;

/// Whether `T` is a composite (has children xquant can see, as a tuple or at run time).
template <class T>
struct has_children
    : std::bool_constant<has_child_tuple_v<T> || detail::has_visit_children<std::remove_const_t<T>>::value> {};
template <class T>
inline constexpr bool has_children_v = has_children<T>::value;

/// The children of a composite, as a tuple of references.
template <class T>
auto children(T& composite) {
  static_assert(has_child_tuple_v<T>,
                "xquant: this type has no children; list them with XQ_CHILDREN(a, b, ...) "
                "or specialize xq::children_of<T>");
  if constexpr (detail::has_member_children<std::remove_const_t<T>>::value)
    return composite.children();
  else
    return children_of<std::remove_const_t<T>>::get(composite);
}

/// The children's names, in the order of `children()`.
template <class T>
std::vector<std::string> child_names(const T& composite) {
  using U = std::remove_const_t<T>;
  if constexpr (detail::has_member_children<U>::value) {
    (void)composite;
    if constexpr (std::is_invocable_v<decltype(&U::child_names), const U&>)
      return composite.child_names();
    else
      return U::child_names();
  } else {
    (void)composite;
    return children_of<U>::names();
  }
}

/// Calls `f(child, name)` for each child of a composite, in order.
template <class T, class F>
void for_each_child(T& composite, F&& f) {
  if constexpr (has_child_tuple_v<T>) {
    const std::vector<std::string> names = child_names(composite);
    std::apply(
        [&](auto&... child) {
          std::size_t i = 0;
          (f(child, names.at(i++)), ...);
        },
        children(composite));
  } else {
    composite.visit_children(f);
  }
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/children.ipp"
#endif
