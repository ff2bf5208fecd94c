#pragma once
/// \file no_quantizer.hpp
/// `xq::no_quantizer`: the "None" quantizer of a quant layer (Larq's
/// `input_quantizer=None`, `kernel_quantizer=None`): the value passes through
/// untouched and untagged. It is the absence of a quantizer, not one: no name, no path,
/// no metrics, no precision (a summary shows "-" for its input and counts the weight as
/// 32-bit, as Larq does for a missing quantizer), and the quantizer walks skip it.
///
/// Also here: how a quant layer reads the precision of whatever sits in one of its
/// quantizer slots (a quantizer, `no_quantizer`, or any callable).

#include <optional>
#include <type_traits>

#include "../core/layer_traits.hpp"
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

/// The precision a quantizer declares (`q.precision()`; none while it is off), or
/// nullopt: for `no_quantizer` and for a plain callable without one (Larq:
/// `getattr(quantizer, "precision", None)`).
template <class Q>
std::optional<int> declared_precision(const Q& q) {
  if constexpr (is_quantizer_v<Q>) {
    if (!q.enabled()) return std::nullopt;
    return q.precision();
  } else if constexpr (!is_no_quantizer_v<Q> && has_precision_v<Q>) {
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
/// the enclosing `metrics_scope`'s (a no-op for anything but a quantizer).
template <class Q>
void adopt_kernel_quantizer_metrics(Q& q) {
  if constexpr (is_quantizer_v<Q>) {
    q.adopt_scope_metrics();
  } else {
    (void)q;
  }
}

}  // namespace xq
