#pragma once
/// \file precision_traits.hpp
/// How a layer tells the rest of xquant the bit widths it computes with (the quant
/// layers do; every other layer is float 32):
///  - `std::vector<std::pair<parameter_ptr, int>> weight_precisions() const`: each of
///    the layer's own parameters with its bit width (a kernel: its quantizer's
///    precision; a bias: 32). `bop`'s `binary_parameters` and the model summary read it.
///  - `std::optional<int> input_precision() const`: its input quantizer's precision,
///    or nullopt when it has none.

#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "parameter.hpp"

namespace xq {

/// True when `L` reports its weights' bit widths (`weight_precisions()`).
template <class L, class = void>
struct has_weight_precisions : std::false_type {};
template <class L>
struct has_weight_precisions<
    L, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const L&>().weight_precisions()),
                                              std::vector<std::pair<parameter_ptr, int>>>>> : std::true_type {};
template <class L>
inline constexpr bool has_weight_precisions_v = has_weight_precisions<L>::value;

/// True when `L` reports its input quantizer's precision (`input_precision()`).
template <class L, class = void>
struct has_input_precision : std::false_type {};
template <class L>
struct has_input_precision<
    L, std::enable_if_t<std::is_convertible_v<decltype(std::declval<const L&>().input_precision()),
                                              std::optional<int>>>> : std::true_type {};
template <class L>
inline constexpr bool has_input_precision_v = has_input_precision<L>::value;

}  // namespace xq
