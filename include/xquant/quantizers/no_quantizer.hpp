#pragma once
/// \file no_quantizer.hpp
/// `xq::no_quantizer`: the "None" quantizer of a quant layer (Larq's
/// `input_quantizer=None`, `kernel_quantizer=None`): the value passes through
/// untouched and untagged. It is not a quantizer layer: no name, no path, no
/// metrics, no precision (a summary shows "-" for its input and counts the weight
/// as 32-bit, as Larq does for a missing quantizer).
///
/// Also here: how a quant layer reads the precision of whatever sits in one of its
/// quantizer slots (a quantizer layer, `no_quantizer`, or any callable).

#include <optional>
#include <type_traits>
#include <utility>

#include "../core/var.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// The identity in a quant layer's quantizer slot: `quant_dense<no_quantizer, ste_sign>`
/// quantizes the kernel only.
struct no_quantizer {
  /// Marks the "None" quantizer (what `is_no_quantizer` reads).
  static constexpr bool is_none = true;
  /// Returns `x` itself: gradients reach `x` unchanged.
  var operator()(const var& x) const { return x; }
};

namespace detail {
template <class T, class = void>
struct declares_none : std::false_type {};
template <class T>
struct declares_none<T, std::enable_if_t<T::is_none>> : std::true_type {};

template <class T, class = void>
struct has_precision : std::false_type {};
template <class T>
struct has_precision<T, std::void_t<decltype(int(std::declval<const T&>().precision()))>> : std::true_type {};
}  // namespace detail

/// True for the "None" quantizer (a type with `static constexpr bool is_none = true`).
template <class T>
struct is_no_quantizer : detail::declares_none<std::remove_cv_t<T>> {};
template <class T>
inline constexpr bool is_no_quantizer_v = is_no_quantizer<T>::value;

/// The precision a quantizer declares (`q.precision()`), or nullopt: for `no_quantizer`
/// and for a plain callable without one (Larq: `getattr(quantizer, "precision", None)`).
template <class Q>
std::optional<int> declared_precision(const Q& q) {
  if constexpr (!is_no_quantizer_v<Q> && detail::has_precision<Q>::value) {
    return int(q.precision());
  } else {
    (void)q;
    return std::nullopt;
  }
}

/// The bit width of a weight quantized by `q`: its precision, or 32 (Larq's
/// `getattr(weight, "precision", 32)`).
template <class Q>
int weight_bitwidth(const Q& q) {
  return declared_precision(q).value_or(32);
}

/// Larq's `get_kernel_quantizer`: a kernel quantizer without metrics of its own takes
/// the enclosing `metrics_scope`'s (a no-op for anything but a quantizer layer).
template <class Q>
void adopt_kernel_quantizer_metrics(Q& q) {
  if constexpr (is_quantizer_layer_v<Q>) {
    q.adopt_scope_metrics();
  } else {
    (void)q;
  }
}

}  // namespace xq
