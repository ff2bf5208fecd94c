#pragma once
/// \file registry.hpp
/// The default registry: the quantized twin of every built-in layer.
///
/// | layer                                          | twin                  |
/// |------------------------------------------------|-----------------------|
/// | conv2d, dense, depthwise_conv2d                | weight_quantized<L>   |
/// | embedding, tied_projection, tied_dense         | weight_quantized<L>, a quantizer per use |
/// | batch_norm                                     | quantized_batch_norm  |
/// | pools, activations, flatten, reshape, dropout  | input_quantized<L>    |
/// | add, concatenate, multiply                     | inputs_quantized<L>   |
/// | sequential<L...>                               | sequential<quantize_t<L>...> |
/// | quant_dense, quant_conv2d, quant_depthwise_conv2d, quant_separable_conv2d | itself |
///
/// Which of a twin's quantizers are on is not decided here but by the scheme
/// (quantization_scheme.hpp: NVIDIA's supported-layer matrix by default) and the
/// spec. Every layer that can feed a QDQ placement decision is wrapped, so a traced
/// pass sees activations and dropout in a conv -> bn -> relu chain.

#include "../layers/activation.hpp"
#include "../layers/add.hpp"
#include "../layers/average_pool2d.hpp"
#include "../layers/batch_norm.hpp"
#include "../layers/concatenate.hpp"
#include "../layers/conv2d.hpp"
#include "../layers/dense.hpp"
#include "../layers/depthwise_conv2d.hpp"
#include "../layers/dropout.hpp"
#include "../layers/embedding.hpp"
#include "../layers/flatten.hpp"
#include "../layers/global_average_pool2d.hpp"
#include "../layers/global_max_pool2d.hpp"
#include "../layers/max_pool2d.hpp"
#include "../layers/multiply.hpp"
#include "../wrappers/quant_conv2d.hpp"
#include "../wrappers/quant_dense.hpp"
#include "../wrappers/quant_depthwise_conv2d.hpp"
#include "../wrappers/quant_separable_conv2d.hpp"
#include "../layers/reshape.hpp"
#include "../layers/sequential.hpp"
#include "../layers/tied_dense.hpp"
#include "../layers/tied_projection.hpp"
#include "../wrappers/input_quantized.hpp"
#include "../wrappers/inputs_quantized.hpp"
#include "quantize.hpp"
#include "../wrappers/quantized_batch_norm.hpp"
#include "../wrappers/weight_quantized.hpp"

namespace xq {

template <> struct quantize<conv2d> { using type = weight_quantized<conv2d>; };
template <> struct quantize<dense> { using type = weight_quantized<dense>; };
template <> struct quantize<depthwise_conv2d> { using type = weight_quantized<depthwise_conv2d>; };
/// NVIDIA quantizes depthwise kernels (KH, KW, C, M) per input channel C (axis 2).
template <> struct kernel_channel_axis<depthwise_conv2d> : std::integral_constant<int, 2> {};

template <> struct quantize<batch_norm> { using type = quantized_batch_norm; };

template <> struct quantize<average_pool2d> { using type = input_quantized<average_pool2d>; };
template <> struct quantize<global_average_pool2d> { using type = input_quantized<global_average_pool2d>; };
template <> struct quantize<max_pool2d> { using type = input_quantized<max_pool2d>; };
template <> struct quantize<global_max_pool2d> { using type = input_quantized<global_max_pool2d>; };
template <> struct quantize<relu> { using type = input_quantized<relu>; };
template <> struct quantize<relu6> { using type = input_quantized<relu6>; };
template <> struct quantize<leaky_relu> { using type = input_quantized<leaky_relu>; };
template <> struct quantize<sigmoid> { using type = input_quantized<sigmoid>; };
template <> struct quantize<tanh> { using type = input_quantized<tanh>; };
template <> struct quantize<swish> { using type = input_quantized<swish>; };
template <> struct quantize<softmax> { using type = input_quantized<softmax>; };
template <> struct quantize<flatten> { using type = input_quantized<flatten>; };
template <> struct quantize<reshape> { using type = input_quantized<reshape>; };
template <> struct quantize<dropout> { using type = input_quantized<dropout>; };

template <> struct quantize<add> { using type = inputs_quantized<add>; };
template <> struct quantize<concatenate> { using type = inputs_quantized<concatenate>; };
template <> struct quantize<multiply> { using type = inputs_quantized<multiply>; };

/// Each use of a tied table has its own kernel quantizer: the embedding's lookup and
/// the tied projection are quantized (or not) separately, one weight either way. Both
/// quantize the table per row (axis 0: a token's vector, the projection's output channel).
template <> struct quantize<embedding> { using type = weight_quantized<embedding>; };
template <> struct kernel_channel_axis<embedding> : std::integral_constant<int, 0> {};
template <> struct quantizable_input<embedding> : std::false_type {};  // ids
template <> struct quantize<tied_projection> { using type = weight_quantized<tied_projection>; };
template <> struct quantize<tied_dense> { using type = weight_quantized<tied_dense>; };
template <> struct kernel_channel_axis<tied_projection> : std::integral_constant<int, 0> {};

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

/// A twin quantizes to itself (quantizing twice is harmless).
template <class Layer> struct quantize<weight_quantized<Layer>> { using type = weight_quantized<Layer>; };
template <class Layer> struct quantize<input_quantized<Layer>> { using type = input_quantized<Layer>; };
template <class Layer> struct quantize<inputs_quantized<Layer>> { using type = inputs_quantized<Layer>; };
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

}  // namespace xq
