#pragma once
/// \file layer_info.ipp
/// The float layers' descriptions (deploy/layer_info.hpp).

#include "../layer_info.hpp"

namespace xq::deploy {

namespace detail {

inline tensor value_or_empty(const parameter_ptr& p) { return p ? p->value : tensor::from_shape({0}); }

XQ_DECL void describe_float(const conv2d& l, layer_info& i) {
  i.what = layer_info::kind::linear;
  i.linear_form = layer_info::form::conv2d;
  i.geometry = l.geometry();
  i.kernel_size = l.kernel_size();
  i.kernel = value_or_empty(l.kernel());
  i.bias = value_or_empty(l.bias());
}

XQ_DECL void describe_float(const dense& l, layer_info& i) {
  i.what = layer_info::kind::linear;
  i.linear_form = layer_info::form::dense;
  i.kernel = value_or_empty(l.kernel());
  i.bias = value_or_empty(l.bias());
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
