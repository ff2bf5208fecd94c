#pragma once
/// \file batch_norm_folding.hpp
/// The operations of batch-norm folding for QAT, as PyTorch's ConvBn QAT modules do
/// it (torch/ao/nn/intrinsic/qat/modules/conv_fused.py, `_forward_approximate`):
///
///   s = gamma / sqrt(moving_variance + epsilon)        per output channel
///   q = fake_quant(kernel * s)                          the folded kernel is quantized
///   y = conv(x, q / s) + bias                           = conv(x, q) / s + bias
///   out = batch_norm(y)                                 batch statistics while training
///
/// PyTorch divides the conv's output by s; dividing the kernel instead is the same
/// product up to rounding and touches KH*KW*Cin*F values instead of N*H*W*F.
/// So what gets fake-quantized is exactly the kernel an integer runtime runs (the
/// folded one), while training still normalizes with batch statistics. Once the
/// statistics are frozen, batch_norm uses the moving ones and
/// out = conv(x, q) + (beta + (bias - moving_mean) * s): the deployed conv with its folded bias.
/// Without quantization y equals conv(x, kernel) + bias up to rounding, so the folded
/// model computes what the unfolded one does.
///
/// Channels are the last axis of every tensor here, viewed as (size / C, C): the
/// kernel (KH, KW, Cin, F), a dense kernel (in, units), a depthwise kernel
/// (KH, KW, C, M) whose last two axes flatten to the C*M output channels, and NHWC
/// outputs.

#include <cstddef>
#include <memory>
#include <vector>

#include "../config.hpp"
#include "../core/parameter.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"

namespace xq {

/// The link between a folded weighted layer and its batch norm, shared by both twins.
struct batch_norm_fold {
  parameter_ptr gamma;            ///< null when the batch norm has no scale
  parameter_ptr moving_variance;
  float epsilon = 1e-3f;
  /// Training calls after which the batch norm stops using batch statistics and
  /// stops updating its moving ones (PyTorch's freeze_bn_stats); negative: never.
  long freeze_after = -1;
  long training_calls = 0;

  bool frozen() const noexcept { return freeze_after >= 0 && training_calls >= freeze_after; }
};

namespace detail {

/// A tensor viewed as (rows, C) with C channels on the trailing axes.
struct channel_rows {
  std::size_t rows, channels;
};

XQ_DECL channel_rows channel_view(const tensor& t, std::size_t channels, const char* where);

}  // namespace detail

namespace ops {

/// s = gamma / sqrt(moving_variance + epsilon); the gradient reaches gamma (the
/// moving variance is a statistic, not trained).
XQ_DECL var fold_scale(const batch_norm_fold& fold);

/// w * s with s broadcast over the last axes (C = s.size() channels).
XQ_DECL var scale_channels(const var& w, const var& s, const std::string& path = "scale_channels");

/// w / s with s broadcast over the last axes: the quantized folded kernel brought back
/// to the unfolded scale (conv(x, q / s) = conv(x, q) / s, on the small kernel instead
/// of the large output).
XQ_DECL var divide_channels(const var& w, const var& s, const std::string& path = "divide_channels");
/// The same division on plain values, nothing recorded: a deployed kernel with a batch norm
/// folded in, divided as the simulation divides it (the engine's and the lowering's). An
/// empty `s`: `w` as it is.
XQ_DECL tensor divide_channels(tensor w, const std::vector<float>& s, const std::string& path = "divide_channels");

}  // namespace ops
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/batch_norm_folding.ipp"
#endif
