#pragma once
/// \file low_bit_presets.hpp
/// The peers' low-bit QAT configs by name: each returns the quantizers the config puts on a
/// linear layer's input (activation) and weight, with the numerics of the peer function that
/// config runs, so a user picks "what torchao does" or "what ModelOpt does" by name:
///
///  | preset | peer config | activation | weight |
///  |---|---|---|---|
///  | torchao_int8_dynamic_activation_intx_weight | torchao `Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.intB, weight_granularity=PerGroup(G))` (defaults int8, 32; 8da4w: B = 4) | int8 per token, asymmetric | intB symmetric groups of G |
///  | torchao_int4_weight_only | `Int4WeightOnlyConfig(group_size=G)` (128) | — | int4 groups, float zero point |
///  | torchao_float8_dynamic_activation_float8_weight | `Float8DynamicActivationFloat8WeightConfig(granularity=PerTensor() or PerRow())` | FP8 E4M3, divide | same |
///  | torchao_nvfp4_dynamic_activation_nvfp4_weight | `NVFP4DynamicActivationNVFP4WeightConfig(use_dynamic_per_tensor_scale)` | NVFP4 torchao (two-level, or one-level) | same |
///  | torchao_mx_dynamic_activation_mx_weight | `MXDynamicActivationMXWeightConfig()` (E4M3 elements, blocks of 32, RCEIL) | MX torchao_rceil | same |
///  | modelopt_nvfp4_default_cfg | ModelOpt `NVFP4_DEFAULT_CFG` | NVFP4 modelopt_qtensor | same |
///  | modelopt_mxfp4_default_cfg | `MXFP4_DEFAULT_CFG` | MXFP4 modelopt_mxfp4 | same |
///  | modelopt_mxfp8_default_cfg | `MXFP8_DEFAULT_CFG` | MXFP8 modelopt_mxfp8 (`MXFP8QTensor`) | same |
///  | transformer_engine_nvfp4_block_scaling | TE `NVFP4BlockScaling` (its reference recipe) | NVFP4 1x16 | NVFP4 16x16 tiles |
///  | transformer_engine_float8_current_scaling | TE `Float8CurrentScaling` (its reference recipe) | FP8 E4M3 per tensor, multiply | same |
///
/// ModelOpt's own QAT forward for its NVFP4/MX configs is a GPU kernel (the Triton
/// fp4_fake_quant_block, or its CUDA extension) that no CPU can run; its presets here use the
/// numerics of what ModelOpt exports for deployment (NVFP4QTensor, MXFP4QTensor), so a model
/// trained with them deploys with the same codes. TE's random Hadamard transform and
/// stochastic rounding (on gradients) are not reproduced.
///
/// Axes: activations are quantized along their last axis (features, as the peers' tokens).
/// Weights along `weight_axis`, default 0: the input axis of a Keras dense kernel (in, out),
/// the axis its product sums over, as the peers' blocks run along a torch weight's (out, in)
/// last axis (a Conv2D kernel HWIO: axis 2).

#include "../config.hpp"
#include "fp8_quantizer.hpp"
#include "intx_quantizer.hpp"
#include "mx_quantizer.hpp"
#include "nvfp4_quantizer.hpp"

namespace xq::presets {

/// The quantizers a config puts on a layer's input and on its weight.
template <class Activation, class Weight>
struct activation_and_weight {
  Activation activation;
  Weight weight;
};

XQ_DECL activation_and_weight<intx_quantizer, intx_quantizer> torchao_int8_dynamic_activation_intx_weight(
    int weight_bits = 8, int group_size = 32, int weight_axis = 0);
XQ_DECL intx_quantizer torchao_int4_weight_only(int group_size = 128, int weight_axis = 0);
XQ_DECL activation_and_weight<fp8_quantizer, fp8_quantizer> torchao_float8_dynamic_activation_float8_weight(
    low_bit::fp8_granularity granularity = low_bit::fp8_granularity::per_tensor, int weight_axis = 0);
XQ_DECL activation_and_weight<nvfp4_quantizer, nvfp4_quantizer> torchao_nvfp4_dynamic_activation_nvfp4_weight(
    bool use_dynamic_per_tensor_scale = true, int weight_axis = 0);
XQ_DECL activation_and_weight<mx_quantizer, mx_quantizer> torchao_mx_dynamic_activation_mx_weight(
    low_bit::element_type activation = low_bit::element_type::e4m3fn,
    low_bit::element_type weight = low_bit::element_type::e4m3fn, int block_size = 32, int weight_axis = 0);
XQ_DECL activation_and_weight<nvfp4_quantizer, nvfp4_quantizer> modelopt_nvfp4_default_cfg(int weight_axis = 0);
XQ_DECL activation_and_weight<mx_quantizer, mx_quantizer> modelopt_mxfp4_default_cfg(int weight_axis = 0);
XQ_DECL activation_and_weight<mx_quantizer, mx_quantizer> modelopt_mxfp8_default_cfg(int weight_axis = 0);
XQ_DECL activation_and_weight<nvfp4_quantizer, nvfp4_quantizer> transformer_engine_nvfp4_block_scaling(
    int weight_axis = 0);
XQ_DECL activation_and_weight<fp8_quantizer, fp8_quantizer> transformer_engine_float8_current_scaling();

}  // namespace xq::presets

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/low_bit_presets.ipp"
#endif
