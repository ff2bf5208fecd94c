#pragma once
/// \file quantization_scheme.ipp
/// The schemes' presets (transform/quantization_scheme.hpp).

#include <optional>

#include "../quantization_scheme.hpp"

namespace xq {

namespace detail {
XQ_DECL layer_defaults defaults(bool input, bool weight, bool output, bool enabled, bool per_channel,
                                std::optional<int> axis) {
  layer_defaults d;
  d.quantize_input = input;
  d.quantize_weight = weight;
  d.quantize_output = output;
  d.enabled_by_default = enabled;
  d.per_channel_weight = per_channel;
  d.weight_channel_axis = axis;
  return d;
}
}  // namespace detail

namespace schemes {

XQ_DECL quantization_scheme nvidia() {
  quantization_scheme s;
  s.name = "nvidia";
  quantizer_config q;  // 8-bit, symmetric, narrow, tf_qdq, last value
  q.numerics = quant_numerics::tf_qdq;
  q.tracking = range_tracking::last_value;
  s.input = s.weight = s.output = q;
  const layer_defaults weighted = detail::defaults(true, true, false, true, true);
  for (const char* t : {"conv2d", "dense", "depthwise_conv2d"}) s.layers[t] = weighted;
  // Not in NVIDIA's matrix, quantized as its weighted layers are: the transposed conv's
  // input and kernel, a recurrent layer's recurrent kernel (its projection is a dense).
  for (const char* t : {"conv2d_transpose", "lstm_recurrence", "gru_recurrence"}) s.layers[t] = weighted;
  for (const char* t : {"average_pool2d", "global_average_pool2d"}) s.layers[t] = detail::defaults(true, false, false, true);
  for (const char* t : {"max_pool2d", "batch_norm", "add", "concatenate", "multiply"})
    s.layers[t] = detail::defaults(true, false, false, false);
  // Not in NVIDIA's matrix: a tied table's uses are quantized only when a spec names them
  // (per row; an embedding's input, ids, never).
  for (const char* t : {"embedding", "tied_projection", "tied_dense"})
    s.layers[t] = detail::defaults(true, true, false, false, true);
  // A new wrapper is applied like the built-in ones of its kind.
  s.unlisted_weighted = weighted;
  s.unlisted_weightless = detail::defaults(true, false, false, true);
  return s;
}

XQ_DECL quantization_scheme tfmot() {
  quantization_scheme s;
  s.name = "tfmot";
  quantizer_config w;
  w.numerics = quant_numerics::tf_fake_quant;
  w.tracking = range_tracking::last_value;
  w.symmetric = true;
  w.narrow_range = true;
  quantizer_config a;
  a.numerics = quant_numerics::tf_fake_quant;
  a.tracking = range_tracking::moving_average;
  a.symmetric = false;
  a.narrow_range = false;
  a.ema_decay = 0.999;
  s.input = a;
  s.weight = w;
  s.output = a;
  s.layers["conv2d"] = detail::defaults(false, true, true, true, true);
  s.layers["depthwise_conv2d"] = detail::defaults(false, true, true, true, true, -1);
  s.layers["dense"] = detail::defaults(false, true, true, true, false);
  for (const char* t : {"relu", "relu6", "leaky_relu", "swish", "add", "concatenate", "average_pool2d",
                        "global_average_pool2d"})
    s.layers[t] = detail::defaults(false, false, true, true);
  // Per tensor: tfmot's Default8BitQuantizeRegistry quantizes per channel only Conv2D and
  // DepthwiseConv2D (whose filters are the kernel's last axis, where TF's per-channel
  // FakeQuant takes its ranges); every other weighted layer it knows, Dense included, per
  // tensor. Its registry leaves Conv2DTranspose out; per channel on a transposed conv's
  // filters (axis 2) would be a placement its own numerics reject.
  s.unlisted_weighted = detail::defaults(false, true, true, true, false);
  s.unlisted_weightless = detail::defaults(false, false, true, true);
  s.skip_output_before_fused_consumer = true;
  return s;
}

XQ_DECL quantization_scheme pytorch() {
  quantization_scheme s;
  s.name = "pytorch";
  quantizer_config w;
  w.numerics = quant_numerics::torch_fake_quant;
  w.tracking = range_tracking::moving_average;
  w.averaging_constant = 0.01;
  w.symmetric = true;
  w.narrow_range = false;
  quantizer_config a = w;
  a.symmetric = false;
  a.reduce_range = true;
  s.input = a;
  s.weight = w;
  s.output = a;
  for (const char* t : {"conv2d", "depthwise_conv2d", "dense"}) s.layers[t] = detail::defaults(false, true, true, true, true);
  for (const char* t : {"relu", "relu6", "leaky_relu", "swish", "add", "concatenate", "multiply",
                        "average_pool2d", "global_average_pool2d"})
    s.layers[t] = detail::defaults(false, false, true, true);
  s.unlisted_weighted = detail::defaults(false, true, true, true, true);
  s.unlisted_weightless = detail::defaults(false, false, true, true);
  s.skip_output_before_fused_consumer = true;
  return s;
}

}  // namespace schemes
}  // namespace xq
