#pragma once
/// \file wrapper_settings.hpp
/// What one NVIDIA-style wrapper does: which of its tensors are fake-quantized and how.
/// `quantize_model` computes one per wrapper from the scheme, the spec and the mode.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../quantizers/quantizer_config.hpp"

namespace xq {

struct wrapper_settings {
  wrapper_settings() = default;
  XQ_SPECIAL_MEMBERS(wrapper_settings)

  bool quantize_input = false;   ///< QDQ on the input (merges: on the inputs of `input_indices`)
  bool quantize_weight = false;  ///< QDQ on the kernel (weighted layers)
  bool quantize_output = false;  ///< QDQ on the output (tfmot's and PyTorch's placement)
  /// Merge layers: the input indices that get a QDQ (NVIDIA's quantization_index);
  /// empty means every input.
  std::vector<std::size_t> input_indices;
  quantizer_config input, weight, output;
  /// The kernel's channel axis for per-channel weights when the scheme sets one (tfmot
  /// quantizes depthwise kernels on the last axis); else `kernel_channel_axis<L>`.
  std::optional<int> weight_channel_axis;
  /// A layer called from several places keeps one range per call site instead of one
  /// shared range (see site_quantizers.hpp).
  bool per_call_site = false;
};

namespace detail {

/// Throws argument_error naming `path` unless every entry of `indices` is 0: a layer of
/// one input has no other to quantize (a spec's quantization_index beyond it is a mistake).
XQ_DECL void check_single_input_indices(const std::string& path, const std::vector<std::size_t>& indices);

/// A weighted layer's formats, fitted to its kernel: the weight's blocks along `block_axis`
/// (unless the format keeps its own axis); and where a format cannot quantize the kernel's
/// length on that axis (torchao's MX and NVFP4 refuse a partial block), both the input and
/// the weight keep the integer grid, as the peers' filters leave such a layer (a first conv
/// of 3 channels) in higher precision. `kernel_shape` empty: the layer is not built yet.
XQ_DECL void fit_formats(quantizer_config& input, quantizer_config& weight, const std::vector<std::size_t>& kernel_shape,
                         int block_axis);

}  // namespace detail

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/wrapper_settings.ipp"
#endif
