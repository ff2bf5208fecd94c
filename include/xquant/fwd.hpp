#pragma once
/// \file fwd.hpp
/// Declarations of xquant's layer, quantizer and wrapper types, with the default template
/// arguments of the wrappers (they are given here, once; the defining headers include this
/// one). A trait or a registry can then be specialized on a type without its definition
/// (xtensor's xtensor_forward.hpp is the model): deploy's forms (deploy/graph/) are declared
/// for every built-in layer while a program includes only the layers it uses.

namespace xq {

// layers/
class conv2d;
class dense;
class depthwise_conv2d;
class conv2d_transpose;
class max_pool2d;
class average_pool2d;
class global_average_pool2d;
class global_max_pool2d;
class batch_norm;
class layer_norm;
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
class gelu;
class add;
class subtract;
class multiply;
class concatenate;
class embedding;
class tied_projection;
class tied_dense;
class zero_padding2d;
class cropping2d;
class slice;
class upsampling2d;
class attention_scores;
class correlation;
class lstm_recurrence;
class gru_recurrence;

// quantizers/
class quantizer_base;
class fake_quantizer;
class moving_average_quantizer;
class lsq_quantizer;
class dorefa;
class ste_sign;
class approx_sign;
class swish_sign;
class ste_heaviside;
class magnitude_aware_sign;
class ste_tern;
class noop_quantizer;
struct no_quantizer;
struct quantization_grid;

// wrappers/
struct batch_norm_fold;
class site_quantizers;
class quantized_batch_norm;
template <class Self, class Layer>
class wrapped_layer;
template <class Self, class Layer>
class qdq_wrapper;
template <class Layer>
class weight_quantized;
template <class Layer, class Derived = void>
class input_quantized;
template <class Layer>
class each_input_quantized;
template <class InputQ = no_quantizer, class KernelQ = no_quantizer>
class quant_conv2d;
template <class InputQ = no_quantizer, class KernelQ = no_quantizer>
class quant_dense;
template <class InputQ = no_quantizer, class DepthwiseQ = no_quantizer>
class quant_depthwise_conv2d;
template <class InputQ = no_quantizer, class DepthwiseQ = no_quantizer, class PointwiseQ = no_quantizer>
class quant_separable_conv2d;

}  // namespace xq
