#pragma once
/// \file wrapper_forms.hpp
/// The deploy forms of the quantized twins (the protocol: layer_builder.hpp). A wrapper
/// attaches its quantizers to the call — input QDQ sites (one per input for a merge's
/// twin, per call site where the ranges are), the kernel quantizer and a folded batch
/// norm, the output QDQ site, Larq's input and kernel quantizers and pad_values — and
/// then describes its float layer with the float layer's own form. So any layer with a
/// form deploys quantized through any wrapper, a user's wrapper of a user's layer too
/// (NVIDIA's "new layers supported by defining a wrapper"); a wrapper of a layer with no
/// form has none either, and the build names the float layer's type.

#include <cstddef>
#include <type_traits>

#include "../../fwd.hpp"
#include "deploy_form.hpp"
#include "../../core/error.hpp"
#include "layer_builder.hpp"

namespace xq::deploy {

namespace detail {
/// A Larq quant layer's quantizer member: a quantizer, or no_quantizer (nothing to attach).
template <class Q>
inline constexpr bool is_quantizer_v = std::is_base_of_v<quantizer_base, Q>;
}  // namespace detail

template <class Layer, std::enable_if_t<has_deploy_form_v<Layer>, int> = 0>
value_id describe_deployment(const weight_quantized<Layer>& w, layer_builder& b) {
  // An adapter beside the kernel is not the kernel yet: merging it is the caller's step.
  if (w.adapter())
    throw argument_error(w.path(), "LoRA adapters merged into their kernels before deployment (xq::merge_lora_adapters)",
                         "an attached adapter");
  b.quantize_input(0, w.input_quantizer());
  b.quantize_output(w.output_quantizer());
  b.quantize_kernel(w.weight_quantizer());
  if (w.folded()) b.fold(w.folded());
  return describe_deployment(w.float_layer(), b);
}

template <class Layer, class Derived, std::enable_if_t<has_deploy_form_v<Layer>, int> = 0>
value_id describe_deployment(const input_quantized<Layer, Derived>& w, layer_builder& b) {
  b.quantize_input(0, w.input_quantizer());
  b.quantize_output(w.output_quantizer());
  return describe_deployment(w.float_layer(), b);
}

/// A merge's twin: one QDQ site per input (NVIDIA's quantization_index).
template <class Layer, std::enable_if_t<has_deploy_form_v<Layer>, int> = 0>
value_id describe_deployment(const each_input_quantized<Layer>& w, layer_builder& b) {
  // The sites are made on the first call (the traced pass made them): read, not added.
  auto& sites = const_cast<each_input_quantized<Layer>&>(w);
  for (std::size_t k = 0; k < w.inputs_seen() && k < b.input_count(); ++k) b.quantize_input(k, sites.input_quantizer(k));
  b.quantize_output(w.output_quantizer());
  return describe_deployment(w.float_layer(), b);
}

/// A batch norm's twin; folded into the conv before it when quantize_model folded it.
XQ_DECL value_id describe_deployment(const quantized_batch_norm& w, layer_builder& b);

template <class InputQ, class KernelQ>
value_id describe_deployment(const quant_conv2d<InputQ, KernelQ>& l, layer_builder& b) {
  if constexpr (detail::is_quantizer_v<InputQ>) b.quantize_input(0, l.input_quantizer);
  if constexpr (detail::is_quantizer_v<KernelQ>) b.quantize_kernel(l.kernel_quantizer);
  b.set_pad_value(l.pad_values());
  return describe_deployment(l.float_layer(), b);
}

template <class InputQ, class KernelQ>
value_id describe_deployment(const quant_dense<InputQ, KernelQ>& l, layer_builder& b) {
  if constexpr (detail::is_quantizer_v<InputQ>) b.quantize_input(0, l.input_quantizer);
  if constexpr (detail::is_quantizer_v<KernelQ>) b.quantize_kernel(l.kernel_quantizer);
  return describe_deployment(l.float_layer(), b);
}

template <class InputQ, class DepthwiseQ>
value_id describe_deployment(const quant_depthwise_conv2d<InputQ, DepthwiseQ>& l, layer_builder& b) {
  if constexpr (detail::is_quantizer_v<InputQ>) b.quantize_input(0, l.input_quantizer);
  if constexpr (detail::is_quantizer_v<DepthwiseQ>) b.quantize_kernel(l.depthwise_quantizer);
  b.set_pad_value(l.pad_values());
  return describe_deployment(l.float_layer(), b);
}

}  // namespace xq::deploy
