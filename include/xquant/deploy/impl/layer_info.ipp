#pragma once
/// \file layer_info.ipp
/// The float layers' descriptions (deploy/layer_info.hpp).

#include "../../layers/activation.hpp"
#include "../../layers/add.hpp"
#include "../../layers/attention.hpp"
#include "../../layers/average_pool2d.hpp"
#include "../../layers/batch_norm.hpp"
#include "../../layers/broadcasting.hpp"
#include "../../layers/concatenate.hpp"
#include "../../layers/conv2d.hpp"
#include "../../layers/conv2d_transpose.hpp"
#include "../../layers/cropping2d.hpp"
#include "../../layers/dense.hpp"
#include "../../layers/depthwise_conv2d.hpp"
#include "../../layers/dropout.hpp"
#include "../../layers/embedding.hpp"
#include "../../layers/flatten.hpp"
#include "../../layers/gelu.hpp"
#include "../../layers/global_average_pool2d.hpp"
#include "../../layers/global_max_pool2d.hpp"
#include "../../layers/gru.hpp"
#include "../../layers/layer_norm.hpp"
#include "../../layers/lstm.hpp"
#include "../../layers/max_pool2d.hpp"
#include "../../layers/multiply.hpp"
#include "../../layers/reshape.hpp"
#include "../../layers/slicing.hpp"
#include "../../layers/tied_dense.hpp"
#include "../../layers/tied_projection.hpp"
#include "../../layers/upsampling2d.hpp"
#include "../../layers/zero_padding2d.hpp"
#include "../../wrappers/quantized_batch_norm.hpp"
#include "../layer_info.hpp"

