#pragma once
/// \file low_bit_presets.ipp
/// The peers' low-bit configs (quantizers/low_bit_presets.hpp).

#include "../low_bit_presets.hpp"

namespace xq::presets {

XQ_DECL activation_and_weight<intx_quantizer, intx_quantizer> torchao_int8_dynamic_activation_intx_weight(
    int weight_bits, int group_size, int weight_axis) {
  low_bit::intx_spec a, w;
  a.scheme = low_bit::intx_scheme::intx_per_token;
  a.bits = 8;
  w.scheme = low_bit::intx_scheme::intx_symmetric;
  w.bits = weight_bits;
  w.group_size = group_size;
  w.axis = weight_axis;
  return {intx_quantizer(a), intx_quantizer(w)};
}

XQ_DECL intx_quantizer torchao_int4_weight_only(int group_size, int weight_axis) {
  low_bit::intx_spec w;
  w.scheme = low_bit::intx_scheme::int4_weight_only;
  w.group_size = group_size;
  w.axis = weight_axis;
  return intx_quantizer(w);
}

XQ_DECL activation_and_weight<fp8_quantizer, fp8_quantizer> torchao_float8_dynamic_activation_float8_weight(
    low_bit::fp8_granularity granularity, int weight_axis) {
  low_bit::fp8_spec a, w;
  a.granularity = w.granularity = granularity;
  w.axis = weight_axis;
  return {fp8_quantizer(a), fp8_quantizer(w)};
}

XQ_DECL activation_and_weight<nvfp4_quantizer, nvfp4_quantizer> torchao_nvfp4_dynamic_activation_nvfp4_weight(
    bool use_dynamic_per_tensor_scale, int weight_axis) {
  low_bit::nvfp4_spec a, w;
  a.variant = w.variant =
      use_dynamic_per_tensor_scale ? low_bit::nvfp4_variant::torchao : low_bit::nvfp4_variant::torchao_one_level;
  w.axis = weight_axis;
  return {nvfp4_quantizer(a), nvfp4_quantizer(w)};
}

XQ_DECL activation_and_weight<mx_quantizer, mx_quantizer> torchao_mx_dynamic_activation_mx_weight(
    low_bit::element_type activation, low_bit::element_type weight, int block_size, int weight_axis) {
  low_bit::mx_spec a, w;
  a.variant = w.variant = low_bit::mx_variant::torchao_rceil;
  a.element.type = activation;
  w.element.type = weight;
  a.block_size = w.block_size = block_size;
  w.axis = weight_axis;
  return {mx_quantizer(a), mx_quantizer(w)};
}

XQ_DECL activation_and_weight<nvfp4_quantizer, nvfp4_quantizer> modelopt_nvfp4_default_cfg(int weight_axis) {
  low_bit::nvfp4_spec a, w;
  a.variant = w.variant = low_bit::nvfp4_variant::modelopt_qtensor;
  w.axis = weight_axis;
  return {nvfp4_quantizer(a), nvfp4_quantizer(w)};
}

XQ_DECL activation_and_weight<mx_quantizer, mx_quantizer> modelopt_mxfp4_default_cfg(int weight_axis) {
  low_bit::mx_spec a, w;
  a.variant = w.variant = low_bit::mx_variant::modelopt_mxfp4;
  w.axis = weight_axis;
  return {mx_quantizer(a), mx_quantizer(w)};
}

XQ_DECL activation_and_weight<mx_quantizer, mx_quantizer> modelopt_mxfp8_default_cfg(int weight_axis) {
  low_bit::mx_spec a, w;
  a.variant = w.variant = low_bit::mx_variant::modelopt_mxfp8;
  a.element.type = w.element.type = low_bit::element_type::e4m3fn;
  w.axis = weight_axis;
  return {mx_quantizer(a), mx_quantizer(w)};
}

XQ_DECL activation_and_weight<nvfp4_quantizer, nvfp4_quantizer> transformer_engine_nvfp4_block_scaling(
    int weight_axis) {
  low_bit::nvfp4_spec a, w;
  a.variant = w.variant = low_bit::nvfp4_variant::transformer_engine;
  w.tiles_16x16 = true;
  w.axis = weight_axis;
  return {nvfp4_quantizer(a), nvfp4_quantizer(w)};
}

XQ_DECL activation_and_weight<fp8_quantizer, fp8_quantizer> transformer_engine_float8_current_scaling() {
  low_bit::fp8_spec a, w;
  a.variant = w.variant = low_bit::fp8_variant::transformer_engine;
  a.granularity = w.granularity = low_bit::fp8_granularity::per_tensor;
  return {fp8_quantizer(a), fp8_quantizer(w)};
}

}  // namespace xq::presets
