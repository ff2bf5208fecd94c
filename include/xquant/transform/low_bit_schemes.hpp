#pragma once
/// \file low_bit_schemes.hpp
/// The peers' low-bit QAT recipes as schemes (quantization_scheme.hpp): NVIDIA's placement —
/// the inputs and kernels of conv2d, dense (attention's projections, a recurrent layer's input
/// projection), depthwise_conv2d, conv2d_transpose and the recurrent kernels; embedding,
/// tied_projection and tied_dense when a spec names them — with the recipe's formats
/// (quantizers/low_bit_format.hpp) on the weights and inputs:
///
///  | scheme | peer recipe | input | weight |
///  |---|---|---|---|
///  | torchao_8da4w(G) | torchao `Int8DynamicActivationIntxWeightConfig(torch.int4, PerGroup(G))` (G 32 or 128) | int8 per token, asymmetric, dynamic | int4 symmetric groups of G |
///  | torchao_intx_weight_only(B, G) | `IntxWeightOnlyConfig(torch.intB, PerGroup(G))` | — | intB symmetric groups of G |
///  | torchao_int4_weight_only(G) | `Int4WeightOnlyConfig(group_size=G)` (QAT: Int4WeightFakeQuantizer) | — | int4 groups, float zero point |
///  | torchao_float8_dynamic(g) | `Float8DynamicActivationFloat8WeightConfig(PerRow() / PerTensor())` | FP8 E4M3, dynamic | FP8 E4M3 |
///  | mx(w, a) | `MXDynamicActivationMXWeightConfig` (RCEIL, blocks of 32) | MX element `a` | MX element `w` |
///  | mx_weight_only(w) | MX weights only (gpt-oss's MXFP4 MLP weights) | — | MX element `w` |
///  | nvfp4(one_level) | `NVFP4DynamicActivationNVFP4WeightConfig` (two-level: a float32 tensor scale) | NVFP4 | NVFP4 |
///  | nvfp4_weight_only() | NVFP4 weights only | — | NVFP4 |
///  | w4a8(G) | int4 weights as torchao's 8da4w, int8 inputs as NVIDIA's QDQ (per tensor, calibrated) | int8 per tensor | int4 symmetric groups of G |
///  | with_range_learning(s) | `s` with `IntxFakeQuantizeConfig(..., range_learning=True)` weights | `s`'s | `s`'s groups, learned scales |
///
/// A weight's blocks run along its layer's reduction axis (`kernel_block_axis<L>`), an
/// input's along its last axis (a token's features; a pixel's channels). A scheme with
/// low-bit inputs leaves the pools' inputs alone (the peers quantize the linear layers).
/// Batch norms fold before block quantization (`quantize_options::fold_batch_norm`). Mix
/// formats by spec: `layer_quantization::weight_format` / `input_format` for a path or a type.

#include "../config.hpp"
#include "../numerics/low_bit_specs.hpp"
#include "quantization_scheme.hpp"

namespace xq::schemes {

XQ_DECL quantization_scheme torchao_8da4w(int group_size = 32);
XQ_DECL quantization_scheme torchao_intx_weight_only(int bits = 4, int group_size = 32);
XQ_DECL quantization_scheme torchao_int4_weight_only(int group_size = 128);
XQ_DECL quantization_scheme torchao_float8_dynamic(low_bit::fp8_granularity granularity = low_bit::fp8_granularity::per_row);
XQ_DECL quantization_scheme mx(low_bit::element_type weight = low_bit::element_type::e2m1,
                               low_bit::element_type input = low_bit::element_type::e2m1);
XQ_DECL quantization_scheme mx_weight_only(low_bit::element_type weight = low_bit::element_type::e2m1);
XQ_DECL quantization_scheme nvfp4(bool one_level = false);
XQ_DECL quantization_scheme nvfp4_weight_only();
XQ_DECL quantization_scheme w4a8(int group_size = 32);
/// `s` with torchao's range learning on its integer weight groups (intx_spec::range_learning:
/// the first call's scales become trainable parameters; torchao_8da4w, w4a8 and
/// torchao_intx_weight_only have such groups). argument_error for a scheme without them.
XQ_DECL quantization_scheme with_range_learning(quantization_scheme s);

}  // namespace xq::schemes

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/low_bit_schemes.ipp"
#endif
