#pragma once
/// \file registry.hpp
/// The default registry: the quantized twin of every built-in layer.
///
/// | layer                                          | twin                  |
/// |------------------------------------------------|-----------------------|
/// | conv2d, dense, depthwise_conv2d, conv2d_transpose | weight_quantized<L> |
/// | lstm_recurrence, gru_recurrence (recurrent kernels) | weight_quantized<L>, input never |
/// | embedding, tied_projection, tied_dense         | weight_quantized<L>, a quantizer per use |
/// | batch_norm                                     | quantized_batch_norm  |
/// | pools, activations (gelu too), flatten, reshape, dropout | input_quantized<L> |
/// | zero_padding2d, cropping2d, upsampling2d, layer_norm, slice | input_quantized<L> |
/// | add, concatenate, multiply, subtract, attention_scores, correlation | each_input_quantized<L> |
/// | sequential<L...>                               | sequential<quantize_t<L>...> |
/// | quant_dense, quant_conv2d, quant_depthwise_conv2d, quant_separable_conv2d | itself |
///
/// Where the built-in twins are quantized is the scheme's decision (quantization_scheme.hpp:
/// NVIDIA's supported-layer matrix by default), and a spec's over it: they are registered
/// with `quantized_by_default = false`, so a scheme that does not list a built-in type
/// leaves it alone. (A user's specialization that says nothing is quantized by default,
/// NVIDIA's rule for a new wrapper.) Every layer that can feed a QDQ placement decision is
/// wrapped, so a traced pass sees activations and dropout in a conv -> bn -> relu chain.

#include <string>
#include <vector>

#include "../config.hpp"
#include "compiled_twins.hpp"
#include "../layers/activation.hpp"
#include "../layers/add.hpp"
#include "../layers/attention.hpp"
#include "../layers/average_pool2d.hpp"
#include "../layers/batch_norm.hpp"
#include "../layers/broadcasting.hpp"
#include "../layers/concatenate.hpp"
#include "../layers/cropping2d.hpp"
#include "../layers/conv2d.hpp"
#include "../layers/conv2d_transpose.hpp"
#include "../layers/correlation.hpp"
#include "../layers/dense.hpp"
#include "../layers/depthwise_conv2d.hpp"
#include "../layers/dropout.hpp"
#include "../layers/embedding.hpp"
#include "../layers/flatten.hpp"
#include "../layers/gelu.hpp"
#include "../layers/global_average_pool2d.hpp"
#include "../layers/global_max_pool2d.hpp"
#include "../layers/gru.hpp"
#include "../layers/layer_norm.hpp"
#include "../layers/lstm.hpp"
#include "../layers/max_pool2d.hpp"
#include "../layers/multiply.hpp"
#include "../layers/reshape.hpp"
#include "../layers/sequential.hpp"
#include "../layers/slicing.hpp"
#include "../layers/tied_dense.hpp"
#include "../layers/tied_projection.hpp"
#include "../layers/upsampling2d.hpp"
#include "../layers/zero_padding2d.hpp"
#include "../wrappers/input_quantized.hpp"
#include "../wrappers/each_input_quantized.hpp"
#include "../wrappers/quant_conv2d.hpp"
#include "../wrappers/quant_dense.hpp"
#include "../wrappers/quant_depthwise_conv2d.hpp"
#include "../wrappers/quant_separable_conv2d.hpp"
#include "../wrappers/quantized_batch_norm.hpp"
#include "../wrappers/weight_quantized.hpp"
#include "quantize.hpp"

