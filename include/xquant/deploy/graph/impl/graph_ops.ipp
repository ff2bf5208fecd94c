#pragma once
/// \file graph_ops.ipp
/// The deploy graph's ops (deploy/graph/graph_ops.hpp).

#include <type_traits>
#include <variant>

#include "../graph_ops.hpp"

namespace xq::deploy {

XQ_DECL op::window window_over(const std::vector<std::size_t>& s, std::array<std::size_t, 2> size,
                           std::array<std::size_t, 2> strides, std::array<std::size_t, 2> dilation, xq::padding p) {
  op::window w;
  w.size = size;
  w.strides = strides;
  w.dilation = dilation;
  w.padding = p;
  if (s.size() == 4) {
    const window_axis a = resolve_axis(s[1], size[0], strides[0], dilation[0], p);
    const window_axis b = resolve_axis(s[2], size[1], strides[1], dilation[1], p);
    w.pads = {a.pad_before, b.pad_before, a.pad_after, b.pad_after};
  }
  return w;
}

XQ_DECL std::size_t op::linear::out_channels(const tensor::shape_type& k) const {
  if (k.empty()) return 0;
  if (transposed) return k[0];
  if (shape == form::depthwise_conv2d && k.size() == 4) return k[2] * k[3];
  return k.back();
}

XQ_DECL const char* op_name(const deploy_op& o) noexcept {
  static constexpr const char* names[] = {"quantize",   "linear", "pool",      "batch_norm", "activation", "merge",
                                          "reshape",    "pad",    "slice",     "upsample",   "transpose",  "gather",
                                          "layer_norm", "matmul", "attention_probabilities", "attend",
                                          "conv_transpose", "recurrence", "correlation", "constant"};
  static_assert(sizeof(names) / sizeof(names[0]) == std::variant_size_v<deploy_op>, "a name per op");
  return names[o.index()];
}

XQ_DECL const char* to_string(op::activation::function f) noexcept {
  using fn = op::activation::function;
  switch (f) {
    case fn::relu: return "relu";
    case fn::relu6: return "relu6";
    case fn::leaky_relu: return "leaky_relu";
    case fn::sigmoid: return "sigmoid";
    case fn::tanh: return "tanh";
    case fn::swish: return "swish";
    case fn::softmax: return "softmax";
    case fn::gelu: return "gelu";
    case fn::gelu_tanh: return "gelu_tanh";
  }
  return "?";
}

XQ_DECL bool commutes_with_rounding(const deploy_op& o) noexcept {
  if (const auto* a = std::get_if<op::activation>(&o)) return a->f == op::activation::function::relu;
  if (const auto* p = std::get_if<op::pool>(&o)) return p->what == op::pool::kind::max;
  if (const auto* u = std::get_if<op::upsample>(&o)) return !u->bilinear;
  return std::holds_alternative<op::reshape>(o) || std::holds_alternative<op::pad>(o) ||
         std::holds_alternative<op::slice>(o) || std::holds_alternative<op::transpose>(o);
}

}  // namespace xq::deploy