namespace xq::deploy {

namespace detail {

XQ_DECL layer_info& add_layer(layer_table& table, const std::string& path, const std::string& type) {
  layer_info& i = table[path];
  i.path = path;
  i.type = type;
  return i;
}

inline tensor value_or_empty(const parameter_ptr& p) { return p ? p->value : tensor::from_shape({0}); }

XQ_DECL void describe_float(const conv2d& l, layer_info& i) {
  i.what = layer_info::kind::linear;
  i.linear_form = layer_info::form::conv2d;
  i.geometry = l.geometry();
  i.kernel_size = l.kernel_size();
  i.kernel = value_or_empty(l.kernel());
  i.bias = value_or_empty(l.bias());
  i.kernel_id = l.kernel().get();
}

XQ_DECL void describe_float(const dense& l, layer_info& i) {
  i.what = layer_info::kind::linear;
  i.linear_form = layer_info::form::dense;
  i.kernel = value_or_empty(l.kernel());
  i.bias = value_or_empty(l.bias());
  i.kernel_id = l.kernel().get();
}

XQ_DECL void describe_float(const depthwise_conv2d& l, layer_info& i) {
  i.what = layer_info::kind::linear;
  i.linear_form = layer_info::form::depthwise_conv2d;
  i.geometry.strides = l.strides();
  i.geometry.padding = l.padding();
  i.geometry.dilation = l.dilation();
  i.kernel_size = l.kernel_size();
  i.depth_multiplier = l.depth_multiplier();
  i.kernel = value_or_empty(l.kernel());
  i.bias = value_or_empty(l.bias());
}

XQ_DECL void describe_float(const max_pool2d& l, layer_info& i) {
  i.what = layer_info::kind::max_pool;
  i.pool = l.pool_size();
  i.pool_strides = l.strides();
  i.pool_padding = l.padding();
}

XQ_DECL void describe_float(const batch_norm& l, layer_info& i) {
  i.what = layer_info::kind::batch_norm;
  i.norm = &l;
}

XQ_DECL void describe_float(const flatten&, layer_info& i) { i.what = layer_info::kind::flatten; }

XQ_DECL void describe_float(const reshape& l, layer_info& i) {
  i.what = layer_info::kind::reshape;
  i.target = l.target_shape();
}

XQ_DECL void describe_float(const dropout&, layer_info& i) { i.what = layer_info::kind::identity; }

XQ_DECL void describe_float(const relu&, layer_info& i) { i.what = layer_info::kind::relu; }

inline void describe_activation(layer_info& i, const char* function) {
  i.what = layer_info::kind::activation;
  i.function = function;
}
XQ_DECL void describe_float(const relu6&, layer_info& i) { describe_activation(i, "relu6"); }
XQ_DECL void describe_float(const leaky_relu& l, layer_info& i) {
  describe_activation(i, "leaky_relu");
  i.alpha = l.alpha();
}
XQ_DECL void describe_float(const sigmoid&, layer_info& i) { describe_activation(i, "sigmoid"); }
XQ_DECL void describe_float(const tanh&, layer_info& i) { describe_activation(i, "tanh"); }
XQ_DECL void describe_float(const swish&, layer_info& i) { describe_activation(i, "swish"); }
XQ_DECL void describe_float(const softmax&, layer_info& i) { describe_activation(i, "softmax"); }

XQ_DECL void describe_float(const average_pool2d& l, layer_info& i) {
  i.what = layer_info::kind::average_pool;
  i.pool = l.pool_size();
  i.pool_strides = l.strides();
  i.pool_padding = l.padding();
}

XQ_DECL void describe_float(const global_average_pool2d& l, layer_info& i) {
  i.what = layer_info::kind::global_average_pool;
  i.keepdims = l.keepdims();
}

XQ_DECL void describe_float(const global_max_pool2d& l, layer_info& i) {
  i.what = layer_info::kind::global_max_pool;
  i.keepdims = l.keepdims();
}

XQ_DECL void describe_float(const add&, layer_info& i) {
  i.what = layer_info::kind::merge;
  i.function = "add";
}
XQ_DECL void describe_float(const concatenate& l, layer_info& i) {
  i.what = layer_info::kind::merge;
  i.function = "concatenate";
  i.axis = l.axis();
}
XQ_DECL void describe_float(const multiply&, layer_info& i) {
  i.what = layer_info::kind::merge;
  i.function = "multiply";
}

XQ_DECL void describe_float(const embedding& l, layer_info& i) {
  i.what = layer_info::kind::embedding;
  i.kernel = value_or_empty(l.kernel());
  i.kernel_id = l.kernel().get();
}

XQ_DECL void describe_float(const tied_projection& l, layer_info& i) {
  i.what = layer_info::kind::linear;
  i.linear_form = layer_info::form::dense;
  i.transposed = true;
  i.kernel = value_or_empty(l.kernel());
  i.bias = value_or_empty(l.bias());
  i.kernel_id = l.kernel().get();
}

XQ_DECL void describe_float(const tied_dense& l, layer_info& i) {
  i.what = layer_info::kind::linear;
  i.linear_form = layer_info::form::dense;
  i.kernel = value_or_empty(l.kernel());
  i.bias = value_or_empty(l.bias());
  i.kernel_id = l.kernel().get();
}

inline void describe_function(layer_info& i, const char* function, std::vector<std::int64_t> ints) {
  i.what = layer_info::kind::function;
  i.function = function;
  i.ints = std::move(ints);
}

XQ_DECL void describe_float(const zero_padding2d& l, layer_info& i) {
  const image_margins& m = l.padding();
  describe_function(i, "zero_padding2d", {std::int64_t(m.rows[0]), std::int64_t(m.rows[1]), std::int64_t(m.cols[0]),
                                          std::int64_t(m.cols[1])});
}

XQ_DECL void describe_float(const cropping2d& l, layer_info& i) {
  const image_margins& m = l.cropping();
  describe_function(i, "cropping2d", {std::int64_t(m.rows[0]), std::int64_t(m.rows[1]), std::int64_t(m.cols[0]),
                                      std::int64_t(m.cols[1])});
}

XQ_DECL void describe_float(const slice& l, layer_info& i) {
  describe_function(i, "slice", {std::int64_t(l.axis()), std::int64_t(l.begin()),
                                 l.end() == to_end ? std::int64_t(-1) : std::int64_t(l.end())});
}

XQ_DECL void describe_float(const upsampling2d& l, layer_info& i) {
  describe_function(i, "upsampling2d", {std::int64_t(l.size_h()), std::int64_t(l.size_w()),
                                        l.mode() == interpolation::bilinear ? 1 : 0});
}

XQ_DECL void describe_float(const gelu& l, layer_info& i) { describe_function(i, "gelu", {l.approximate() ? 1 : 0}); }

XQ_DECL void describe_float(const layer_norm& l, layer_info& i) {
  describe_function(i, "layer_norm", std::vector<std::int64_t>(l.axes().begin(), l.axes().end()));
  i.floats = {l.epsilon()};
  i.tensors = {value_or_empty(l.scale() ? l.gamma() : nullptr), value_or_empty(l.center() ? l.beta() : nullptr)};
}

XQ_DECL void describe_float(const subtract&, layer_info& i) { describe_function(i, "subtract", {}); }

XQ_DECL void describe_float(const attention_scores& l, layer_info& i) {
  describe_function(i, "attention_probabilities", {std::int64_t(l.num_heads()), l.causal() ? 1 : 0});
}

XQ_DECL void describe_float(const conv2d_transpose& l, layer_info& i) {
  const conv2d_geometry& g = l.geometry();
  describe_function(i, "conv2d_transpose", {std::int64_t(g.strides[0]), std::int64_t(g.strides[1]),
                                            std::int64_t(g.dilation[0]), std::int64_t(g.dilation[1]),
                                            g.padding == xq::padding::same ? 1 : 0});
  i.tensors = {value_or_empty(l.kernel()), value_or_empty(l.use_bias() ? l.bias() : nullptr)};
  i.kernel_size = l.kernel_size();
  i.geometry = g;
}

XQ_DECL void describe_float(const lstm_recurrence& l, layer_info& i) {
  describe_function(i, "lstm_recurrence", {l.settings().return_sequences ? 1 : 0, l.settings().go_backwards ? 1 : 0});
  i.tensors = {value_or_empty(l.kernel()), value_or_empty(l.bias())};
  i.kernel_id = l.kernel().get();
}

XQ_DECL void describe_float(const gru_recurrence& l, layer_info& i) {
  describe_function(i, "gru_recurrence", {l.settings().return_sequences ? 1 : 0, l.settings().go_backwards ? 1 : 0,
                                          l.reset_after() ? 1 : 0});
  i.tensors = {value_or_empty(l.kernel()), value_or_empty(l.bias())};
  i.kernel_id = l.kernel().get();
}

XQ_DECL std::string why_no_integer_form(const std::string& type) {
  if (type == "correlation")
    return " (ONNX has no correlation, or cost-volume, operator, and the integer engine has no kernel for it)";
  return "";
}

}  // namespace detail

XQ_DECL void describe_layer(layer_table& table, const quantized_batch_norm& w) {
  layer_info& i = table[w.path()];
  i.path = w.path();
  i.type = "batch_norm";
  detail::describe_float(w.float_layer(), i);
  i.input = &w.input_quantizer();
  i.output = &w.output_quantizer();
  i.fold = w.folded();
}

}  // namespace xq::deploy
