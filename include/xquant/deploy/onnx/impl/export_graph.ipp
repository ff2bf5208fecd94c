#pragma once
/// \file export_graph.ipp
/// The ONNX exporter (deploy/onnx/export_graph.hpp): the writer's values, names and
/// quantization points, and the translations of the ops without weights (those with
/// weights: onnx_weights.ipp).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "../../../core/error.hpp"
#include "../detail/onnx_writer.hpp"
#include "../export_graph.hpp"

namespace xq::deploy {

namespace detail {

namespace ox = xq::onnx;

inline std::vector<std::int64_t> onnx_pads(const std::array<std::size_t, 4>& p) {
  return {std::int64_t(p[0]), std::int64_t(p[1]), std::int64_t(p[2]), std::int64_t(p[3])};
}

/// The dimensions of a batch-first value for an ONNX input or output: "N", then the rest.
inline std::vector<ox::dimension> batch_dims(const std::vector<std::size_t>& s, bool nchw) {
  std::vector<ox::dimension> d{ox::dimension("N")};
  if (nchw && s.size() == 4) {
    for (std::size_t k : {3, 1, 2}) d.emplace_back(std::int64_t(s[k]));
  } else {
    for (std::size_t k = 1; k < s.size(); ++k) d.emplace_back(std::int64_t(s[k]));
  }
  return d;
}

/// The NCHW axis of NHWC axis `a` of a rank-4 tensor.
inline std::int64_t nchw_axis(std::size_t a) { return a == 0 ? 0 : a == 3 ? 1 : std::int64_t(a) + 1; }

// ---- the writer ---------------------------------------------------------------------------

XQ_DECL onnx_writer::onnx_writer(const deploy_graph& g, const export_options& o)
    : g_(g), o_(o), values_(g.values.size()) {
  if (o.opset != 13 && o.opset < 19)
    throw argument_error("export_onnx", "opset 0 (automatic), 13, or 19 and later", xq::detail::concat(o.opset));
  if (g.decisions.size() != g.nodes.size())
    throw argument_error("export_onnx", "a deploy graph whose decisions were made (build_graph)",
                         xq::detail::concat(g.decisions.size(), " decisions for ", g.nodes.size(), " nodes"));
  for (const std::string& n : g.input_names) used_.insert(n);
  for (const std::string& n : g.output_names) used_.insert(n);
}

XQ_DECL onnx::model onnx_writer::run() {
  for (std::size_t k = 0; k < g_.inputs.size(); ++k) {
    const value_id v = g_.inputs[k];
    const std::string& name = g_.input_names.at(k);
    out_.inputs.push_back(ox::value_info(name, ox::data_type::float32, batch_dims(shape_of(v), false)));
    values_[v] = onnx_value{name, shape_of(v).size(), false};
  }
  for (std::size_t i = 0; i < g_.nodes.size(); ++i) std::visit([&](const auto& o) { translate(i, o); }, g_.nodes[i].op);
  // The model's outputs first, in its order; then the exposed integers.
  std::vector<ox::value_info> outputs;
  for (std::size_t k = 0; k < g_.outputs.size(); ++k) {
    const value_id v = g_.outputs[k];
    const onnx_value y = to_nhwc(values_.at(v));
    if (y.name.empty()) throw argument_error("export_onnx", "outputs made by the graph's nodes", g_.output_names.at(k));
    out_.add_node("Identity", {y.name}, {g_.output_names.at(k)}, {}, fresh("node/" + g_.output_names.at(k)));
    outputs.push_back(ox::value_info(g_.output_names.at(k), ox::data_type::float32, batch_dims(shape_of(v), false)));
  }
  out_.outputs.insert(out_.outputs.begin(), outputs.begin(), outputs.end());
  out_.name = "xquant";
  ox::model m(std::move(out_), o_.opset);
  m.doc_string = "Exported by xquant's export_onnx: QuantizeLinear/DequantizeLinear where the simulation "
                 "fake-quantizes.";
  m.metadata_props.push_back({"xquant.weight_layout", o_.weight_layout == onnx_weight_layout::int8_weights
                                                          ? "int8_weights: the simulation's integers + DequantizeLinear"
                                                          : "float_qdq: float weights + QuantizeLinear + DequantizeLinear"});
  m.metadata_props.push_back({"xquant.layout", "inputs and outputs NHWC as in xquant; spatial tensors inside NCHW"});
  for (const auto& kv : numerics_) m.metadata_props.push_back({"xquant.rounding." + kv.first, kv.second});
  for (const auto& kv : quantizer_notes_) m.metadata_props.push_back({"xquant.quantizer." + kv.first, kv.second});
  return m;
}

XQ_DECL onnx_value onnx_writer::input(std::size_t i, std::size_t k) const {
  const graph_node& n = g_.nodes[i];
  const onnx_value& v = values_.at(n.inputs.at(k));
  if (v.name.empty())
    throw argument_error(n.layer, "inputs made by earlier nodes of the deploy graph",
                         xq::detail::concat("value ", n.inputs[k], ", made by none"));
  return v;
}

XQ_DECL void onnx_writer::set_output(std::size_t i, onnx_value v) { values_.at(g_.nodes[i].output) = std::move(v); }

XQ_DECL std::string onnx_writer::fresh(const std::string& base) {
  std::string n = base;
  for (std::size_t k = 1; used_.count(n); ++k) n = base + "_" + std::to_string(k);
  used_.insert(n);
  return n;
}

XQ_DECL std::string onnx_writer::add_initializer(ox::tensor_data t) {
  t.name = fresh(t.name);
  return out_.add_initializer(std::move(t));
}

XQ_DECL std::string onnx_writer::node(const std::string& op, std::vector<std::string> in, const std::string& out_base,
                                      std::vector<ox::attribute> attrs) {
  const std::string out = fresh(out_base);
  out_.add_node(op, std::move(in), {out}, std::move(attrs), fresh("node/" + out));
  return out;
}

XQ_DECL std::string onnx_writer::constant(float v) {
  const auto it = constants_.find(v);
  if (it != constants_.end()) return it->second;
  return constants_[v] = add_initializer(ox::tensor_data::float32_scalar(xq::detail::concat("const/", v), v));
}

XQ_DECL std::string onnx_writer::int64s(const std::string& name, const std::vector<std::int64_t>& v) {
  return add_initializer(ox::tensor_data::int64(name, {std::int64_t(v.size())}, v));
}

XQ_DECL onnx_value onnx_writer::to_nchw(onnx_value v) {
  if (v.rank != 4 || v.nchw) return v;
  auto& made = nchw_[v.name];
  if (made.empty()) made = node("Transpose", {v.name}, v.name + "/nchw", {ox::ints_attribute("perm", {0, 3, 1, 2})});
  v.name = made;
  v.nchw = true;
  return v;
}

XQ_DECL onnx_value onnx_writer::to_nhwc(onnx_value v) {
  if (v.rank != 4 || !v.nchw) return v;
  auto& made = nhwc_[v.name];
  if (made.empty()) made = node("Transpose", {v.name}, v.name + "/nhwc", {ox::ints_attribute("perm", {0, 2, 3, 1})});
  v.name = made;
  v.nchw = false;
  return v;
}

XQ_DECL std::string onnx_writer::reduce_mean(const std::string& x, const std::vector<std::int64_t>& axes,
                                             const std::string& name) {
  if (o_.opset >= 18)
    return node("ReduceMean", {x, int64s(name + "/axes", axes)}, name, {ox::int_attribute("keepdims", 1)});
  return node("ReduceMean", {x}, name, {ox::ints_attribute("axes", axes), ox::int_attribute("keepdims", 1)});
}

XQ_DECL std::string onnx_writer::split_heads(const std::string& x, const std::vector<std::size_t>& s,
                                             std::size_t heads, bool keys_last, const std::string& name) {
  const std::string shape =
      int64s(name + "/heads_shape", {0, std::int64_t(s[1]), std::int64_t(heads), std::int64_t(s[2] / heads)});
  const std::string r = node("Reshape", {x, shape}, name + "/heads");
  return node("Transpose", {r}, name + "/per_head",
              {ox::ints_attribute("perm", keys_last ? std::vector<std::int64_t>{0, 2, 3, 1}
                                                    : std::vector<std::int64_t>{0, 2, 1, 3})});
}

// ---- quantization points --------------------------------------------------------------------

XQ_DECL ox::data_type onnx_writer::storage(const quantization_grid& g, const std::string& where) const {
  if (g.fits_int8()) return ox::data_type::int8;
  if (g.fits_uint8()) return ox::data_type::uint8;
  const bool int16 = g.fits_int16(), uint16 = g.fits_uint16();
  if (!int16 && !uint16)
    throw argument_error(where, "an activation grid of 8- or 16-bit integers for ONNX QuantizeLinear", describe(g));
  if (o_.opset >= 21) return int16 ? ox::data_type::int16 : ox::data_type::uint16;
  throw argument_error(where,
                       xq::detail::concat("an activation grid of 8-bit integers at opset ", o_.opset,
                                          " (16-bit QuantizeLinear needs opset 21; export_options::opset 0 "
                                          "chooses it)"),
                       describe(g));
}

/// A scalar or 1-D initializer of integer type `t` (a zero point, a Clip bound).
inline ox::tensor_data integer_tensor(const std::string& name, ox::data_type t, std::vector<std::int64_t> dims,
                                      const std::vector<std::int32_t>& v) {
  switch (t) {
    case ox::data_type::int8: return ox::tensor_data::int8(name, std::move(dims), std::vector<std::int8_t>(v.begin(), v.end()));
    case ox::data_type::uint8:
      return ox::tensor_data::uint8(name, std::move(dims), std::vector<std::uint8_t>(v.begin(), v.end()));
    case ox::data_type::int16:
      return ox::tensor_data::int16(name, std::move(dims), std::vector<std::int16_t>(v.begin(), v.end()));
    default: return ox::tensor_data::uint16(name, std::move(dims), std::vector<std::uint16_t>(v.begin(), v.end()));
  }
}

/// The range QuantizeLinear saturates to for type `t`.
inline std::pair<std::int32_t, std::int32_t> type_range(ox::data_type t) {
  switch (t) {
    case ox::data_type::int8: return {-128, 127};
    case ox::data_type::uint8: return {0, 255};
    case ox::data_type::int16: return {-32768, 32767};
    default: return {0, 65535};
  }
}

XQ_DECL void onnx_writer::note(const std::string& quantizer, const std::string& description,
                               const quantization_grid& g) {
  quantizer_notes_[quantizer] = description + "; " + describe(g);
  // The numerics each quantizer names in its description (quantizer_config's describe).
  if (description.find("tf_qdq") != std::string::npos)
    numerics_["tf_qdq"] =
        "training rounded half to even after multiplying by qmax / max (TF QuantizeAndDequantizeV4, NVIDIA's "
        "toolkit); QuantizeLinear divides by the scale, which differs in about 1e-6 of values, by one step";
  if (description.find("tf_fake_quant") != std::string::npos)
    numerics_["tf_fake_quant"] =
        "training rounded half up on the nudged range (TF FakeQuantWithMinMaxVars, tfmot); QuantizeLinear "
        "rounds half to even: exact ties and about 1e-6 of values differ by one step";
  if (description.find("torch_fake_quant") != std::string::npos)
    numerics_["torch_fake_quant"] =
        "training rounded half to even after multiplying by 1 / scale (PyTorch fake_quantize_*_affine); "
        "QuantizeLinear divides: about 1e-6 of values differ by one step";
}

XQ_DECL std::string onnx_writer::qdq(const std::string& x, const op::quantize& q, const std::vector<std::size_t>& shape) {
  const quantization_grid& g = q.grid;
  if (g.per_channel && g.channels() > 1)
    throw argument_error(q.quantizer, "a per-tensor activation quantizer", "a per-channel one (" + describe(g) + ")");
  note(q.quantizer, q.description, g);
  const std::string key = q.quantizer + "|" + describe(g);
  auto cached = activation_params_.find(key);
  if (cached == activation_params_.end()) {
    const ox::data_type t = storage(g, q.quantizer);
    activation_initializers p;
    p.scale = add_initializer(ox::tensor_data::float32_scalar(q.quantizer + "/scale", g.scale[0]));
    p.zero_point = add_initializer(integer_tensor(q.quantizer + "/zero_point", t, {}, {g.zero_point[0]}));
    // QuantizeLinear saturates to the type's own range: a narrower grid needs a Clip. 8
    // bits: on the integers after Q (as Brevitas writes it). 16 bits: onnxruntime has no
    // int16 Clip, so the float input is clipped to the grid's ends before Q, which gives the
    // same integers (rounding is monotone and the ends are on the grid).
    const auto [type_min, type_max] = type_range(t);
    if (g.qmin > type_min || g.qmax < type_max) {
      if (t == ox::data_type::int8 || t == ox::data_type::uint8) {
        p.qmin = add_initializer(integer_tensor(q.quantizer + "/qmin", t, {}, {g.qmin}));
        p.qmax = add_initializer(integer_tensor(q.quantizer + "/qmax", t, {}, {g.qmax}));
      } else {
        p.float_min = add_initializer(
            ox::tensor_data::float32_scalar(q.quantizer + "/min", float(g.qmin - g.zero_point[0]) * g.scale[0]));
        p.float_max = add_initializer(
            ox::tensor_data::float32_scalar(q.quantizer + "/max", float(g.qmax - g.zero_point[0]) * g.scale[0]));
      }
    }
    cached = activation_params_.emplace(key, std::move(p)).first;
  }
  const activation_initializers& p = cached->second;
  const std::string clipped = p.float_min.empty() ? x : node("Clip", {x, p.float_min, p.float_max}, q.quantizer + "/clip_float");
  std::string quantized = node("QuantizeLinear", {clipped, p.scale, p.zero_point}, q.quantizer + "/q");
  if (!p.qmin.empty()) quantized = node("Clip", {quantized, p.qmin, p.qmax}, q.quantizer + "/clip");
  if (o_.expose_quantized) {
    const std::string exposed = "q:" + q.label;
    if (!used_.count(exposed)) {
      used_.insert(exposed);
      out_.add_node("Identity", {quantized}, {exposed}, {}, fresh("node/" + exposed));
      out_.outputs.push_back(ox::value_info(exposed, storage(g, q.quantizer), batch_dims(shape, true)));
    }
  }
  return node("DequantizeLinear", {quantized, p.scale, p.zero_point}, q.quantizer + "/dq");
}

// ---- translations: quantization points, elementwise ops, layout ---------------------------

XQ_DECL void onnx_writer::translate(std::size_t i, const op::quantize& q) {
  const graph_node& n = g_.nodes[i];
  if (q.format) {  // a low-bit format's scales from each tensor (onnx_low_bit.ipp)
    set_output(i, dynamic_quantize(i, q));
    return;
  }
  onnx_value v = input(i, 0);
  if (binary_grid(q.grid)) {  // Larq's sign: +scale for x >= 0 (sign(0) = +1), else -scale
    note(q.quantizer, q.description, q.grid);
    const float s = q.grid.scale.empty() ? 1.0f : q.grid.scale[0];
    const std::string ge = node("GreaterOrEqual", {v.name, constant(0.0f)}, q.quantizer + "/nonnegative");
    v.name = node("Where", {ge, constant(s), constant(-s)}, q.quantizer + "/sign");
  } else {
    v = to_nchw(v);  // exposed spatial tensors are NCHW, as the ops after them want
    v.name = qdq(v.name, q, shape_of(n.output));
  }
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::pool& p) {
  const graph_node& n = g_.nodes[i];
  onnx_value v = to_nchw(input(i, 0));
  if (v.rank != 4) throw argument_error(n.layer, "pooling of an NHWC image", xq::detail::concat("a rank-", v.rank, " input"));
  const bool average = p.what == op::pool::kind::average;
  if (p.global) {
    v.name = node(average ? "GlobalAveragePool" : "GlobalMaxPool", {v.name}, n.layer + (p.keepdims ? "" : "/pooled"));
    if (!p.keepdims) {  // (N, C, 1, 1) -> (N, C)
      v.name = node("Flatten", {v.name}, n.layer, {ox::int_attribute("axis", 1)});
      v.rank = 2;
      v.nchw = false;
    }
  } else {
    const op::window& w = p.geometry;
    std::vector<ox::attribute> attrs{
        ox::ints_attribute("kernel_shape", {std::int64_t(w.size[0]), std::int64_t(w.size[1])}),
        ox::ints_attribute("strides", {std::int64_t(w.strides[0]), std::int64_t(w.strides[1])}),
        ox::ints_attribute("pads", onnx_pads(w.pads))};
    // TF's same padding averages the elements inside the image only: count_include_pad 0.
    if (average) attrs.push_back(ox::int_attribute("count_include_pad", 0));
    v.name = node(average ? "AveragePool" : "MaxPool", {v.name}, n.layer, std::move(attrs));
  }
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::batch_norm& b) {
  const graph_node& n = g_.nodes[i];
  const std::size_t by = g_.decisions[i].absorbed_by;
  if (by != no_index && g_.decisions[by].fold_cancels) return;  // in the linear op's bias (its value is set)
  // (x - mean) * scale + offset as Sub, Mul, Add: xquant's arithmetic (a BatchNormalization
  // node would compute 1 / sqrt(variance + eps) again, rounded otherwise).
  onnx_value v = to_nchw(input(i, 0));
  const std::int64_t ch = std::int64_t(b.mean.size());
  const std::vector<std::int64_t> dims = v.rank == 4 ? std::vector<std::int64_t>{ch, 1, 1} : std::vector<std::int64_t>{ch};
  const std::string mean = add_initializer(ox::tensor_data::float32(n.layer + "/mean", dims, b.mean));
  const std::string scale = add_initializer(ox::tensor_data::float32(n.layer + "/scale", dims, b.scale));
  const std::string offset = add_initializer(ox::tensor_data::float32(n.layer + "/offset", dims, b.offset));
  std::string y = node("Sub", {v.name, mean}, n.layer + "/centered");
  y = node("Mul", {y, scale}, n.layer + "/scaled");
  v.name = node("Add", {y, offset}, n.layer);
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::activation& a) {
  using fn = op::activation::function;
  const std::string& name = g_.nodes[i].layer;
  onnx_value v = input(i, 0);
  const std::string x = v.name;
  switch (a.f) {
    case fn::relu: v.name = node("Relu", {x}, name); break;
    case fn::relu6: v.name = node("Clip", {x, constant(0.0f), constant(6.0f)}, name); break;
    case fn::leaky_relu: v.name = node("LeakyRelu", {x}, name, {ox::float_attribute("alpha", a.alpha)}); break;
    case fn::sigmoid: v.name = node("Sigmoid", {x}, name); break;
    case fn::tanh: v.name = node("Tanh", {x}, name); break;
    // opset 13 has no Swish: x * Sigmoid(x).
    case fn::swish: v.name = node("Mul", {x, node("Sigmoid", {x}, name + "/sigmoid")}, name); break;
    case fn::softmax:  // over the channels: the last axis of xquant's layout
      v = to_nhwc(v);
      v.name = node("Softmax", {v.name}, name, {ox::int_attribute("axis", -1)});
      break;
    case fn::gelu:
    case fn::gelu_tanh: {
      // xquant's (and TF's) order: 0.5 * x * (1 + erf(x / sqrt 2)), or with
      // tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)).
      const std::string half = node("Mul", {x, constant(0.5f)}, name + "/half");
      std::string inner;
      if (a.f == fn::gelu_tanh) {
        const std::string cube = node("Mul", {node("Mul", {x, x}, name + "/square"), x}, name + "/cube");
        const std::string sum =
            node("Add", {x, node("Mul", {cube, constant(0.044715f)}, name + "/cubic")}, name + "/sum");
        inner = node("Tanh", {node("Mul", {sum, constant(0.7978845608028654f)}, name + "/scaled")}, name + "/tanh");
      } else {
        inner = node("Erf", {node("Mul", {x, constant(0.7071067811865476f)}, name + "/scaled")}, name + "/erf");
      }
      v.name = node("Mul", {half, node("Add", {inner, constant(1.0f)}, name + "/one_plus")}, name);
      break;
    }
  }
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::merge& m) {
  const graph_node& n = g_.nodes[i];
  // Same-shape inputs in ONNX's layout (NCHW when spatial); broadcasting ones in xquant's,
  // whose axes numpy's rules align.
  std::vector<onnx_value> in;
  for (std::size_t k = 0; k < n.inputs.size(); ++k)
    in.push_back(m.broadcast ? to_nhwc(input(i, k)) : to_nchw(input(i, k)));
  if (in.empty()) throw argument_error(n.layer, "a merge of at least one input", "none");
  onnx_value out = in[0];
  out.rank = shape_of(n.output).size();
  if (m.what == op::merge::kind::concatenate) {
    std::int64_t axis = std::int64_t(m.axis);
    if (out.rank == 4 && out.nchw) axis = nchw_axis(m.axis);
    std::vector<std::string> names;
    for (const onnx_value& v : in) names.push_back(v.name);
    out.name = node("Concat", names, n.layer, {ox::int_attribute("axis", axis)});
  } else if (m.what == op::merge::kind::subtract) {
    if (in.size() != 2) throw argument_error(n.layer, "a subtraction of two inputs", xq::detail::concat(in.size(), " inputs"));
    out.name = node("Sub", {in[0].name, in[1].name}, n.layer);
  } else {
    const char* op = m.what == op::merge::kind::add ? "Add" : "Mul";
    for (std::size_t k = 1; k < in.size(); ++k)
      out.name = node(op, {out.name, in[k].name}, k + 1 == in.size() ? n.layer : n.layer + "/partial");
  }
  set_output(i, out);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::reshape& r) {
  const graph_node& n = g_.nodes[i];
  onnx_value v = to_nhwc(input(i, 0));  // the elements in xquant's order
  if (r.target.size() == 1) {
    v.name = node("Flatten", {v.name}, n.layer, {ox::int_attribute("axis", 1)});
  } else {
    std::vector<std::int64_t> target{-1};
    for (std::size_t d : r.target) target.push_back(std::int64_t(d));
    v.name = node("Reshape", {v.name, int64s(n.layer + "/shape", target)}, n.layer);
  }
  v.rank = r.target.size() + 1;
  v.nchw = false;
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::pad& p) {
  const graph_node& n = g_.nodes[i];
  onnx_value v = to_nchw(input(i, 0));
  const auto& m = p.margins;  // top, bottom, left, right
  const std::string pads = int64s(n.layer + "/pads", {0, 0, std::int64_t(m[0]), std::int64_t(m[2]), 0, 0,
                                                      std::int64_t(m[1]), std::int64_t(m[3])});
  v.name = node("Pad", {v.name, pads, constant(0.0f)}, n.layer, {ox::string_attribute("mode", "constant")});
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::slice& s) {
  const graph_node& n = g_.nodes[i];
  onnx_value v = input(i, 0);
  std::vector<std::int64_t> axes, begins(s.begins.begin(), s.begins.end()), ends(s.ends.begin(), s.ends.end());
  for (std::size_t a : s.axes) axes.push_back(v.rank == 4 && v.nchw ? nchw_axis(a) : std::int64_t(a));
  v.name = node("Slice", {v.name, int64s(n.layer + "/starts", begins), int64s(n.layer + "/ends", ends),
                          int64s(n.layer + "/axes", axes)},
                n.layer);
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::upsample& u) {
  const graph_node& n = g_.nodes[i];
  onnx_value v = to_nchw(input(i, 0));
  // Keras's nearest repeats each pixel: source floor(i / size), ONNX's asymmetric + floor.
  // Its bilinear is tf.image.resize's: half-pixel centres, clamped at the borders.
  const std::string scales = add_initializer(
      ox::tensor_data::float32(n.layer + "/scales", {4}, {1.0f, 1.0f, float(u.factors[0]), float(u.factors[1])}));
  std::vector<ox::attribute> attrs;
  if (u.bilinear) {
    attrs = {ox::string_attribute("mode", "linear"), ox::string_attribute("coordinate_transformation_mode", "half_pixel")};
  } else {
    attrs = {ox::string_attribute("mode", "nearest"), ox::string_attribute("coordinate_transformation_mode", "asymmetric"),
             ox::string_attribute("nearest_mode", "floor")};
  }
  v.name = node("Resize", {v.name, "", scales}, n.layer, std::move(attrs));
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::transpose& t) {
  const graph_node& n = g_.nodes[i];
  onnx_value v = to_nhwc(input(i, 0));
  v.name = node("Transpose", {v.name}, n.layer,
                {ox::ints_attribute("perm", std::vector<std::int64_t>(t.permutation.begin(), t.permutation.end()))});
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::layer_norm& l) {
  const graph_node& n = g_.nodes[i];
  const std::string& name = n.layer;
  onnx_value v = to_nhwc(input(i, 0));
  const std::vector<std::size_t>& s = shape_of(n.inputs.at(0));
  const std::vector<std::int64_t> axes(l.axes.begin(), l.axes.end());
  // (x - mean) / sqrt(variance + epsilon) * gamma + beta, the biased variance over the axes.
  const std::string mean = reduce_mean(v.name, axes, name + "/mean");
  const std::string centred = node("Sub", {v.name, mean}, name + "/centred");
  const std::string variance = reduce_mean(node("Mul", {centred, centred}, name + "/squared"), axes, name + "/variance");
  const std::string root = node("Sqrt", {node("Add", {variance, constant(l.epsilon)}, name + "/eps")}, name + "/std");
  std::string y = node("Div", {centred, root}, name + "/normalized");
  // gamma and beta (the normalized axes' shape) broadcast from the right: 1 elsewhere.
  std::vector<std::int64_t> dims;
  for (std::size_t d = 1; d < s.size(); ++d)
    dims.push_back(std::find(l.axes.begin(), l.axes.end(), d) != l.axes.end() ? std::int64_t(s[d]) : 1);
  if (l.gamma.present()) {
    const tensor& gamma = weight_value(l.gamma, name);
    y = node("Mul", {y, add_initializer(ox::tensor_data::float32(name + "/gamma", dims, std::vector<float>(gamma.begin(), gamma.end())))},
             l.beta.present() ? name + "/scaled" : name);
  }
  if (l.beta.present()) {
    const tensor& beta = weight_value(l.beta, name);
    y = node("Add", {y, add_initializer(ox::tensor_data::float32(name + "/beta", dims, std::vector<float>(beta.begin(), beta.end())))},
             name);
  }
  v.name = y;
  set_output(i, v);
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::matmul& m) {
  const graph_node& n = g_.nodes[i];
  auto operand = [&](std::size_t k, bool transposed) {
    const onnx_value v = to_nhwc(input(i, k));
    if (!transposed) return v.name;
    std::vector<std::int64_t> perm;
    for (std::size_t d = 0; d < v.rank; ++d) perm.push_back(std::int64_t(d));
    std::swap(perm[v.rank - 1], perm[v.rank - 2]);
    return node("Transpose", {v.name}, n.layer + (k ? "/b_transposed" : "/a_transposed"), {ox::ints_attribute("perm", perm)});
  };
  const std::string a = operand(0, m.transpose_a), b = operand(1, m.transpose_b);
  set_output(i, onnx_value{node("MatMul", {a, b}, n.layer), shape_of(n.output).size(), false});
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::attention_probabilities& p) {
  const graph_node& n = g_.nodes[i];
  const std::string& name = n.layer;
  const std::vector<std::size_t>& s = shape_of(n.inputs.at(0));
  const std::vector<std::size_t>& ks = shape_of(n.inputs.at(1));
  const std::string x = to_nhwc(input(i, 0)).name, k = to_nhwc(input(i, 1)).name;
  // Keras: the query scaled by 1 / sqrt(d), times the keys; masked scores -1e9; softmax.
  const std::size_t heads = p.heads, d = s[2] / heads;
  const std::string q = node("Mul", {split_heads(x, s, heads, false, name + "/query"),
                                     constant(float(1.0 / std::sqrt(double(d))))},
                             name + "/query/scaled");
  std::string scores = node("MatMul", {q, split_heads(k, ks, heads, true, name + "/key")}, name + "/scores");
  const std::int64_t tq = std::int64_t(s[1]), tk = std::int64_t(ks[1]);
  std::string keep;
  if (p.causal) {  // key j <= query i
    std::vector<float> lower(std::size_t(tq * tk));
    for (std::int64_t r = 0; r < tq; ++r)
      for (std::int64_t c = 0; c < tk; ++c) lower[std::size_t(r * tk + c)] = c <= r ? 1.0f : 0.0f;
    keep = add_initializer(ox::tensor_data::float32(name + "/causal", {tq, tk}, lower));
  }
  if (n.inputs.size() > 2) {  // a mask (B, Tq, Tk): nonzero keeps, one for every head
    const std::string mask = to_nhwc(input(i, 2)).name;
    const std::string nonzero =
        node("Not", {node("Equal", {mask, constant(0.0f)}, name + "/mask_zero")}, name + "/mask_keep");
    std::string m = node("Cast", {nonzero}, name + "/mask_float", {ox::int_attribute("to", 1)});  // FLOAT
    m = node("Unsqueeze", {m, int64s(name + "/head_axis", {1})}, name + "/mask_heads");
    keep = keep.empty() ? m : node("Mul", {m, keep}, name + "/keep");
  }
  if (!keep.empty()) {
    const std::string fill =
        node("Mul", {node("Sub", {constant(1.0f), keep}, name + "/dropped"), constant(-1e9f)}, name + "/fill");
    scores = node("Add", {node("Mul", {scores, keep}, name + "/kept"), fill}, name + "/masked");
  }
  set_output(i, onnx_value{node("Softmax", {scores}, name, {ox::int_attribute("axis", -1)}), 4, false});
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::attend&) {
  const graph_node& n = g_.nodes[i];
  const std::string& name = n.layer;
  // p (B, H, Tq, Tk) times the values per head, heads merged back: (B, Tq, H·V).
  const std::vector<std::size_t>& ps = shape_of(n.inputs.at(0));
  const std::vector<std::size_t>& vs = shape_of(n.inputs.at(1));
  const std::string p = to_nhwc(input(i, 0)).name, v = to_nhwc(input(i, 1)).name;
  const std::size_t heads = ps[1];
  const std::string context = node("MatMul", {p, split_heads(v, vs, heads, false, name + "/value")}, name + "/context");
  const std::string merged = node("Transpose", {context}, name + "/merged", {ox::ints_attribute("perm", {0, 2, 1, 3})});
  const std::string y =
      node("Reshape", {merged, int64s(name + "/shape", {0, std::int64_t(ps[2]), std::int64_t(vs[2])})}, name);
  set_output(i, onnx_value{y, 3, false});
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::correlation& c) {
  const graph_node& n = g_.nodes[i];
  const std::string& name = n.layer;
  const std::vector<std::size_t>& s = shape_of(n.inputs.at(0));
  if (s.size() != 4 || shape_of(n.inputs.at(1)) != s)
    throw argument_error(name, "a correlation of two NHWC feature maps of one shape",
                         xq::detail::concat("a rank-", s.size(), " first map"));
  // layers/correlation.hpp in standard operators, NCHW: the second map padded by d with
  // zeros, one Slice per displacement in (dy, dx) order, stacked as (N, D, C, H, W), times
  // the first map, summed over the channels and multiplied by 1/C — xquant's own order of
  // operations (a float sum over c in order, then times 1/C), so the volume is xquant's.
  const std::int64_t d = std::int64_t(c.max_displacement), span = 2 * d + 1;
  const std::int64_t h = std::int64_t(s[1]), w = std::int64_t(s[2]), ch = std::int64_t(s[3]);
  const std::string a = to_nchw(input(i, 0)).name, b = to_nchw(input(i, 1)).name;
  const std::string padded = node("Pad", {b, int64s(name + "/pads", {0, 0, d, d, 0, 0, d, d}), constant(0.0f)},
                                  name + "/padded", {ox::string_attribute("mode", "constant")});
  const std::string axes = int64s(name + "/slice_axes", {2, 3});
  std::vector<std::string> shifted;
  for (std::int64_t dy = -d; dy <= d; ++dy)
    for (std::int64_t dx = -d; dx <= d; ++dx) {
      const std::string at = xq::detail::concat(name, "/shift_", dy + d, "_", dx + d);
      shifted.push_back(node("Slice", {padded, int64s(at + "/starts", {d + dy, d + dx}),
                                       int64s(at + "/ends", {d + dy + h, d + dx + w}), axes},
                             at));
    }
  std::string stacked = node("Concat", shifted, name + "/shifted", {ox::int_attribute("axis", 1)});  // (N, D·C, H, W)
  stacked = node("Reshape", {stacked, int64s(name + "/stacked_shape", {0, span * span, ch, h, w})}, name + "/stacked");
  const std::string first = node("Unsqueeze", {a, int64s(name + "/displacement_axis", {1})}, name + "/first");
  const std::string products = node("Mul", {stacked, first}, name + "/products");
  const std::string sums = node("ReduceSum", {products, int64s(name + "/channel_axis", {2})}, name + "/sums",
                                {ox::int_attribute("keepdims", 0)});
  const float inv_c = ch ? 1.0f / static_cast<float>(ch) : 0.0f;
  set_output(i, onnx_value{node("Mul", {sums, constant(inv_c)}, name), 4, true});
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::constant& c) {
  std::vector<std::int64_t> dims(c.value.shape().begin(), c.value.shape().end());
  const std::string name = add_initializer(
      ox::tensor_data::float32("constant", std::move(dims), std::vector<float>(c.value.begin(), c.value.end())));
  set_output(i, onnx_value{name, c.value.dimension(), false});
}

}  // namespace detail

XQ_DECL onnx::model export_graph(const deploy_graph& g, const export_options& o) {
  export_options chosen = o;
  // Automatic (opset 0): 13 unless an activation grid needs 16-bit QuantizeLinear (21) or a
  // low-bit format is in the graph: 21 (blocked DequantizeLinear, FLOAT8 Cast), 25 for a
  // kernel of 2-bit integers (INT2), 24 in the spec form (FLOAT4E2M1, FLOAT8E8M0).
  if (!chosen.opset) {
    chosen.opset = 13;
    const std::int64_t low_bit = o.low_bit_form == onnx_low_bit_form::spec ? 24 : 21;
    auto kernel = [&](const weight_use& u) {
      if (!u.quantized || !is_low_bit_grid(u.q.grid)) return;
      chosen.opset = std::max(chosen.opset, low_bit);
      const quantization_grid& k = u.q.grid;
      if (!is_float_element(k.element) && k.qmin >= -2 && k.qmax <= 1 && k.symmetric())
        chosen.opset = std::max<std::int64_t>(chosen.opset, 25);
    };
    for (const graph_node& n : g.nodes) {
      if (const auto* q = std::get_if<op::quantize>(&n.op)) {
        if (q->format) chosen.opset = std::max(chosen.opset, low_bit);
        else if (!detail::binary_grid(q->grid) && !q->grid.fits_int8() && !q->grid.fits_uint8())
          chosen.opset = std::max<std::int64_t>(chosen.opset, 21);
      }
      if (const auto* l = std::get_if<op::linear>(&n.op)) kernel(l->kernel);
      if (const auto* t = std::get_if<op::gather>(&n.op)) kernel(t->table);
      if (const auto* t = std::get_if<op::conv_transpose>(&n.op)) kernel(t->kernel);
      if (const auto* r = std::get_if<op::recurrence>(&n.op)) kernel(r->recurrent_kernel);
    }
  }
  return detail::onnx_writer(g, chosen).run();
}

}  // namespace xq::deploy
