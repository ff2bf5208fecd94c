#pragma once
/// \file layer_info.hpp
/// What lowering and export need to know about one layer, read once through its type:
/// the operation (conv2d, dense, max pooling, ...), its attributes, its float weights,
/// and its quantizers (NVIDIA-style QDQ sites and kernel quantizer, a folded batch norm,
/// or Larq's sign quantizers). The typed walk of `lower` and `export_onnx` fills one per
/// layer path (`describe_layer` overloads, one per layer family); everything after that
/// is compiled code over this plain record (lower.ipp, export_onnx.ipp).
///
/// A layer type with no overload here has no integer form yet: lowering a model that
/// calls it stops with an error naming its path and type.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "../config.hpp"
#include "../core/tape.hpp"
#include "../core/tensor.hpp"
#include "../core/type_name.hpp"
#include "../core/var.hpp"
#include "../kernels/padding.hpp"

// The layer, quantizer and wrapper types described here, declared only: a program that
// lowers a model has the types its model uses, and this header stays cheap for the rest
// (the descriptions of the float layers are compiled, layer_info.ipp).
namespace xq {
class conv2d;
class dense;
class depthwise_conv2d;
class max_pool2d;
class batch_norm;
class flatten;
class reshape;
class dropout;
class relu;
class relu6;
class leaky_relu;
class sigmoid;
class tanh;
class swish;
class softmax;
class average_pool2d;
class global_average_pool2d;
class global_max_pool2d;
class add;
class concatenate;
class multiply;
class embedding;
class tied_projection;
class tied_dense;
class zero_padding2d;
class cropping2d;
class slice;
class upsampling2d;
class gelu;
class layer_norm;
class subtract;
class attention_scores;
class conv2d_transpose;
class lstm_recurrence;
class gru_recurrence;
struct no_quantizer;
class ste_sign;
class approx_sign;
class fake_quantizer;
class site_quantizers;
class quantized_batch_norm;
struct batch_norm_fold;
template <class Layer>
class weight_quantized;
template <class Layer, class Derived>
class input_quantized;
template <class Layer>
class each_input_quantized;
template <class InputQ, class KernelQ>
class quant_conv2d;
template <class InputQ, class KernelQ>
class quant_dense;
}  // namespace xq

namespace xq::deploy {

struct layer_info {
  enum class kind {
    none, linear, max_pool, batch_norm, flatten, reshape, identity, relu,
    average_pool,         ///< average_pool2d (pool, pool_strides, pool_padding)
    global_average_pool,  ///< global_average_pool2d (keepdims)
    global_max_pool,      ///< global_max_pool2d (keepdims)
    activation,           ///< relu6, leaky_relu, sigmoid, tanh, swish, softmax (`function`, alpha)
    merge,                ///< add, concatenate, multiply (`function`, axis, one quantizer per input)
    embedding,            ///< a table lookup (kernel: the table, weight: its quantizer)
    /// computed by xquant's own function (`function`, `ints`, `floats`, `tensors`: the
    /// integer engine's function_op, deploy/function_op.hpp, names each one's arguments);
    /// one QDQ site per input where the twin has them (`inputs`), a kernel quantizer on
    /// tensors[0] (`weight`: conv2d_transpose)
    function
  };
  enum class form { conv2d, depthwise_conv2d, dense };
  /// How a Larq layer quantizes: not at all, Larq's sign (ste_sign, approx_sign: ±1
  /// forward), or another quantizer (no binary form).
  enum class larq_quantizer { none, sign, other };

  kind what = kind::none;
  std::string path, type;

  // linear layers
  form linear_form = form::dense;
  conv2d_geometry geometry;
  std::array<std::size_t, 2> kernel_size{1, 1};
  std::size_t depth_multiplier = 1;
  tensor kernel = tensor::from_shape({0}), bias = tensor::from_shape({0});  ///< the float layer's (size 0: none)
  const site_quantizers* input = nullptr;   ///< NVIDIA-style input QDQ (null: the layer has none)
  const site_quantizers* output = nullptr;  ///< its output QDQ (null: none)
  const fake_quantizer* weight = nullptr;   ///< its kernel QDQ (null: none)
  std::shared_ptr<batch_norm_fold> fold;    ///< a batch norm folded into it
  bool larq = false;                        ///< a Larq quant layer (quant_conv2d, quant_dense)
  larq_quantizer larq_input = larq_quantizer::none, larq_kernel = larq_quantizer::none;
  tensor larq_quantized_kernel;             ///< its kernel quantizer's output
  float pad_value = 0.0f;

  // pooling
  std::array<std::size_t, 2> pool{1, 1}, pool_strides{1, 1};
  xq::padding pool_padding = xq::padding::valid;

  // global pools
  bool keepdims = false;

