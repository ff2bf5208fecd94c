#pragma once
/// \file layer_forms.hpp
/// The deploy forms of xquant's built-in float layers and of every quantizer (the protocol:
/// layer_builder.hpp): one `describe_deployment` per layer type, declared on the types'
/// declarations (xquant/fwd.hpp) and compiled once (impl/layer_forms.ipp), so a program
/// pays only for the walk over its own model. A user's layer gets a form the same way, in
/// its own namespace; nothing here lists the layers that can deploy.
///
/// Each form says what the layer computes at inference in the ops of graph_ops.hpp:
/// conv2d, depthwise_conv2d, dense, tied_dense and tied_projection as `op::linear`; pools
/// as `op::pool`; batch_norm as `op::batch_norm`; the activations as `op::activation`;
/// add / subtract / multiply / concatenate as `op::merge`; flatten and reshape as
/// `op::reshape`; dropout as its input; embedding as `op::gather`; the layout layers as
/// pad / slice / upsample; layer_norm, attention_scores, conv2d_transpose, the LSTM's and
/// GRU's recurrences and the correlation as their own ops. A quantizer called as a layer
/// (a Larq model's standalone sign) is a quantization point.

#include "../../config.hpp"
#include "../../fwd.hpp"
#include "layer_builder.hpp"

namespace xq::deploy {

XQ_DECL value_id describe_deployment(const conv2d& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const dense& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const depthwise_conv2d& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const tied_dense& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const tied_projection& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const conv2d_transpose& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const max_pool2d& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const average_pool2d& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const global_average_pool2d& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const global_max_pool2d& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const batch_norm& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const layer_norm& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const flatten& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const reshape& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const dropout& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const relu& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const relu6& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const leaky_relu& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const sigmoid& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const tanh& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const swish& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const softmax& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const gelu& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const add& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const subtract& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const multiply& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const concatenate& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const embedding& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const zero_padding2d& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const cropping2d& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const slice& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const upsampling2d& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const attention_scores& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const correlation& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const lstm_recurrence& l, layer_builder& b);
XQ_DECL value_id describe_deployment(const gru_recurrence& l, layer_builder& b);

/// Any quantizer called as a layer: a quantization point with its grid (an off quantizer:
/// its input as it is).
XQ_DECL value_id describe_deployment(const quantizer_base& q, layer_builder& b);

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/layer_forms.ipp"
#endif
