#pragma once
/// \file layer_traits.hpp
/// Every question xquant asks of a layer type, in one place. docs/layer_contract.md says
/// what each member means and what it enables; this header is how the library detects
/// it. Two kinds of traits:
///
///  - detection traits (`has_parameters<L>`, `has_kernel<L>`, ...): true when `L` has
///    the member, so a pass can use it and fall back to a no-op otherwise;
///  - declared traits a user's layer states, by a static member or by specializing the
///    trait (the trait wins): its role for graph passes (`layer_role_of`), whether it
///    counts multiply-accumulates in a summary (`counts_macs`), which axis of its kernel
///    holds the output channels (`kernel_channel_axis`), whether its input can be
///    fake-quantized (`quantizable_input`).
///
/// \code
///   class my_conv : public xq::layer<my_conv> {
///    public:
///     static constexpr xq::layer_role role = xq::layer_role::conv;   // a conv for NVIDIA's cases
///     ...
///   };
///   template <> struct xq::kernel_channel_axis<my_conv> : std::integral_constant<int, 2> {};
/// \endcode

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "parameter.hpp"

namespace xq {

class var;
class quantizer_base;

namespace detail {

/// `detect<T, Op>`: true when `Op<T>` is a valid type (the detection idiom).
template <class T, template <class> class Op, class = void>
struct detect : std::false_type {};
template <class T, template <class> class Op>
struct detect<T, Op, std::void_t<Op<T>>> : std::true_type {};

template <class T> using parameters_op = decltype(std::declval<const T&>().parameters());
template <class T> using set_path_op = decltype(std::declval<T&>().set_path(std::string()));
template <class T> using name_op = decltype(std::string(std::declval<const T&>().name()));
template <class T> using path_op = decltype(std::string(std::declval<const T&>().path()));
template <class T> using kernel_op = decltype(parameter_ptr(std::declval<const T&>().kernel()));
template <class T> using bias_op = decltype(parameter_ptr(std::declval<const T&>().bias()));
template <class T> using float_layer_op = decltype(std::declval<T&>().float_layer());
template <class T> using ensure_built_op = decltype(std::declval<T&>().ensure_built(std::declval<const var&>()));
template <class T>
using call_with_op = decltype(std::declval<const T&>().call_with(std::declval<const var&>(), std::declval<const var&>(),
                                                                 std::declval<const var&>()));
template <class T> using layer_type_op = decltype(std::string(T::layer_type()));

struct parameter_slot_probe {
  void operator()(parameter_ptr&) const {}
};
struct link_slot_probe {
  template <class... Args>
  void operator()(Args&&...) const {}
};
template <class T> using parameter_slots_op = decltype(std::declval<T&>().for_each_parameter_slot(parameter_slot_probe{}));
template <class T> using link_slots_op = decltype(std::declval<T&>().for_each_link_slot(link_slot_probe{}));

template <class T>
using weight_precisions_op = std::enable_if_t<std::is_convertible_v<
    decltype(std::declval<const T&>().weight_precisions()), std::vector<std::pair<parameter_ptr, int>>>>;
template <class T>
using input_precision_op =
    std::enable_if_t<std::is_convertible_v<decltype(std::declval<const T&>().input_precision()), std::optional<int>>>;

template <class T> using precision_op = decltype(int(std::declval<const T&>().precision()));
template <class T> using is_none_op = std::enable_if_t<T::is_none>;
template <class T> using role_member_op = decltype(T::role);
template <class T> using counts_macs_member_op = std::enable_if_t<std::is_same_v<decltype(T::counts_macs), const bool>>;

}  // namespace detail

// ---- detection traits --------------------------------------------------------------

/// `parameters() const`: the layer's own parameters (not its children's).
template <class T> struct has_parameters : detail::detect<T, detail::parameters_op> {};
template <class T> inline constexpr bool has_parameters_v = has_parameters<T>::value;

/// `set_path(std::string)`: the layer takes a path in its model (and names its parameters after it).
template <class T> struct has_set_path : detail::detect<T, detail::set_path_op> {};
template <class T> inline constexpr bool has_set_path_v = has_set_path<T>::value;

/// `name() const`: the layer's own name.
template <class T> struct has_name : detail::detect<T, detail::name_op> {};
template <class T> inline constexpr bool has_name_v = has_name<T>::value;

/// `path() const`: the layer's path in its model.
template <class T> struct has_path : detail::detect<T, detail::path_op> {};
template <class T> inline constexpr bool has_path_v = has_path<T>::value;

/// `kernel() const`: the weight a weight quantizer fake-quantizes (also a tied table).
template <class T> struct has_kernel : detail::detect<T, detail::kernel_op> {};
template <class T> inline constexpr bool has_kernel_v = has_kernel<T>::value;

/// `bias() const` (null when the layer has none).
template <class T> struct has_bias : detail::detect<T, detail::bias_op> {};
template <class T> inline constexpr bool has_bias_v = has_bias<T>::value;

/// What `weight_quantized<L>` needs of `L`: kernel(), bias(), ensure_built(x) and
/// call_with(x, kernel, bias), the layer's operation with a kernel it is given.
template <class T>
struct is_weighted_layer
    : std::bool_constant<has_kernel_v<T> && has_bias_v<T> && detail::detect<T, detail::ensure_built_op>::value &&
                         detail::detect<T, detail::call_with_op>::value> {};
template <class T> inline constexpr bool is_weighted_layer_v = is_weighted_layer<T>::value;

/// `float_layer()`: a wrapper (a quantized twin, a quant layer) gives the float layer it holds.
template <class T> struct has_float_layer : detail::detect<T, detail::float_layer_op> {};
template <class T> inline constexpr bool has_float_layer_v = has_float_layer<T>::value;

/// `for_each_parameter_slot(f)`: calls f(parameter_ptr&) on every parameter_ptr the
/// layer stores, null ones and unlisted ones included (clone_model rebinds them).
template <class T> struct has_parameter_slots : detail::detect<T, detail::parameter_slots_op> {};
template <class T> inline constexpr bool has_parameter_slots_v = has_parameter_slots<T>::value;

/// `for_each_link_slot(f)`: a link object shared with another layer (batch_norm_fold).
template <class T> struct has_link_slots : detail::detect<T, detail::link_slots_op> {};
template <class T> inline constexpr bool has_link_slots_v = has_link_slots<T>::value;

/// `weight_precisions() const`: each own parameter with its bit width (summary, bop).
template <class T> struct has_weight_precisions : detail::detect<T, detail::weight_precisions_op> {};
template <class T> inline constexpr bool has_weight_precisions_v = has_weight_precisions<T>::value;

/// `input_precision() const`: the bit width of the layer's input quantizer, or nullopt.
template <class T> struct has_input_precision : detail::detect<T, detail::input_precision_op> {};
template <class T> inline constexpr bool has_input_precision_v = has_input_precision<T>::value;

/// `precision() const`: the bit width a quantizer (or any callable in a quantizer slot) declares.
template <class T> struct has_precision : detail::detect<T, detail::precision_op> {};
template <class T> inline constexpr bool has_precision_v = has_precision<T>::value;

/// True for the "None" quantizer of a quant layer's slot (a type with
/// `static constexpr bool is_none = true`, as `xq::no_quantizer`).
template <class T> struct is_no_quantizer : detail::detect<std::remove_cv_t<T>, detail::is_none_op> {};
template <class T> inline constexpr bool is_no_quantizer_v = is_no_quantizer<T>::value;

/// True for quantizers: types deriving from `xq::quantizer_base` (quantizers/quantizer_layer.hpp).
template <class T>
struct is_quantizer : std::bool_constant<std::is_class_v<T> && std::is_base_of_v<quantizer_base, std::remove_cv_t<T>>> {};
template <class T> inline constexpr bool is_quantizer_v = is_quantizer<T>::value;
/// The same question under Larq's name: quantizers are layers.
template <class T> using is_quantizer_layer = is_quantizer<T>;
template <class T> inline constexpr bool is_quantizer_layer_v = is_quantizer<T>::value;

// ---- declared traits -----------------------------------------------------------------

/// What a layer is to the graph passes (batch-norm folding, NVIDIA's QDQ placement cases,
/// tfmot's and PyTorch's fusion rules) and to scheme defaults. Passes ask the role, never
/// the type's name.
enum class layer_role {
  conv,        ///< a convolution with a kernel (conv2d, depthwise_conv2d, Larq's quant convs)
  linear,      ///< a matrix product with a kernel (dense, embedding lookups, tied projections)
  norm,        ///< a normalization that can fold into the conv before it (batch_norm)
  activation,  ///< an elementwise nonlinearity (relu, relu6, sigmoid, ...)
  merge,       ///< combines several inputs (add, concatenate, multiply)
  pool,        ///< a pooling window (average, max, global)
  quantizer,   ///< a quantizer used as a layer
  other        ///< anything else (flatten, reshape, dropout, a user's layer)
};

/// "conv", "linear", ...
XQ_DECL const char* to_string(layer_role r) noexcept;

/// The role of layer type `L`: `L::role` when it declares one (`static constexpr
/// xq::layer_role role = ...;`), `quantizer` for quantizers, else `other`. Specialize it
/// to give a type a role without touching the type.
template <class L, class = void>
struct layer_role_of
    : std::integral_constant<layer_role, is_quantizer_v<L> ? layer_role::quantizer : layer_role::other> {};
template <class L>
struct layer_role_of<L, std::void_t<detail::role_member_op<L>>> : std::integral_constant<layer_role, L::role> {};
template <class L> inline constexpr layer_role layer_role_v = layer_role_of<std::remove_cv_t<L>>::value;

/// Whether a summary counts the MACs of `L`'s weighted ops: `L::counts_macs` when declared,
/// else true for layers with a kernel or with weight precisions. (tied_projection declares
/// false: its matrix belongs to the embedding, whose row counts it.)
template <class L, class = void>
struct counts_macs : std::bool_constant<has_kernel_v<L> || has_weight_precisions_v<L>> {};
template <class L>
struct counts_macs<L, detail::counts_macs_member_op<L>> : std::bool_constant<L::counts_macs> {};
template <class L> inline constexpr bool counts_macs_v = counts_macs<std::remove_cv_t<L>>::value;

/// The axis of a layer's kernel that holds its output channels, for per-channel weight
/// quantization (negative: from the end). Last by default; depthwise_conv2d: 2 (NVIDIA
/// quantizes a depthwise kernel (KH, KW, C, M) per input channel); embedding: 0 (a row).
template <class L>
struct kernel_channel_axis : std::integral_constant<int, -1> {};
template <class L> inline constexpr int kernel_channel_axis_v = kernel_channel_axis<L>::value;

/// The axis of a layer's kernel that a low-bit format's blocks run along
/// (quantizers/low_bit_format.hpp): the axis its product sums over, so that a block's integer
/// sum takes one scale. 0 by default (a dense kernel (in, out)); conv2d: 2, its input
/// channels (HWIO: blocks never span kernel taps); conv2d_transpose: 3 (KH, KW, F, C sums C);
/// embedding and tied_projection: 1 (a row's features, which the tied product sums);
/// depthwise_conv2d: 2, its channels (its product sums one channel's taps: the engine scales
/// each tap, and blocks keep the format's size).
template <class L>
struct kernel_block_axis : std::integral_constant<int, 0> {};
template <class L> inline constexpr int kernel_block_axis_v = kernel_block_axis<L>::value;

/// Whether a layer's input can be fake-quantized (false for an embedding: its input is
/// integer ids). A spec that asks for it is ignored for such a layer.
template <class L>
struct quantizable_input : std::true_type {};
template <class L> inline constexpr bool quantizable_input_v = quantizable_input<L>::value;

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/layer_traits.ipp"
#endif