namespace xq {

/// A built-in registration: the twin `Twin`, quantized by default (for a scheme that
/// does not list the type) or not.
template <class Twin, bool On>
struct registered_twin {
  using type = Twin;
  static constexpr bool quantized_by_default = On;
};

template <> struct quantize<conv2d> : registered_twin<weight_quantized<conv2d>, false> {};
template <> struct quantize<dense> : registered_twin<weight_quantized<dense>, false> {};
template <> struct quantize<depthwise_conv2d> : registered_twin<weight_quantized<depthwise_conv2d>, false> {};
/// NVIDIA quantizes depthwise kernels (KH, KW, C, M) per input channel C (axis 2).
template <> struct kernel_channel_axis<depthwise_conv2d> : std::integral_constant<int, 2> {};
template <> struct kernel_block_axis<conv2d> : std::integral_constant<int, 2> {};
template <> struct kernel_block_axis<depthwise_conv2d> : std::integral_constant<int, 2> {};
/// A transposed conv's kernel is (KH, KW, F, C): per output channel F is axis 2. Outside
/// NVIDIA's matrix (its toolkit has no Conv2DTranspose wrapper): quantized when asked.
template <> struct quantize<conv2d_transpose> : registered_twin<weight_quantized<conv2d_transpose>, false> {};
template <> struct kernel_channel_axis<conv2d_transpose> : std::integral_constant<int, 2> {};
template <> struct kernel_block_axis<conv2d_transpose> : std::integral_constant<int, 3> {};

template <> struct quantize<batch_norm> : registered_twin<quantized_batch_norm, false> {};

template <> struct quantize<average_pool2d> : registered_twin<input_quantized<average_pool2d>, false> {};
template <> struct quantize<global_average_pool2d> : registered_twin<input_quantized<global_average_pool2d>, false> {};
template <> struct quantize<max_pool2d> : registered_twin<input_quantized<max_pool2d>, false> {};
template <> struct quantize<global_max_pool2d> : registered_twin<input_quantized<global_max_pool2d>, false> {};
template <> struct quantize<relu> : registered_twin<input_quantized<relu>, false> {};
template <> struct quantize<relu6> : registered_twin<input_quantized<relu6>, false> {};
template <> struct quantize<leaky_relu> : registered_twin<input_quantized<leaky_relu>, false> {};
template <> struct quantize<sigmoid> : registered_twin<input_quantized<sigmoid>, false> {};
template <> struct quantize<tanh> : registered_twin<input_quantized<tanh>, false> {};
template <> struct quantize<swish> : registered_twin<input_quantized<swish>, false> {};
template <> struct quantize<softmax> : registered_twin<input_quantized<softmax>, false> {};
template <> struct quantize<flatten> : registered_twin<input_quantized<flatten>, false> {};
template <> struct quantize<reshape> : registered_twin<input_quantized<reshape>, false> {};
template <> struct quantize<dropout> : registered_twin<input_quantized<dropout>, false> {};
template <> struct quantize<gelu> : registered_twin<input_quantized<gelu>, false> {};
template <> struct quantize<zero_padding2d> : registered_twin<input_quantized<zero_padding2d>, false> {};
template <> struct quantize<cropping2d> : registered_twin<input_quantized<cropping2d>, false> {};
template <> struct quantize<upsampling2d> : registered_twin<input_quantized<upsampling2d>, false> {};
/// Layer norm keeps float statistics (as TensorRT and ONNX Runtime run it): its input is
/// quantized when a scheme or spec asks, its gamma and beta stay float.
template <> struct quantize<layer_norm> : registered_twin<input_quantized<layer_norm>, false> {};
template <> struct quantize<slice> : registered_twin<input_quantized<slice>, false> {};

template <> struct quantize<add> : registered_twin<each_input_quantized<add>, false> {};
template <> struct quantize<concatenate> : registered_twin<each_input_quantized<concatenate>, false> {};
template <> struct quantize<multiply> : registered_twin<each_input_quantized<multiply>, false> {};
template <> struct quantize<subtract> : registered_twin<each_input_quantized<subtract>, false> {};
/// Attention's product of queries and keys: its inputs are quantized when a spec asks.
template <> struct quantize<attention_scores> : registered_twin<each_input_quantized<attention_scores>, false> {};
/// An optical-flow cost volume's two feature maps, quantized when a spec asks.
template <> struct quantize<correlation> : registered_twin<each_input_quantized<correlation>, false> {};

/// Each use of a tied table has its own kernel quantizer: the embedding's lookup and
/// the tied projection are quantized (or not) separately, one weight either way. Both
/// quantize the table per row (axis 0: a token's vector, the projection's output channel).
template <> struct quantize<embedding> : registered_twin<weight_quantized<embedding>, false> {};
template <> struct kernel_channel_axis<embedding> : std::integral_constant<int, 0> {};
template <> struct kernel_block_axis<embedding> : std::integral_constant<int, 1> {};
template <> struct quantizable_input<embedding> : std::false_type {};  // ids
template <> struct quantize<tied_projection> : registered_twin<weight_quantized<tied_projection>, false> {};
template <> struct quantize<tied_dense> : registered_twin<weight_quantized<tied_dense>, false> {};
template <> struct kernel_channel_axis<tied_projection> : std::integral_constant<int, 0> {};
template <> struct kernel_block_axis<tied_projection> : std::integral_constant<int, 1> {};

/// A recurrent layer's loop: its recurrent kernel is quantized per output column (a gate's
/// unit), as a dense kernel is. Its input is the projection's output, a sum the dense
/// child already produced from a quantized input: never quantized again.
template <> struct quantize<lstm_recurrence> : registered_twin<weight_quantized<lstm_recurrence>, false> {};
template <> struct quantizable_input<lstm_recurrence> : std::false_type {};
template <> struct quantize<gru_recurrence> : registered_twin<weight_quantized<gru_recurrence>, false> {};
template <> struct quantizable_input<gru_recurrence> : std::false_type {};

/// A sequential's twin is the sequential of its layers' twins, with the same names.
template <class... Layers>
struct quantize<sequential<Layers...>> {
  using type = sequential<quantize_t<Layers>...>;
  static type apply(const sequential<Layers...>& model) {
    type twin = std::apply([](const auto&... l) { return type(quantize_layer(l)...); }, model.children());
    twin.name(model.name());
    return twin;
  }
};

/// A quantizer used as a layer (Larq's `ste_sign()` in a sequential, a user's) is its own
/// twin: it is quantization already.
template <class Q>
struct quantize<Q, std::enable_if_t<is_quantizer_v<Q>>> {
  using type = Q;
};

/// A twin quantizes to itself (quantizing twice is harmless).
template <class Layer> struct quantize<weight_quantized<Layer>> { using type = weight_quantized<Layer>; };
template <class Layer> struct quantize<input_quantized<Layer>> { using type = input_quantized<Layer>; };
template <class Layer> struct quantize<each_input_quantized<Layer>> { using type = each_input_quantized<Layer>; };
template <> struct quantize<quantized_batch_norm> { using type = quantized_batch_norm; };

/// Larq's quant layers already carry their own quantizers: their twin is a copy of
/// themselves (sharing the parameters), outside every scheme's QDQ placement.
template <class InputQ, class KernelQ>
struct quantize<quant_dense<InputQ, KernelQ>> { using type = quant_dense<InputQ, KernelQ>; };
template <class InputQ, class KernelQ>
struct quantize<quant_conv2d<InputQ, KernelQ>> { using type = quant_conv2d<InputQ, KernelQ>; };
template <class InputQ, class DepthwiseQ>
struct quantize<quant_depthwise_conv2d<InputQ, DepthwiseQ>> {
  using type = quant_depthwise_conv2d<InputQ, DepthwiseQ>;
};
template <class InputQ, class DepthwiseQ, class PointwiseQ>
struct quantize<quant_separable_conv2d<InputQ, DepthwiseQ, PointwiseQ>> {
  using type = quant_separable_conv2d<InputQ, DepthwiseQ, PointwiseQ>;
};

/// The type names of the built-in layers (for the error about an unknown
/// `quantization_spec::add_type` name; a user's layer is known by being in the model).
XQ_DECL const std::vector<std::string>& builtin_layer_types();

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/registry.ipp"
#else
namespace xq {
XQ_REGISTRY_INSTANTIATIONS(extern template)  // compiled once in the library: compiled_twins.hpp
}  // namespace xq
#endif
