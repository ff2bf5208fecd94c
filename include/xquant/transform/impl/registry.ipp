#pragma once
/// \file registry.ipp
/// builtin_layer_types's code (transform/registry.hpp).

#include <string>
#include <vector>

#include "../registry.hpp"

namespace xq {

XQ_DECL const std::vector<std::string>& builtin_layer_types() {
  static const std::vector<std::string> names{
      "conv2d",     "dense",   "depthwise_conv2d", "batch_norm",  "average_pool2d", "global_average_pool2d",
      "max_pool2d", "global_max_pool2d", "relu",   "relu6",       "leaky_relu",     "sigmoid",
      "tanh",       "swish",   "softmax",          "flatten",     "reshape",        "dropout",
      "add",        "concatenate", "multiply",     "embedding",   "tied_projection", "tied_dense",
      "gelu",       "zero_padding2d", "cropping2d", "upsampling2d", "layer_norm",
      "slice",      "subtract", "conv2d_transpose", "attention_scores",
      "correlation", "lstm_recurrence", "gru_recurrence"};
  return names;
}

}  // namespace xq