  // activations and merges: the xq::ops function's name ("sigmoid", "add", ...)
  std::string function;
  float alpha = 0.3f;  ///< leaky_relu
  int axis = -1;       ///< concatenate, as the layer has it (NHWC)
  /// A merge's input QDQ sites by input index (each_input_quantized; null: that input has none).
  std::vector<const site_quantizers*> inputs;

  // weights shared between layers (embedding, tied_projection, tied_dense)
  const void* kernel_id = nullptr;  ///< the kernel parameter: one per tied weight
  bool transposed = false;          ///< tied_projection: x · kernelᵀ, the kernel (V, D), output channel V

  // batch norm
  const batch_norm* norm = nullptr;

  // reshape
  std::vector<std::ptrdiff_t> target;

  // function: its arguments (slice's axis, end: as the layer has them, negative from the end)
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
  std::vector<tensor> tensors;
};

/// Layer infos by path.
using layer_table = std::map<std::string, layer_info>;

namespace detail {
/// `table[path]`, with its path and type set: the one place the table grows (compiled, so
/// that the typed walk's instantiations do not each inline a layer_info).
XQ_DECL layer_info& add_layer(layer_table& table, const std::string& path, const std::string& type);
}  // namespace detail

namespace detail {

inline layer_info::larq_quantizer larq_kind(const no_quantizer&) { return layer_info::larq_quantizer::none; }
inline layer_info::larq_quantizer larq_kind(const ste_sign&) { return layer_info::larq_quantizer::sign; }
inline layer_info::larq_quantizer larq_kind(const approx_sign&) { return layer_info::larq_quantizer::sign; }
template <class Q>
layer_info::larq_quantizer larq_kind(const Q&) {
  return layer_info::larq_quantizer::other;
}

XQ_DECL void describe_float(const conv2d& l, layer_info& i);
XQ_DECL void describe_float(const dense& l, layer_info& i);
XQ_DECL void describe_float(const depthwise_conv2d& l, layer_info& i);
XQ_DECL void describe_float(const max_pool2d& l, layer_info& i);
XQ_DECL void describe_float(const batch_norm& l, layer_info& i);
XQ_DECL void describe_float(const flatten& l, layer_info& i);
XQ_DECL void describe_float(const reshape& l, layer_info& i);
XQ_DECL void describe_float(const dropout& l, layer_info& i);
XQ_DECL void describe_float(const relu& l, layer_info& i);
XQ_DECL void describe_float(const relu6& l, layer_info& i);
XQ_DECL void describe_float(const leaky_relu& l, layer_info& i);
XQ_DECL void describe_float(const sigmoid& l, layer_info& i);
XQ_DECL void describe_float(const tanh& l, layer_info& i);
XQ_DECL void describe_float(const swish& l, layer_info& i);
XQ_DECL void describe_float(const softmax& l, layer_info& i);
XQ_DECL void describe_float(const average_pool2d& l, layer_info& i);
XQ_DECL void describe_float(const global_average_pool2d& l, layer_info& i);
XQ_DECL void describe_float(const global_max_pool2d& l, layer_info& i);
XQ_DECL void describe_float(const add& l, layer_info& i);
XQ_DECL void describe_float(const concatenate& l, layer_info& i);
XQ_DECL void describe_float(const multiply& l, layer_info& i);
XQ_DECL void describe_float(const embedding& l, layer_info& i);
XQ_DECL void describe_float(const tied_projection& l, layer_info& i);
XQ_DECL void describe_float(const tied_dense& l, layer_info& i);
XQ_DECL void describe_float(const zero_padding2d& l, layer_info& i);
XQ_DECL void describe_float(const cropping2d& l, layer_info& i);
XQ_DECL void describe_float(const slice& l, layer_info& i);
XQ_DECL void describe_float(const upsampling2d& l, layer_info& i);
XQ_DECL void describe_float(const gelu& l, layer_info& i);
XQ_DECL void describe_float(const layer_norm& l, layer_info& i);
XQ_DECL void describe_float(const subtract& l, layer_info& i);
XQ_DECL void describe_float(const attention_scores& l, layer_info& i);
XQ_DECL void describe_float(const conv2d_transpose& l, layer_info& i);
XQ_DECL void describe_float(const lstm_recurrence& l, layer_info& i);
XQ_DECL void describe_float(const gru_recurrence& l, layer_info& i);
/// Any other float layer: no integer form (kind::none, its type recorded for the error).
template <class L>
void describe_float(const L&, layer_info&) {}

/// Why a built-in layer type has no integer or ONNX form yet, for the error that names it
/// ("" for a type this does not know: a user's layer).
XQ_DECL std::string why_no_integer_form(const std::string& type);

/// The layer types with a describe_float overload above.
template <class L>
inline constexpr bool has_integer_form_v =
    std::is_same_v<L, conv2d> || std::is_same_v<L, dense> || std::is_same_v<L, depthwise_conv2d> ||
    std::is_same_v<L, max_pool2d> || std::is_same_v<L, batch_norm> || std::is_same_v<L, flatten> ||
    std::is_same_v<L, reshape> || std::is_same_v<L, dropout> || std::is_same_v<L, relu> || std::is_same_v<L, relu6> ||
    std::is_same_v<L, leaky_relu> || std::is_same_v<L, sigmoid> || std::is_same_v<L, tanh> ||
    std::is_same_v<L, swish> || std::is_same_v<L, softmax> || std::is_same_v<L, average_pool2d> ||
    std::is_same_v<L, global_average_pool2d> || std::is_same_v<L, global_max_pool2d> || std::is_same_v<L, add> ||
    std::is_same_v<L, concatenate> || std::is_same_v<L, multiply> || std::is_same_v<L, embedding> ||
    std::is_same_v<L, tied_projection> || std::is_same_v<L, tied_dense> || std::is_same_v<L, zero_padding2d> ||
    std::is_same_v<L, cropping2d> || std::is_same_v<L, slice> || std::is_same_v<L, upsampling2d> ||
    std::is_same_v<L, gelu> || std::is_same_v<L, layer_norm> || std::is_same_v<L, subtract> ||
    std::is_same_v<L, attention_scores> || std::is_same_v<L, conv2d_transpose> || std::is_same_v<L, lstm_recurrence> ||
    std::is_same_v<L, gru_recurrence>;

}  // namespace detail

/// Fills `table[path]` for layer `l` (the typed walk of lower/export calls it for every
/// layer; composites and quantizers add nothing).
template <class L>
void describe_layer(layer_table& table, const L& l) {
  if constexpr (detail::has_integer_form_v<L>) {
    detail::describe_float(l, detail::add_layer(table, l.path(), xq::detail::type_short_name<L>()));
  }
}

template <class Layer>
void describe_layer(layer_table& table, const weight_quantized<Layer>& w) {
  layer_info& i = detail::add_layer(table, w.path(), xq::detail::type_short_name<Layer>());
  detail::describe_float(w.float_layer(), i);
  i.input = &w.input_quantizer();
  i.output = &w.output_quantizer();
  i.weight = &w.weight_quantizer();
  i.fold = w.folded();
}

template <class Layer, class Derived>
void describe_layer(layer_table& table, const input_quantized<Layer, Derived>& w) {
  layer_info& i = detail::add_layer(table, w.path(), xq::detail::type_short_name<Layer>());
  detail::describe_float(w.float_layer(), i);
  i.input = &w.input_quantizer();
  i.output = &w.output_quantizer();
}

/// A merge layer's twin: one QDQ site per input (NVIDIA's quantization_index).
template <class Layer>
void describe_layer(layer_table& table, const each_input_quantized<Layer>& w) {
  layer_info& i = detail::add_layer(table, w.path(), xq::detail::type_short_name<Layer>());
  detail::describe_float(w.float_layer(), i);
  // The sites are made on the first call (build_and_describe ran one): read, not add.
  auto& sites = const_cast<each_input_quantized<Layer>&>(w);
  for (std::size_t k = 0; k < w.inputs_seen(); ++k) i.inputs.push_back(&sites.input_quantizer(k));
  i.output = &w.output_quantizer();
}

XQ_DECL void describe_layer(layer_table& table, const quantized_batch_norm& w);

namespace detail {
template <class Self, class InputQ, class KernelQ>
layer_info& describe_larq(layer_table& table, const Self& l, const InputQ& in, KernelQ& kq) {
  layer_info& i = add_layer(table, l.path(), xq::detail::type_short_name<Self>());
  detail::describe_float(l.float_layer(), i);
  i.larq = true;
  i.larq_input = larq_kind(in);
  i.larq_kernel = larq_kind(kq);
  if (l.kernel()) {
    const xq::no_grad nothing_recorded;
    i.larq_quantized_kernel = kq(var(l.kernel())).value();
  }
  return i;
}
}  // namespace detail

template <class InputQ, class KernelQ>
void describe_layer(layer_table& table, const quant_conv2d<InputQ, KernelQ>& l) {
  // The kernel quantizer's inference call changes no state; it is not a const member.
  auto& kq = const_cast<KernelQ&>(l.kernel_quantizer);
  detail::describe_larq(table, l, l.input_quantizer, kq).pad_value = l.pad_values();
}

template <class InputQ, class KernelQ>
void describe_layer(layer_table& table, const quant_dense<InputQ, KernelQ>& l) {
  auto& kq = const_cast<KernelQ&>(l.kernel_quantizer);
  detail::describe_larq(table, l, l.input_quantizer, kq);
}

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/layer_info.ipp"
#endif
