#pragma once
/// \file quantization_scheme.hpp
/// A scheme: which layers get QDQ where by default, and with which numerics. Three
/// presets reproduce the peers:
///
///  - `schemes::nvidia()` (the default): NVIDIA's TF2 toolkit. QDQ on inputs and
///    weights, never on outputs; 8-bit, symmetric, narrow range, ranges from the
///    current tensor (last value), TF quantize_and_dequantize numerics (half to
///    even). Its supported-layer matrix:
///
///    | layer                                  | input | weight                    | default |
///    |----------------------------------------|-------|---------------------------|---------|
///    | conv2d, dense, depthwise_conv2d        | yes   | per channel (depthwise: axis 2) | on |
///    | average_pool2d, global_average_pool2d  | yes   | -                         | on      |
///    | max_pool2d, batch_norm                 | yes   | -                         | off until a spec names it |
///    | add, concatenate, multiply             | yes, per input index | -          | off until a spec names it |
///
///  - `schemes::tfmot()`: tfmot's Default8BitQuantizeRegistry. Weights: TF FakeQuant,
///    last value, symmetric narrow, per channel (last axis) for conv2d and depthwise,
///    per tensor for dense. Outputs: TF FakeQuant, moving average (0.999 from ±6),
///    asymmetric, of conv2d/dense/depthwise (linear activation), relu, relu6,
///    leaky_relu, swish, add, concatenate and the average pools. As its layout
///    transforms do, a layer's output is left alone when its one consumer is a
///    batch_norm or an activation (needs a traced pass).
///  - `schemes::pytorch()`: PyTorch's default QAT qconfig (x86/fbgemm): weights
///    per-channel symmetric qint8 with a moving-average observer (0.01), activations
///    quint8 affine with reduce_range on layer outputs, PyTorch fake-quant numerics;
///    the same output placement as tfmot (fused conv-bn-relu quantizes after relu).
///
/// A layer type absent from `layers` follows its `quantize<L>` specialization: when it
/// is quantized by default (a user's new layer, unless its specialization says
/// otherwise; transform/quantize.hpp), the scheme's `unlisted_weighted` or
/// `unlisted_weightless` placement applies (NVIDIA: its inputs, and its kernel per
/// channel; tfmot and PyTorch: its kernel and its output); otherwise it is quantized only
/// where a spec names it. A user layer can also be given its own entry:
/// `scheme.layers["my_layer"] = {...}`.

#include <map>
#include <optional>
#include <string>

#include "../quantizers/quantizer_config.hpp"

namespace xq {

/// A layer type's defaults in a scheme.
struct layer_defaults {
  bool quantize_input = false;
  bool quantize_weight = false;
  bool quantize_output = false;
  /// Off: the layer is wrapped, but quantized only when a spec names it (NVIDIA's
  /// DISABLED_LAYER_QUANTIZATION_DEFAULT).
  bool enabled_by_default = true;
  bool per_channel_weight = false;
  /// Overrides `kernel_channel_axis<L>` (tfmot quantizes depthwise kernels on the last axis).
  std::optional<int> weight_channel_axis;
};

struct quantization_scheme {
  std::string name;
  quantizer_config input, weight, output;
  std::map<std::string, layer_defaults> layers;  ///< by layer type ("conv2d")
  /// Where a layer type the scheme does not list is quantized, when its twin is quantized
  /// by default: one with a kernel, one without.
  layer_defaults unlisted_weighted, unlisted_weightless;
  /// A layer's output QDQ is dropped when its single consumer is a batch_norm or an
  /// activation (tfmot's transforms, PyTorch's fusion); applied on a traced pass.
  bool skip_output_before_fused_consumer = false;
};

namespace detail {
inline layer_defaults defaults(bool input, bool weight, bool output, bool enabled = true, bool per_channel = false,
                               std::optional<int> axis = std::nullopt) {
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

inline quantization_scheme nvidia() {
  quantization_scheme s;
  s.name = "nvidia";
  quantizer_config q;  // 8-bit, symmetric, narrow, tf_qdq, last value
  q.numerics = quant_numerics::tf_qdq;
  q.tracking = range_tracking::last_value;
  s.input = s.weight = s.output = q;
  const layer_defaults weighted = detail::defaults(true, true, false, true, true);
  for (const char* t : {"conv2d", "dense", "depthwise_conv2d"}) s.layers[t] = weighted;
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

inline quantization_scheme tfmot() {
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
  s.unlisted_weighted = detail::defaults(false, true, true, true, true);
  s.unlisted_weightless = detail::defaults(false, false, true, true);
  s.skip_output_before_fused_consumer = true;
  return s;
}

inline quantization_scheme pytorch() {
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
