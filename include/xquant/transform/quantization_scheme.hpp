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
///    per tensor for dense and for every layer tfmot does not list (conv2d_transpose, a
///    user's weighted layer: TF's FakeQuant ranges only the last axis). Outputs: TF FakeQuant, moving average (0.999 from ±6),
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
/// channel; tfmot: its kernel per tensor and its output; PyTorch: its kernel per channel
/// and its output); otherwise it is quantized only
/// where a spec names it. A user layer can also be given its own entry:
/// `scheme.layers["my_layer"] = {...}`.

#include <map>
#include <optional>
#include <string>

#include "../config.hpp"
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
/// A layer_defaults from its fields, in declaration order.
XQ_DECL layer_defaults defaults(bool input, bool weight, bool output, bool enabled = true, bool per_channel = false,
                                std::optional<int> axis = std::nullopt);
}  // namespace detail

namespace schemes {

/// NVIDIA's TF2 toolkit (the default; see the file comment).
XQ_DECL quantization_scheme nvidia();
/// tfmot's Default8BitQuantizeRegistry (see the file comment).
XQ_DECL quantization_scheme tfmot();
/// PyTorch's default QAT qconfig, x86/fbgemm (see the file comment).
XQ_DECL quantization_scheme pytorch();

}  // namespace schemes
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantization_scheme.ipp"
#endif
