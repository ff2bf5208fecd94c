#pragma once
/// \file layer_forms.ipp
/// The built-in layers' deploy forms (deploy/graph/layer_forms.hpp, wrapper_forms.hpp)
/// and the traced functions' forms (deploy/graph/deploy_form.hpp).

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../layers/activation.hpp"
#include "../../../layers/add.hpp"
#include "../../../layers/attention.hpp"
#include "../../../layers/average_pool2d.hpp"
#include "../../../layers/batch_norm.hpp"
#include "../../../layers/broadcasting.hpp"
#include "../../../layers/concatenate.hpp"
#include "../../../layers/conv2d.hpp"
#include "../../../layers/conv2d_transpose.hpp"
#include "../../../layers/correlation.hpp"
#include "../../../layers/cropping2d.hpp"
#include "../../../layers/dense.hpp"
#include "../../../layers/depthwise_conv2d.hpp"
#include "../../../layers/dropout.hpp"
#include "../../../layers/embedding.hpp"
#include "../../../layers/flatten.hpp"
#include "../../../layers/gelu.hpp"
#include "../../../layers/global_average_pool2d.hpp"
#include "../../../layers/global_max_pool2d.hpp"
#include "../../../layers/gru.hpp"
#include "../../../layers/layer_norm.hpp"
#include "../../../layers/lstm.hpp"
#include "../../../layers/max_pool2d.hpp"
#include "../../../layers/multiply.hpp"
#include "../../../layers/reshape.hpp"
#include "../../../layers/slicing.hpp"
#include "../../../layers/tied_dense.hpp"
#include "../../../layers/tied_projection.hpp"
#include "../../../layers/upsampling2d.hpp"
#include "../../../layers/zero_padding2d.hpp"
#include "../../../quantizers/quantizer_layer.hpp"
#include "../../../wrappers/quantized_batch_norm.hpp"
#include "../deploy_form.hpp"
#include "../layer_forms.hpp"
#include "../wrapper_forms.hpp"

namespace xq::deploy {

namespace detail {

/// A conv2d / depthwise / dense / tied layer as op::linear on input 0.
inline value_id linear_form(layer_builder& b, op::linear::form shape, const parameter_ptr& kernel,
                            const parameter_ptr& bias, const conv2d_geometry* g, std::array<std::size_t, 2> size,
                            std::size_t depth_multiplier = 1, bool transposed = false) {
  op::linear l;
  l.shape = shape;
  l.transposed = transposed;
  if (g) l.geometry = b.window(size, g->strides, g->dilation, g->padding);
  l.depth_multiplier = depth_multiplier;
  l.kernel = b.kernel(kernel);
  l.bias = b.weight(bias);
  return b.add(std::move(l), {b.input(0)});
}

inline value_id activation_form(layer_builder& b, op::activation::function f, float alpha = 0.3f) {
  op::activation a;
  a.f = f;
  a.alpha = alpha;
  return b.add(a, {b.input(0)});
}

/// add / multiply / concatenate / subtract on every input (through its QDQ site).
inline value_id merge_form(layer_builder& b, op::merge::kind k, bool broadcast, int axis = -1) {
  op::merge m;
  m.what = k;
  m.broadcast = broadcast;
  if (k == op::merge::kind::concatenate) {
    const long rank = long(b.output_shape().size());
    const long a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
      throw argument_error(b.path(), xq::detail::concat("a concatenation axis of a rank-", rank, " tensor"),
                           xq::detail::concat(axis));
    m.axis = std::size_t(a);
  }
  std::vector<value_id> in;
  for (std::size_t k2 = 0; k2 < b.input_count(); ++k2) in.push_back(b.input(k2));
  return b.add(m, std::move(in));
}

/// The axis along which the output is longer than input 0 (a traced concatenate
/// function does not record it).
inline int concat_axis(layer_builder& b) {
  const auto& in = b.shape(b.raw_input(0));
  const auto& out = b.output_shape();
  for (std::size_t d = 0; d < out.size() && d < in.size(); ++d)
    if (out[d] != in[d]) return int(d);
  return int(out.size()) - 1;
}

inline std::size_t axis_of(layer_builder& b, long axis, std::size_t rank) {
  const long a = axis < 0 ? axis + long(rank) : axis;
  if (a < 0 || a >= long(rank))
    throw argument_error(b.path(), xq::detail::concat("an axis of a rank-", rank, " input"), xq::detail::concat(axis));
  return std::size_t(a);
}

inline value_id slice_form(layer_builder& b, long axis, std::size_t begin, std::size_t end) {
  const auto& s = b.shape(b.raw_input(0));
  op::slice sl;
  const std::size_t a = axis_of(b, axis, s.size());
  sl.axes = {a};
  sl.begins = {begin};
  sl.ends = {std::min(end, s[a])};
  return b.add(sl, {b.input(0)});
}

/// The functions forward code calls (graph_trace.hpp records them by name).
inline std::map<std::string, function_form>& function_forms() {
  using fn = op::activation::function;
  static std::map<std::string, function_form> forms{
      {"relu", [](layer_builder& b) { return activation_form(b, fn::relu); }},
      {"relu6", [](layer_builder& b) { return activation_form(b, fn::relu6); }},
      {"sigmoid", [](layer_builder& b) { return activation_form(b, fn::sigmoid); }},
      {"tanh", [](layer_builder& b) { return activation_form(b, fn::tanh); }},
      {"swish", [](layer_builder& b) { return activation_form(b, fn::swish); }},
      {"softmax", [](layer_builder& b) { return activation_form(b, fn::softmax); }},
      {"gelu",
       [](layer_builder& b) {
         const auto& a = b.attributes();
         return activation_form(b, !a.empty() && a[0] ? fn::gelu_tanh : fn::gelu);
       }},
      {"add", [](layer_builder& b) { return merge_form(b, op::merge::kind::add, false); }},
      {"multiply", [](layer_builder& b) { return merge_form(b, op::merge::kind::multiply, false); }},
      {"concatenate", [](layer_builder& b) { return merge_form(b, op::merge::kind::concatenate, false, concat_axis(b)); }},
      {"broadcast_add", [](layer_builder& b) { return merge_form(b, op::merge::kind::add, true); }},
      {"subtract", [](layer_builder& b) { return merge_form(b, op::merge::kind::subtract, true); }},
      {"broadcast_multiply", [](layer_builder& b) { return merge_form(b, op::merge::kind::multiply, true); }},
      {"matmul",
       [](layer_builder& b) {
         const auto& a = b.attributes();
         op::matmul m;
         m.transpose_a = a.size() > 0 && a[0];
         m.transpose_b = a.size() > 1 && a[1];
         return b.add(m, {b.input(0), b.input(1)});
       }},
      {"slice",
       [](layer_builder& b) {
         const auto& a = b.attributes();
         if (a.size() != 3) b.refuse("its traced arguments are not (axis, begin, end)");
         return slice_form(b, long(a[0]), std::size_t(a[1]), std::size_t(a[2]));
       }},
      {"transpose",
       [](layer_builder& b) {
         op::transpose t;
         for (std::int64_t p : b.attributes()) t.permutation.push_back(std::size_t(p));
         return b.add(t, {b.input(0)});
       }},
      {"attend", [](layer_builder& b) { return b.add(op::attend{}, {b.input(0), b.input(1)}); }},
  };
  return forms;
}

inline std::mutex& function_forms_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace detail

XQ_DECL void register_function_form(const std::string& name, function_form form) {
  const std::lock_guard<std::mutex> lock(detail::function_forms_mutex());
  detail::function_forms()[name] = form;
}

XQ_DECL function_form find_function_form(const std::string& name) {
  const std::lock_guard<std::mutex> lock(detail::function_forms_mutex());
  const auto& f = detail::function_forms();
  const auto it = f.find(name);
  return it == f.end() ? nullptr : it->second;
}

// ---- linear layers ------------------------------------------------------------------------

XQ_DECL value_id describe_deployment(const conv2d& l, layer_builder& b) {
  return detail::linear_form(b, op::linear::form::conv2d, l.kernel(), l.bias(), &l.geometry(), l.kernel_size());
}

XQ_DECL value_id describe_deployment(const dense& l, layer_builder& b) {
  return detail::linear_form(b, op::linear::form::dense, l.kernel(), l.bias(), nullptr, {1, 1});
}

XQ_DECL value_id describe_deployment(const depthwise_conv2d& l, layer_builder& b) {
  return detail::linear_form(b, op::linear::form::depthwise_conv2d, l.kernel(), l.bias(), &l.geometry(),
                             l.kernel_size(), l.depth_multiplier());
}

XQ_DECL value_id describe_deployment(const tied_dense& l, layer_builder& b) {
  return detail::linear_form(b, op::linear::form::dense, l.kernel(), l.bias(), nullptr, {1, 1});
}

XQ_DECL value_id describe_deployment(const tied_projection& l, layer_builder& b) {
  return detail::linear_form(b, op::linear::form::dense, l.kernel(), l.bias(), nullptr, {1, 1}, 1, true);
}

XQ_DECL value_id describe_deployment(const conv2d_transpose& l, layer_builder& b) {
  op::conv_transpose t;
  t.size = l.kernel_size();
  t.strides = l.geometry().strides;
  t.dilation = l.geometry().dilation;
  t.padding = l.geometry().padding;
  t.kernel = b.kernel(l.kernel());
  t.bias = b.weight(l.use_bias() ? l.bias() : nullptr);
  return b.add(std::move(t), {b.input(0)});
}

// ---- pooling and normalization ------------------------------------------------------------

XQ_DECL value_id describe_deployment(const max_pool2d& l, layer_builder& b) {
  op::pool p;
  p.what = op::pool::kind::max;
  p.geometry = b.window(l.pool_size(), l.strides(), {1, 1}, l.padding());
  return b.add(p, {b.input(0)});
}

XQ_DECL value_id describe_deployment(const average_pool2d& l, layer_builder& b) {
  op::pool p;
  p.what = op::pool::kind::average;
  p.geometry = b.window(l.pool_size(), l.strides(), {1, 1}, l.padding());
  return b.add(p, {b.input(0)});
}

XQ_DECL value_id describe_deployment(const global_average_pool2d& l, layer_builder& b) {
  op::pool p;
  p.what = op::pool::kind::average;
  p.global = true;
  p.keepdims = l.keepdims();
  return b.add(p, {b.input(0)});
}

XQ_DECL value_id describe_deployment(const global_max_pool2d& l, layer_builder& b) {
  op::pool p;
  p.what = op::pool::kind::max;
  p.global = true;
  p.keepdims = l.keepdims();
  return b.add(p, {b.input(0)});
}

XQ_DECL value_id describe_deployment(const batch_norm& l, layer_builder& b) {
  if (!l.moving_mean()) b.refuse("it was never called (no statistics)");
  op::batch_norm n;
  const std::size_t c = l.moving_mean()->value.size();
  for (std::size_t i = 0; i < c; ++i) {  // xq::ops::batch_norm's inference arithmetic
    const float inv_std = static_cast<float>(1.0 / std::sqrt(static_cast<double>(l.moving_variance()->value.data()[i]) +
                                                             static_cast<double>(l.epsilon())));
    n.mean.push_back(l.moving_mean()->value.data()[i]);
    n.scale.push_back((l.gamma() ? l.gamma()->value.data()[i] : 1.0f) * inv_std);
    n.offset.push_back(l.beta() ? l.beta()->value.data()[i] : 0.0f);
  }
  return b.add(std::move(n), {b.input(0)});
}

XQ_DECL value_id describe_deployment(const layer_norm& l, layer_builder& b) {
  op::layer_norm n;
  const std::size_t rank = b.shape(b.raw_input(0)).size();
  for (int a : l.axes()) n.axes.push_back(detail::axis_of(b, a, rank));
  n.epsilon = l.epsilon();
  n.gamma = b.weight(l.scale() ? l.gamma() : nullptr);
  n.beta = b.weight(l.center() ? l.beta() : nullptr);
  return b.add(std::move(n), {b.input(0)});
}

// ---- shapes -------------------------------------------------------------------------------

XQ_DECL value_id describe_deployment(const flatten&, layer_builder& b) {
  const auto& s = b.output_shape();
  return b.add(op::reshape{std::vector<std::size_t>(s.begin() + 1, s.end())}, {b.input(0)});
}

XQ_DECL value_id describe_deployment(const reshape&, layer_builder& b) {
  const auto& s = b.output_shape();
  return b.add(op::reshape{std::vector<std::size_t>(s.begin() + 1, s.end())}, {b.input(0)});
}

XQ_DECL value_id describe_deployment(const dropout&, layer_builder& b) { return b.input(0); }

XQ_DECL value_id describe_deployment(const zero_padding2d& l, layer_builder& b) {
  const image_margins& m = l.padding();
  return b.add(op::pad{{m.rows[0], m.rows[1], m.cols[0], m.cols[1]}}, {b.input(0)});
}

XQ_DECL value_id describe_deployment(const cropping2d& l, layer_builder& b) {
  const image_margins& m = l.cropping();
  const auto& s = b.shape(b.raw_input(0));
  if (s.size() != 4) b.refuse("its input is not an NHWC image");
  op::slice sl;
  sl.axes = {1, 2};
  sl.begins = {m.rows[0], m.cols[0]};
  sl.ends = {s[1] - m.rows[1], s[2] - m.cols[1]};
  return b.add(sl, {b.input(0)});
}

XQ_DECL value_id describe_deployment(const slice& l, layer_builder& b) {
  return detail::slice_form(b, l.axis(), l.begin(), l.end());
}

XQ_DECL value_id describe_deployment(const upsampling2d& l, layer_builder& b) {
  op::upsample u;
  u.factors = {l.size_h(), l.size_w()};
  u.bilinear = l.mode() == interpolation::bilinear;
  return b.add(u, {b.input(0)});
}

// ---- activations --------------------------------------------------------------------------

XQ_DECL value_id describe_deployment(const relu&, layer_builder& b) {
  return detail::activation_form(b, op::activation::function::relu);
}
XQ_DECL value_id describe_deployment(const relu6&, layer_builder& b) {
  return detail::activation_form(b, op::activation::function::relu6);
}
XQ_DECL value_id describe_deployment(const leaky_relu& l, layer_builder& b) {
  return detail::activation_form(b, op::activation::function::leaky_relu, l.alpha());
}
XQ_DECL value_id describe_deployment(const sigmoid&, layer_builder& b) {
  return detail::activation_form(b, op::activation::function::sigmoid);
}
XQ_DECL value_id describe_deployment(const tanh&, layer_builder& b) {
  return detail::activation_form(b, op::activation::function::tanh);
}
XQ_DECL value_id describe_deployment(const swish&, layer_builder& b) {
  return detail::activation_form(b, op::activation::function::swish);
}
XQ_DECL value_id describe_deployment(const softmax&, layer_builder& b) {
  return detail::activation_form(b, op::activation::function::softmax);
}
XQ_DECL value_id describe_deployment(const gelu& l, layer_builder& b) {
  return detail::activation_form(b, l.approximate() ? op::activation::function::gelu_tanh : op::activation::function::gelu);
}

// ---- merges -------------------------------------------------------------------------------

XQ_DECL value_id describe_deployment(const add&, layer_builder& b) {
  return detail::merge_form(b, op::merge::kind::add, false);
}
XQ_DECL value_id describe_deployment(const subtract&, layer_builder& b) {
  return detail::merge_form(b, op::merge::kind::subtract, true);
}
XQ_DECL value_id describe_deployment(const multiply&, layer_builder& b) {
  return detail::merge_form(b, op::merge::kind::multiply, false);
}
XQ_DECL value_id describe_deployment(const concatenate& l, layer_builder& b) {
  return detail::merge_form(b, op::merge::kind::concatenate, false, l.axis());
}

// ---- tables, attention, recurrences, the cost volume --------------------------------------

XQ_DECL value_id describe_deployment(const embedding& l, layer_builder& b) {
  if (!l.kernel()) b.refuse("it was never built (no table)");
  op::gather g;
  g.table = b.kernel(l.kernel());
  return b.add(std::move(g), {b.input(0)});
}

XQ_DECL value_id describe_deployment(const attention_scores& l, layer_builder& b) {
  op::attention_probabilities p;
  p.heads = l.num_heads();
  p.causal = l.causal();
  std::vector<value_id> in;
  for (std::size_t k = 0; k < b.input_count(); ++k) in.push_back(b.input(k));
  return b.add(p, std::move(in));
}

namespace detail {
template <class Recurrence>
value_id recurrence_form(const Recurrence& l, layer_builder& b, op::recurrence::cell cell, bool reset_after) {
  op::recurrence r;
  r.kind = cell;
  r.return_sequences = l.settings().return_sequences;
  r.go_backwards = l.settings().go_backwards;
  r.reset_after = reset_after;
  r.recurrent_kernel = b.kernel(l.kernel());
  r.bias = b.weight(l.bias());
  return b.add(std::move(r), {b.input(0)});
}
}  // namespace detail

XQ_DECL value_id describe_deployment(const lstm_recurrence& l, layer_builder& b) {
  return detail::recurrence_form(l, b, op::recurrence::cell::lstm, false);
}

XQ_DECL value_id describe_deployment(const gru_recurrence& l, layer_builder& b) {
  return detail::recurrence_form(l, b, op::recurrence::cell::gru, l.reset_after());
}

XQ_DECL value_id describe_deployment(const correlation& l, layer_builder& b) {
  if (b.input_count() != 2) b.refuse("it is called with two feature maps");
  return b.add(op::correlation{l.max_displacement()}, {b.input(0), b.input(1)});
}

// ---- quantizers and the batch norm's twin --------------------------------------------------

XQ_DECL value_id describe_deployment(const quantizer_base& q, layer_builder& b) {
  b.quantize_input(0, q);
  return b.input(0);
}

XQ_DECL value_id describe_deployment(const quantized_batch_norm& w, layer_builder& b) {
  b.quantize_input(0, w.input_quantizer());
  b.quantize_output(w.output_quantizer());
  if (w.folded()) b.mark_folded();
  return describe_deployment(w.float_layer(), b);
}

}  // namespace xq::deploy
