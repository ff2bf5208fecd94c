#pragma once
/// \file export_onnx.ipp
/// The ONNX exporter's walk (deploy/export_onnx.hpp).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../kernels/channel_layout.hpp"
#include "../../kernels/padding.hpp"
#include "../export_onnx.hpp"
#include "../function_op.hpp"
#include "../trace_walk.hpp"

namespace xq::deploy::detail {

namespace ox = xq::onnx;

/// What the exporter knows of a value: its name in the graph and, for rank 4, whether it
/// is laid out NCHW (ONNX's spatial ops) or NHWC (xquant's).
struct onnx_value {
  std::string name;
  std::size_t rank = 0;
  bool nchw = false;
};

inline std::vector<std::int64_t> dims64(const tensor::shape_type& s) { return std::vector<std::int64_t>(s.begin(), s.end()); }

/// Whether an enabled activation quantizer of the model (an input or output QDQ site, any
/// call site) has a grid wider than 8 bits: its QuantizeLinear is int16 / uint16, which
/// needs opset 21.
inline bool has_16_bit_activations(const layer_table& t) {
  auto wide = [](const site_quantizers* s) {
    for (std::size_t k = 0; s && k < s->call_sites(); ++k) {
      const fake_quantizer& q = s->site(k);
      if (!q.enabled() || q.config().per_channel) continue;
      const quantization_grid g = q.grid(1);
      if (!g.fits_int8() && !g.fits_uint8()) return true;
    }
    return false;
  };
  for (const auto& kv : t) {
    const layer_info& i = kv.second;
    if (wide(i.input) || wide(i.output)) return true;
    for (const site_quantizers* s : i.inputs)
      if (wide(s)) return true;
  }
  return false;
}

class exporter : trace_walk {
 public:
  /// `o.opset` is the one to write (13, or 19 and later).
  exporter(const graph_trace& g, const layer_table& t, const export_options& o,
           const std::set<const variable_state*>& constants)
      : trace_walk(g, t, constants), o_(o) {
    if (o.opset != 13 && o.opset < 19)
      throw argument_error("export_onnx", "opset 0 (automatic), 13, or 19 and later", xq::detail::concat(o.opset));
    for (const auto& kv : t)  // layers per kernel parameter: more than one is a tied weight
      if (kv.second.kernel_id) ++kernel_users_[kv.second.kernel_id];
  }

  ox::model run(const variable_state* input, const variable_state* output, const std::vector<std::size_t>& shape) {
    std::vector<ox::dimension> in_dims{ox::dimension("N")};
    for (std::size_t d : shape) in_dims.emplace_back(std::int64_t(d));
    g_out_.inputs.push_back(ox::value_info(o_.input_name, ox::data_type::float32, in_dims));
    values_[input] = onnx_value{o_.input_name, shape.size() + 1, false};
    const auto& calls = g_.calls();
    for (std::size_t i = 0; i < calls.size(); ++i) export_call(i);
    onnx_value out = value(output, "the model's output");
    out = to_nhwc(out);
    g_out_.add_node("Identity", {out.name}, {o_.output_name});
    std::vector<ox::dimension> out_dims{ox::dimension("N")};
    for (std::size_t d = 1; d < output->value.dimension(); ++d) out_dims.emplace_back(std::int64_t(output->value.shape()[d]));
    g_out_.outputs.push_back(ox::value_info(o_.output_name, ox::data_type::float32, out_dims));
    g_out_.name = "xquant";
    ox::model m(std::move(g_out_), o_.opset);
    m.doc_string = "Exported by xquant's export_onnx: QuantizeLinear/DequantizeLinear where the simulation "
                   "fake-quantizes.";
    m.metadata_props.push_back({"xquant.weight_layout", o_.weight_layout == onnx_weight_layout::int8_weights
                                                            ? "int8_weights: the simulation's integers + DequantizeLinear"
                                                            : "float_qdq: float weights + QuantizeLinear + DequantizeLinear"});
    m.metadata_props.push_back(
        {"xquant.layout", "inputs and outputs NHWC as in xquant; spatial tensors inside NCHW"});
    for (const auto& kv : numerics_) m.metadata_props.push_back({"xquant.rounding." + kv.first, kv.second});
    for (const auto& kv : quantizer_notes_) m.metadata_props.push_back({"xquant.quantizer." + kv.first, kv.second});
    return m;
  }

 private:
  // --- values ----------------------------------------------------------------------

  onnx_value value(const variable_state* s, const std::string& who) {
    const auto it = values_.find(s);
    if (it != values_.end()) return it->second;
    if (!fixed_values_.count(s))
      throw argument_error(who, "an input made by a layer or an xq::ops function with a layer form",
                           "a value computed by code the trace does not see (write it as a layer)");
    const std::string name = add_initializer(ox::tensor_data::float32(
        "constant", dims64(s->value.shape()), std::vector<float>(s->value.begin(), s->value.end())));
    return values_[s] = onnx_value{name, s->value.dimension(), false};
  }

  std::string fresh(const std::string& base) {
    std::string n = base;
    for (std::size_t k = 1; used_.count(n); ++k) n = base + "_" + std::to_string(k);
    used_.insert(n);
    return n;
  }

  std::string add_initializer(ox::tensor_data t) {
    t.name = fresh(t.name);
    return g_out_.add_initializer(std::move(t));
  }

  std::string node(const std::string& op, std::vector<std::string> in, const std::string& out_base,
                   std::vector<ox::attribute> attrs = {}) {
    const std::string out = fresh(out_base);
    g_out_.add_node(op, std::move(in), {out}, std::move(attrs), fresh("node/" + out));
    return out;
  }

  static std::vector<std::int64_t> onnx_pads(const std::array<std::size_t, 4>& p) {
    return {std::int64_t(p[0]), std::int64_t(p[1]), std::int64_t(p[2]), std::int64_t(p[3])};
  }

  onnx_value to_nchw(onnx_value v) {
    if (v.rank != 4 || v.nchw) return v;
    v.name = node("Transpose", {v.name}, v.name + "/nchw", {ox::ints_attribute("perm", {0, 3, 1, 2})});
    v.nchw = true;
    return v;
  }
  onnx_value to_nhwc(onnx_value v) {
    if (v.rank != 4 || !v.nchw) return v;
    v.name = node("Transpose", {v.name}, v.name + "/nhwc", {ox::ints_attribute("perm", {0, 2, 3, 1})});
    v.nchw = false;
    return v;
  }

  // --- quantizers ------------------------------------------------------------------

  /// The integer type of an activation grid's QuantizeLinear: 8 bits where they hold it,
  /// else 16 (QuantizeLinear's int16/uint16 are opset 21).
  ox::data_type storage(const quantization_grid& g, const std::string& where) const {
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

  /// A scalar initializer of integer type `t` (a zero point, a Clip bound).
  static ox::tensor_data integer_scalar(const std::string& name, ox::data_type t, std::int32_t v) {
    switch (t) {
      case ox::data_type::int8: return ox::tensor_data::int8_scalar(name, std::int8_t(v));
      case ox::data_type::uint8: return ox::tensor_data::uint8_scalar(name, std::uint8_t(v));
      case ox::data_type::int16: return ox::tensor_data::int16(name, {}, {std::int16_t(v)});
      default: return ox::tensor_data::uint16(name, {}, {std::uint16_t(v)});
    }
  }

  void note_quantizer(const fake_quantizer& q, const quantization_grid& g) {
    quantizer_notes_[q.path()] = q.describe() + "; " + describe(g);
    switch (q.config().numerics) {
      case quant_numerics::tf_qdq:
        numerics_["tf_qdq"] =
            "training rounded half to even after multiplying by qmax / max (TF QuantizeAndDequantizeV4, NVIDIA's "
            "toolkit); QuantizeLinear divides by the scale, which differs in about 1e-6 of values, by one step";
        break;
      case quant_numerics::tf_fake_quant:
        numerics_["tf_fake_quant"] =
            "training rounded half up on the nudged range (TF FakeQuantWithMinMaxVars, tfmot); QuantizeLinear "
            "rounds half to even: exact ties and about 1e-6 of values differ by one step";
        break;
      case quant_numerics::torch_fake_quant:
        numerics_["torch_fake_quant"] =
            "training rounded half to even after multiplying by 1 / scale (PyTorch fake_quantize_*_affine); "
            "QuantizeLinear divides: about 1e-6 of values differ by one step";
        break;
    }
  }

  /// x (float) through Q → [Clip] → DQ with the activation quantizer `q`.
  std::string qdq(const std::string& x, const fake_quantizer& q, const std::string& label,
                  const tensor::shape_type& shape) {
    if (q.config().per_channel)
      throw argument_error(q.path(), "a per-tensor activation quantizer", "a per-channel one");
    const quantization_grid g = q.grid(1);
    note_quantizer(q, g);
    auto cached = activation_params_.find(&q);
    if (cached == activation_params_.end()) {
      const ox::data_type t = storage(g, q.path());
      const std::string scale = add_initializer(ox::tensor_data::float32_scalar(q.path() + "/scale", g.scale[0]));
      const std::string zp = add_initializer(integer_scalar(q.path() + "/zero_point", t, g.zero_point[0]));
      // The type's own range: QuantizeLinear saturates to it, a narrower grid needs a Clip.
      const std::int32_t type_min = t == ox::data_type::int8 ? -128 : t == ox::data_type::int16 ? -32768 : 0;
      const std::int32_t type_max = t == ox::data_type::int8    ? 127
                                    : t == ox::data_type::uint8 ? 255
                                    : t == ox::data_type::int16 ? 32767
                                                                : 65535;
      // 8 bits: Clip on the integers after Q (as Brevitas writes it). 16 bits: onnxruntime
      // has no int16 Clip, so the float input is clipped to the grid's ends before Q, which
      // gives the same integers (rounding is monotone and the ends are on the grid).
      std::string lo, hi, float_lo, float_hi;
      if (g.qmin > type_min || g.qmax < type_max) {
        if (t == ox::data_type::int8 || t == ox::data_type::uint8) {
          lo = add_initializer(integer_scalar(q.path() + "/qmin", t, g.qmin));
          hi = add_initializer(integer_scalar(q.path() + "/qmax", t, g.qmax));
        } else {
          float_lo = add_initializer(ox::tensor_data::float32_scalar(
              q.path() + "/min", float(g.qmin - g.zero_point[0]) * g.scale[0]));
          float_hi = add_initializer(ox::tensor_data::float32_scalar(
              q.path() + "/max", float(g.qmax - g.zero_point[0]) * g.scale[0]));
        }
      }
      cached = activation_params_.emplace(&q, activation_initializers{scale, zp, lo, hi, float_lo, float_hi}).first;
    }
    const activation_initializers& p = cached->second;
    const std::string clipped =
        p.float_min.empty() ? x : node("Clip", {x, p.float_min, p.float_max}, q.path() + "/clip_float");
    std::string quantized = node("QuantizeLinear", {clipped, p.scale, p.zero_point}, q.path() + "/q");
    if (!p.qmin.empty()) quantized = node("Clip", {quantized, p.qmin, p.qmax}, q.path() + "/clip");
    if (o_.expose_quantized) {
      const std::string out = "q:" + label;
      if (!used_.count(out)) {
        used_.insert(out);
        g_out_.add_node("Identity", {quantized}, {out}, {}, fresh("node/" + out));
        std::vector<ox::dimension> dims{ox::dimension("N")};
        if (shape.size() == 4) {  // exposed spatial tensors are NCHW, as inside the graph
          for (std::size_t d : {3, 1, 2}) dims.emplace_back(std::int64_t(shape[d]));
        } else {
          for (std::size_t d = 1; d < shape.size(); ++d) dims.emplace_back(std::int64_t(shape[d]));
        }
        g_out_.outputs.push_back(ox::value_info(out, storage(g, q.path()), dims));
      }
    }
    return node("DequantizeLinear", {quantized, p.scale, p.zero_point}, q.path() + "/dq");
  }

  // --- calls -----------------------------------------------------------------------

  /// A call, then the QDQ of its output quantizer if it has one (tfmot's and PyTorch's
  /// placement; export_linear places a conv's or dense's own).
  void export_call(std::size_t i) {
    export_call_body(i);
    const traced_call& c = g_.calls()[i];
    const layer_info* info = c.function ? nullptr : info_of(c);
    if (!info || info->what == layer_info::kind::linear) return;
    if (const fake_quantizer* q = site_quantizer(info->output, i)) {
      onnx_value& v = values_.at(c.output);
      v = to_nchw(v);  // exposed spatial tensors are NCHW
      v.name = qdq(v.name, *q, c.path + " output", c.output->value.shape());
    }
  }

  void export_call_body(std::size_t i) {
    const traced_call& c = g_.calls()[i];
    if (c.function) {
      if (c.type == "relu" || c.type == "relu6" || c.type == "sigmoid" || c.type == "tanh" || c.type == "swish" ||
          c.type == "softmax") {
        values_[c.output] = activation(value(c.inputs.at(0), c.describe()), c.type, 0.0f, c.type);
        return;
      }
      if (c.type == "add" || c.type == "multiply" || c.type == "concatenate")
        return export_merge(i, c.type, concat_axis_of(c), {}, c.type);
      if (function_op::known(c.type)) return export_function(i, c.type, c.attributes, nullptr);
      throw argument_error("xq::ops::" + c.type,
                           "a function with an ONNX form (relu, relu6, sigmoid, tanh, swish, softmax, gelu, add, "
                           "multiply, concatenate, broadcast_add, subtract, broadcast_multiply, matmul, slice, split, "
                           "transpose, attend; leaky_relu as the xq::leaky_relu layer, whose alpha it can read)",
                           "xq::ops::" + c.type);
    }
    const layer_info* info = info_of(c);
    if (!info || info->what == layer_info::kind::none)
      throw argument_error(c.path, "a layer with an ONNX form (conv2d, depthwise_conv2d, dense, max_pool2d, "
                                   "average_pool2d, global_average_pool2d, global_max_pool2d, batch_norm, relu, relu6, "
                                   "leaky_relu, sigmoid, tanh, swish, softmax, add, concatenate, multiply, embedding, "
                                   "tied_projection, tied_dense, flatten, reshape, dropout, Larq sign layers)",
                           "a " + c.type + " layer" + why_no_integer_form(c.type));
    if (info->what == layer_info::kind::merge) return export_merge(i, info->function, info->axis, info->inputs, c.path);
    if (info->what == layer_info::kind::embedding) return export_embedding(i, *info);
    if (info->what == layer_info::kind::function)
      return export_function(i, info->function, function_arguments(*info, c), info);
    onnx_value v = value(c.inputs.at(0), c.describe());
    if (info->what != layer_info::kind::linear)
      if (const fake_quantizer* q = site_quantizer(info->input, i)) {
        v = to_nchw(v);  // exposed spatial tensors are NCHW
        v.name = qdq(v.name, *q, input_label(i, 0), c.inputs[0]->value.shape());
      }
    switch (info->what) {
      case layer_info::kind::identity: values_[c.output] = v; return;
      case layer_info::kind::relu:
        v.name = node("Relu", {v.name}, c.path);
        values_[c.output] = v;
        return;
      case layer_info::kind::flatten:
      case layer_info::kind::reshape: {
        v = to_nhwc(v);
        const auto& s = c.output->value.shape();
        std::vector<std::int64_t> target{-1};
        for (std::size_t d = 1; d < s.size(); ++d) target.push_back(std::int64_t(s[d]));
        if (s.size() == 2) {
          v.name = node("Flatten", {v.name}, c.path, {ox::int_attribute("axis", 1)});
        } else {
          const std::string shape = add_initializer(ox::tensor_data::int64(c.path + "/shape", {std::int64_t(target.size())}, target));
          v.name = node("Reshape", {v.name, shape}, c.path);
        }
        v.rank = s.size();
        v.nchw = false;
        values_[c.output] = v;
        return;
      }
      case layer_info::kind::max_pool: {
        v = to_nchw(v);
        const auto& s = c.inputs[0]->value.shape();
        const auto pads = window_pads(s, info->pool, info->pool_strides, {1, 1}, info->pool_padding);
        v.name = node("MaxPool", {v.name}, c.path,
                      {ox::ints_attribute("kernel_shape", {std::int64_t(info->pool[0]), std::int64_t(info->pool[1])}),
                       ox::ints_attribute("strides", {std::int64_t(info->pool_strides[0]), std::int64_t(info->pool_strides[1])}),
                       ox::ints_attribute("pads", onnx_pads(pads))});
        values_[c.output] = v;
        return;
      }
      case layer_info::kind::batch_norm: {
        if (info->fold) {  // folded into the conv before it
          values_[c.output] = v;
          return;
        }
        v = to_nchw(v);
        const norm_affine a = affine_of(*info->norm, c.path);
        const std::int64_t ch = std::int64_t(a.mean.size());
        // BatchNormalization with mean, variance 1 - eps... would re-round; instead the
        // affine form xquant computes: (x - mean) * scale + offset as Sub, Mul, Add.
        const std::vector<std::int64_t> dims = v.rank == 4 ? std::vector<std::int64_t>{ch, 1, 1} : std::vector<std::int64_t>{ch};
        const std::string mean = add_initializer(ox::tensor_data::float32(c.path + "/mean", dims, a.mean));
        const std::string scale = add_initializer(ox::tensor_data::float32(c.path + "/scale", dims, a.scale));
        const std::string offset = add_initializer(ox::tensor_data::float32(c.path + "/offset", dims, a.offset));
        std::string y = node("Sub", {v.name, mean}, c.path + "/centered");
        y = node("Mul", {y, scale}, c.path + "/scaled");
        v.name = node("Add", {y, offset}, c.path);
        values_[c.output] = v;
        return;
      }
      case layer_info::kind::average_pool: {
        // TF's same padding averages the non-padded elements only: count_include_pad 0.
        v = to_nchw(v);
        const auto& s = c.inputs[0]->value.shape();
        const auto pads = window_pads(s, info->pool, info->pool_strides, {1, 1}, info->pool_padding);
        v.name = node("AveragePool", {v.name}, c.path,
                      {ox::ints_attribute("kernel_shape", {std::int64_t(info->pool[0]), std::int64_t(info->pool[1])}),
                       ox::ints_attribute("strides", {std::int64_t(info->pool_strides[0]), std::int64_t(info->pool_strides[1])}),
                       ox::ints_attribute("pads", onnx_pads(pads)),
                       ox::int_attribute("count_include_pad", 0)});
        values_[c.output] = v;
        return;
      }
      case layer_info::kind::global_average_pool:
      case layer_info::kind::global_max_pool: {
        v = to_nchw(v);
        const bool average = info->what == layer_info::kind::global_average_pool;
        v.name = node(average ? "GlobalAveragePool" : "GlobalMaxPool", {v.name}, c.path + (info->keepdims ? "" : "/pooled"));
        if (!info->keepdims) {  // (N, C, 1, 1) -> (N, C)
          v.name = node("Flatten", {v.name}, c.path, {ox::int_attribute("axis", 1)});
          v.rank = 2;
          v.nchw = false;
        }
        values_[c.output] = v;
        return;
      }
      case layer_info::kind::activation:
        values_[c.output] = activation(v, info->function, info->alpha, c.path);
        return;
      case layer_info::kind::linear: export_linear(i, *info, v); return;
      case layer_info::kind::merge:
      case layer_info::kind::embedding:
      case layer_info::kind::function:
      case layer_info::kind::none: break;
    }
  }

  static int concat_axis_of(const traced_call& c) {
    const auto& in = c.inputs.at(0)->value.shape();
    const auto& out = c.output->value.shape();
    for (std::size_t d = 0; d < out.size() && d < in.size(); ++d)
      if (out[d] != in[d]) return int(d);
    return -1;
  }

  /// An activation in standard operators: Relu, Clip(0, 6), LeakyRelu, Sigmoid, Tanh,
  /// x * Sigmoid(x) (opset 13 has no Swish), Softmax over the last axis of the NHWC tensor.
  onnx_value activation(onnx_value v, const std::string& function, float alpha, const std::string& name) {
    if (function == "relu") v.name = node("Relu", {v.name}, name);
    else if (function == "relu6") v.name = node("Clip", {v.name, constant(0.0f), constant(6.0f)}, name);
    else if (function == "leaky_relu") v.name = node("LeakyRelu", {v.name}, name, {ox::float_attribute("alpha", alpha)});
    else if (function == "sigmoid") v.name = node("Sigmoid", {v.name}, name);
    else if (function == "tanh") v.name = node("Tanh", {v.name}, name);
    else if (function == "swish") v.name = node("Mul", {v.name, node("Sigmoid", {v.name}, name + "/sigmoid")}, name);
    else if (function == "softmax") {
      v = to_nhwc(v);
      v.name = node("Softmax", {v.name}, name, {ox::int_attribute("axis", -1)});
    } else {
      throw argument_error(name, "an activation with an ONNX form", function);
    }
    return v;
  }

  /// add / multiply / concatenate: each input through its own QDQ (if on), spatial
  /// inputs NCHW; Add, Mul and Concat (the NHWC axis mapped to NCHW).
  void export_merge(std::size_t i, const std::string& function, int axis, const std::vector<const site_quantizers*>& sites,
                    const std::string& name) {
    const traced_call& c = g_.calls()[i];
    std::vector<onnx_value> in;
    for (std::size_t k = 0; k < c.inputs.size(); ++k) {
      onnx_value v = to_nchw(value(c.inputs[k], c.describe()));
      if (const fake_quantizer* q = k < sites.size() ? site_quantizer(sites[k], i) : nullptr)
        v.name = qdq(v.name, *q, input_label(i, k), c.inputs[k]->value.shape());
      in.push_back(v);
    }
    onnx_value out = in.at(0);
    if (function == "concatenate") {
      const long rank = long(c.output->value.dimension());
      long ax = axis < 0 ? axis + rank : axis;
      if (rank == 4) ax = ax == 3 ? 1 : ax == 0 ? 0 : ax + 1;  // NHWC -> NCHW
      std::vector<std::string> names;
      for (const auto& v : in) names.push_back(v.name);
      out.name = node("Concat", names, name, {ox::int_attribute("axis", ax)});
    } else {
      const char* op = function == "add" ? "Add" : "Mul";
      for (std::size_t k = 1; k < in.size(); ++k)
        out.name = node(op, {out.name, in[k].name}, k + 1 == in.size() ? name : name + "/partial");
    }
    values_[c.output] = out;
  }

  std::string int64s(const std::string& name, const std::vector<std::int64_t>& v) {
    return add_initializer(ox::tensor_data::int64(name, {std::int64_t(v.size())}, v));
  }

  /// ReduceMean over `axes`, keeping them: an attribute to opset 17, an input from 18.
  std::string reduce_mean(const std::string& x, const std::vector<std::int64_t>& axes, const std::string& name) {
    if (o_.opset >= 18)
      return node("ReduceMean", {x, int64s(name + "/axes", axes)}, name, {ox::int_attribute("keepdims", 1)});
    return node("ReduceMean", {x}, name, {ox::ints_attribute("axes", axes), ox::int_attribute("keepdims", 1)});
  }

  /// (B, T, H*d) -> (B, H, T, d), or (B, H, d, T) with `keys_last`: one head per slice.
  std::string split_heads(const std::string& x, const tensor::shape_type& s, std::size_t heads, bool keys_last,
                          const std::string& name) {
    const std::string shape = int64s(name + "/heads_shape", {0, std::int64_t(s[1]), std::int64_t(heads),
                                                             std::int64_t(s[2] / heads)});
    const std::string r = node("Reshape", {x, shape}, name + "/heads");
    return node("Transpose", {r}, name + "/per_head",
                {ox::ints_attribute("perm", keys_last ? std::vector<std::int64_t>{0, 2, 3, 1}
                                                      : std::vector<std::int64_t>{0, 2, 1, 3})});
  }

  /// A layer or function the integer engine computes with xquant's own function
  /// (function_op.hpp), in standard operators: each input through its own QDQ site (if
  /// on); the spatial ones (padding, cropping, upsampling, the transposed convolution)
  /// NCHW, the rest in xquant's layout.
  void export_function(std::size_t i, const std::string& f, const std::vector<std::int64_t>& a, const layer_info* info) {
    const traced_call& c = g_.calls()[i];
    const std::string name = info ? c.path : fresh("ops/" + f);
    const bool spatial = f == "zero_padding2d" || f == "cropping2d" || f == "upsampling2d" || f == "conv2d_transpose";
    std::vector<onnx_value> in;
    for (std::size_t k = 0; k < c.inputs.size(); ++k) {
      onnx_value v = value(c.inputs[k], c.describe());
      if (info)
        if (const fake_quantizer* q = site_quantizer(input_sites(*info, k), i)) {
          v = to_nchw(v);  // exposed spatial tensors are NCHW
          v.name = qdq(v.name, *q, input_label(i, k), c.inputs[k]->value.shape());
        }
      // Elementwise functions take either layout (both inputs alike for the broadcasting ones).
      if (f != "gelu") v = spatial ? to_nchw(v) : to_nhwc(v);
      in.push_back(v);
    }
    const auto& s = c.inputs.at(0)->value.shape();
    const auto& out_shape = c.output->value.shape();
    onnx_value out{"", out_shape.size(), spatial && out_shape.size() == 4};
    const std::string& x = in.at(0).name;
    if (f == "zero_padding2d") {
      const std::string pads = int64s(name + "/pads", {0, 0, a[0], a[2], 0, 0, a[1], a[3]});
      out.name = node("Pad", {x, pads, constant(0.0f)}, name, {ox::string_attribute("mode", "constant")});
    } else if (f == "cropping2d") {
      out.name = node("Slice", {x, int64s(name + "/starts", {a[0], a[2]}),
                                int64s(name + "/ends", {std::int64_t(s[1]) - a[1], std::int64_t(s[2]) - a[3]}),
                                int64s(name + "/axes", {2, 3})}, name);
    } else if (f == "slice") {
      out.name = node("Slice", {x, int64s(name + "/starts", {a[1]}), int64s(name + "/ends", {a[2]}),
                                int64s(name + "/axes", {a[0]})}, name);
    } else if (f == "upsampling2d") {
      // Keras's nearest repeats each pixel: source floor(i / size), ONNX's asymmetric + floor.
      // Its bilinear is tf.image.resize's: half-pixel centres, clamped at the borders.
      const std::string scales = add_initializer(ox::tensor_data::float32(
          name + "/scales", {4}, {1.0f, 1.0f, float(a[0]), float(a[1])}));
      std::vector<ox::attribute> attrs;
      if (a[2]) {
        attrs = {ox::string_attribute("mode", "linear"), ox::string_attribute("coordinate_transformation_mode", "half_pixel")};
      } else {
        attrs = {ox::string_attribute("mode", "nearest"), ox::string_attribute("coordinate_transformation_mode", "asymmetric"),
                 ox::string_attribute("nearest_mode", "floor")};
      }
      out.name = node("Resize", {x, "", scales}, name, attrs);
    } else if (f == "transpose") {
      out.name = node("Transpose", {x}, name, {ox::ints_attribute("perm", a)});
    } else if (f == "gelu") {
      // xquant's (and TF's) order: 0.5 * x * (1 + erf(x / sqrt 2)), or with
      // tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)).
      out = in[0];
      const std::string half = node("Mul", {x, constant(0.5f)}, name + "/half");
      std::string inner;
      if (a[0]) {
        const std::string cube = node("Mul", {node("Mul", {x, x}, name + "/square"), x}, name + "/cube");
        const std::string sum = node("Add", {x, node("Mul", {cube, constant(0.044715f)}, name + "/cubic")}, name + "/sum");
        inner = node("Tanh", {node("Mul", {sum, constant(0.7978845608028654f)}, name + "/scaled")}, name + "/tanh");
      } else {
        inner = node("Erf", {node("Mul", {x, constant(0.7071067811865476f)}, name + "/scaled")}, name + "/erf");
      }
      out.name = node("Mul", {half, node("Add", {inner, constant(1.0f)}, name + "/one_plus")}, name);
    } else if (f == "layer_norm") {
      // (x - mean) / sqrt(variance + epsilon) * gamma + beta, the biased variance over the axes.
      const std::string mean = reduce_mean(x, a, name + "/mean");
      const std::string centred = node("Sub", {x, mean}, name + "/centred");
      const std::string variance = reduce_mean(node("Mul", {centred, centred}, name + "/squared"), a, name + "/variance");
      const std::string root = node("Sqrt", {node("Add", {variance, constant(info->floats.at(0))}, name + "/eps")}, name + "/std");
      std::string y = node("Div", {centred, root}, name + "/normalized");
      // gamma and beta (the normalized axes' shape) broadcast from the right: 1 elsewhere.
      std::vector<std::int64_t> dims;
      for (std::size_t d = 1; d < s.size(); ++d)
        dims.push_back(std::find(a.begin(), a.end(), std::int64_t(d)) != a.end() ? std::int64_t(s[d]) : 1);
      const tensor& gamma = info->tensors.at(0);
      const tensor& beta = info->tensors.at(1);
      if (gamma.size())
        y = node("Mul", {y, add_initializer(ox::tensor_data::float32(name + "/gamma", dims, std::vector<float>(gamma.begin(), gamma.end())))},
                 beta.size() ? name + "/scaled" : name);
      if (beta.size())
        y = node("Add", {y, add_initializer(ox::tensor_data::float32(name + "/beta", dims, std::vector<float>(beta.begin(), beta.end())))}, name);
      out.name = y;
    } else if (f == "broadcast_add" || f == "subtract" || f == "broadcast_multiply") {
      const char* op = f == "broadcast_add" ? "Add" : f == "subtract" ? "Sub" : "Mul";
      out.name = node(op, {x, in.at(1).name}, name);
    } else if (f == "matmul") {
      auto transposed = [&](const onnx_value& v, const std::string& n) {
        std::vector<std::int64_t> perm;
        for (std::size_t d = 0; d < v.rank; ++d) perm.push_back(std::int64_t(d));
        std::swap(perm[v.rank - 1], perm[v.rank - 2]);
        return node("Transpose", {v.name}, n, {ox::ints_attribute("perm", perm)});
      };
      const std::string lhs = a[0] ? transposed(in[0], name + "/a_transposed") : in[0].name;
      const std::string rhs = a[1] ? transposed(in[1], name + "/b_transposed") : in[1].name;
      out.name = node("MatMul", {lhs, rhs}, name);
    } else if (f == "attention_probabilities") {
      // Keras: the query scaled by 1 / sqrt(d), times the keys; masked scores -1e9; softmax.
      const std::size_t heads = std::size_t(a[0]), d = s[2] / heads;
      const auto& ks = c.inputs.at(1)->value.shape();
      const std::string q = node("Mul", {split_heads(x, s, heads, false, name + "/query"),
                                         constant(float(1.0 / std::sqrt(double(d))))}, name + "/query/scaled");
      std::string scores = node("MatMul", {q, split_heads(in[1].name, ks, heads, true, name + "/key")}, name + "/scores");
      const std::int64_t tq = std::int64_t(s[1]), tk = std::int64_t(ks[1]);
      std::string keep;
      if (a[1]) {  // causal: key j <= query i
        std::vector<float> lower(std::size_t(tq * tk));
        for (std::int64_t r = 0; r < tq; ++r)
          for (std::int64_t k = 0; k < tk; ++k) lower[std::size_t(r * tk + k)] = k <= r ? 1.0f : 0.0f;
        keep = add_initializer(ox::tensor_data::float32(name + "/causal", {tq, tk}, lower));
      }
      if (in.size() > 2) {  // a mask (B, Tq, Tk): nonzero keeps, one for every head
        const std::string nonzero = node("Not", {node("Equal", {in[2].name, constant(0.0f)}, name + "/mask_zero")}, name + "/mask_keep");
        std::string m = node("Cast", {nonzero}, name + "/mask_float", {ox::int_attribute("to", 1)});  // FLOAT
        m = node("Unsqueeze", {m, int64s(name + "/head_axis", {1})}, name + "/mask_heads");
        keep = keep.empty() ? m : node("Mul", {m, keep}, name + "/keep");
      }
      if (!keep.empty()) {
        const std::string fill = node("Mul", {node("Sub", {constant(1.0f), keep}, name + "/dropped"), constant(-1e9f)}, name + "/fill");
        scores = node("Add", {node("Mul", {scores, keep}, name + "/kept"), fill}, name + "/masked");
      }
      out.name = node("Softmax", {scores}, name, {ox::int_attribute("axis", -1)});
    } else if (f == "attend") {
      // p (B, H, Tq, Tk) times the values per head, heads merged back: (B, Tq, H*V).
      const auto& ps = s;
      const auto& vs = c.inputs.at(1)->value.shape();
      const std::size_t heads = ps[1];
      const std::string context = node("MatMul", {x, split_heads(in[1].name, vs, heads, false, name + "/value")}, name + "/context");
      const std::string merged = node("Transpose", {context}, name + "/merged", {ox::ints_attribute("perm", {0, 2, 1, 3})});
      out.name = node("Reshape", {merged, int64s(name + "/shape", {0, std::int64_t(ps[2]), std::int64_t(vs[2])})}, name);
    } else if (f == "conv2d_transpose") {
      out.name = conv_transpose(i, *info, a, x);
    } else if (f == "lstm_recurrence" || f == "gru_recurrence") {
      out.name = recurrence(i, *info, f == "lstm_recurrence", a, x);
    } else {
      throw argument_error(name, "a function with an ONNX form", f);
    }
    values_[c.output] = out;
  }

  /// ONNX's LSTM / GRU over the projected inputs xw (B, T, G·u) that the layer's dense
  /// child made: X is xw time-major; W is the permutation that puts Keras's gate columns in
  /// ONNX's order (one 1 per row, so X·Wᵀ is xw exactly; LSTM Keras i, f, c, o -> ONNX
  /// i, o, f, c; GRU z, r, h in both); R the recurrent kernel's columns so reordered, as
  /// rows (its quantizer's integers + DequantizeLinear when quantized); B = [0, the bias].
  /// GRU's reset_after is linear_before_reset. go_backwards runs `reverse`, whose Y is in
  /// input order: reversed back into Keras's processing order.
  std::string recurrence(std::size_t i, const layer_info& info, bool lstm, const std::vector<std::int64_t>& a,
                         const std::string& x) {
    const traced_call& c = g_.calls()[i];
    const std::string& name = c.path;
    const tensor& kernel = info.tensors.at(0);
    const std::size_t u = kernel.shape()[0], gu = kernel.shape()[1];
    auto row_of = [&](std::size_t j) {  // Keras column j -> ONNX gate row
      static constexpr std::size_t lstm_order[] = {0, 2, 3, 1};  // i, f, c, o -> i, o, f, c
      const std::size_t g = j / u;
      return (lstm ? lstm_order[g] : g) * u + j % u;
    };
    std::vector<float> w(gu * gu, 0.0f);
    for (std::size_t j = 0; j < gu; ++j) w[row_of(j) * gu + j] = 1.0f;
    const std::string W = add_initializer(ox::tensor_data::float32(name + "/input_permutation",
                                                                   {1, std::int64_t(gu), std::int64_t(gu)}, w));
    auto as_rows = [&](const auto& k) {  // (u, G·u) -> (1, G·u, u)
      std::remove_const_t<std::remove_reference_t<decltype(k)>> r(k.size());
      for (std::size_t m = 0; m < u; ++m)
        for (std::size_t j = 0; j < gu; ++j) r[row_of(j) * u + m] = k[m * gu + j];
      return r;
    };
    const std::vector<std::int64_t> rdims{1, std::int64_t(gu), std::int64_t(u)};
    const fake_quantizer* wq = info.weight && info.weight->enabled() ? info.weight : nullptr;
    std::string R;
    if (!wq) {
      R = add_initializer(ox::tensor_data::float32(name + "/recurrent_kernel", rdims,
                                                   as_rows(std::vector<float>(kernel.begin(), kernel.end()))));
    } else {
      const kernels::channel_layout wl =
          wq->config().per_channel ? kernels::channel_layout::of(kernel.shape(), wq->config().channel_axis, wq->path().c_str())
                                   : kernels::channel_layout{1, 1, kernel.size()};
      const quantization_grid wg = wq->grid(wl.channels);
      note_quantizer(*wq, wg);
      const bool per_channel = wg.per_channel && wg.channels() > 1;
      const long axis = wq->config().channel_axis < 0 ? wq->config().channel_axis + 2 : wq->config().channel_axis;
      if (per_channel && axis != 1)
        throw argument_error(wq->path(), "a per-channel recurrent kernel grid on its gate columns (axis -1)",
                             xq::detail::concat("axis ", wq->config().channel_axis));
      const std::int32_t offset = int8_offset(wg, wq->path());
      std::vector<float> scales(per_channel ? gu : 1);
      std::vector<std::int8_t> zps(per_channel ? gu : 1);
      for (std::size_t j = 0; j < scales.size(); ++j) {
        const std::size_t at = per_channel ? row_of(j) : 0;
        scales[at] = wg.scale[j];
        zps[at] = std::int8_t(wg.zero_point[j] + offset);
      }
      const std::vector<std::int64_t> sdims = per_channel ? std::vector<std::int64_t>{std::int64_t(gu)} : std::vector<std::int64_t>{};
      std::vector<ox::attribute> axis_attr;
      if (per_channel) axis_attr.push_back(ox::int_attribute("axis", 1));
      const std::string sc = add_initializer(ox::tensor_data::float32(name + "/recurrent_kernel/scale", sdims, scales));
      const std::string zp = add_initializer(ox::tensor_data::int8(name + "/recurrent_kernel/zero_point", sdims, zps));
      const std::vector<std::int32_t> q = wq->integers(kernel);
      std::vector<std::int8_t> q8(q.size());
      for (std::size_t e = 0; e < q.size(); ++e) q8[e] = std::int8_t(q[e] + offset);
      R = add_initializer(ox::tensor_data::int8(name + "/recurrent_kernel", rdims, as_rows(q8)));
      R = node("DequantizeLinear", {R, sc, zp}, name + "/recurrent_kernel/dq", axis_attr);
    }
    std::vector<std::string> inputs{node("Transpose", {x}, name + "/time_major", {ox::ints_attribute("perm", {1, 0, 2})}), W, R};
    const tensor& bias = info.tensors.at(1);
    if (bias.size()) {
      std::vector<float> b(2 * gu, 0.0f);
      for (std::size_t j = 0; j < gu; ++j) b[gu + row_of(j)] = bias.data()[j];
      inputs.push_back(add_initializer(ox::tensor_data::float32(name + "/bias", {1, std::int64_t(2 * gu)}, b)));
    }
    const bool sequences = a[0] != 0, backwards = a[1] != 0;
    std::vector<ox::attribute> attrs{ox::int_attribute("hidden_size", std::int64_t(u)),
                                     ox::string_attribute("direction", backwards ? "reverse" : "forward")};
    if (!lstm) attrs.push_back(ox::int_attribute("linear_before_reset", a[2]));
    const std::string y = fresh(name + (sequences ? "/sequence" : "/last"));
    g_out_.add_node(lstm ? "LSTM" : "GRU", inputs, sequences ? std::vector<std::string>{y} : std::vector<std::string>{"", y},
                    attrs, fresh("node/" + name));
    if (!sequences)  // Y_h (1, B, u) -> (B, u): the last step processed
      return node("Squeeze", {y, int64s(name + "/direction_axis", {0})}, name);
    // Y (T, 1, B, u) -> (B, T, u), in the order the steps ran.
    std::string seq = node("Squeeze", {y, int64s(name + "/direction_axis", {1})}, name + "/steps");
    seq = node("Transpose", {seq}, backwards ? name + "/batch_major" : name, {ox::ints_attribute("perm", {1, 0, 2})});
    if (backwards)
      seq = node("Slice", {seq, int64s(name + "/reversed/starts", {-1}),
                           int64s(name + "/reversed/ends", {std::numeric_limits<std::int64_t>::min()}),
                           int64s(name + "/reversed/axes", {1}), int64s(name + "/reversed/steps", {-1})}, name);
    return seq;
  }

  /// ConvTranspose: the adjoint of the convolution with the same pads (kernel (C, F, KH, KW)),
  /// output_padding to Keras's size; the kernel the simulation quantized as the kernel's
  /// integers + DequantizeLinear (float + Q + DQ in NVIDIA's layout), its bias in float.
  std::string conv_transpose(std::size_t i, const layer_info& info, const std::vector<std::int64_t>& a, const std::string& x) {
    const traced_call& c = g_.calls()[i];
    const tensor& kernel = info.tensors.at(0);
    const auto& ks = kernel.shape();
    const std::size_t kh = ks[0], kw = ks[1], f = ks[2], ch = ks[3];
    auto onnx_order = [&](auto values) {  // (KH, KW, F, C) -> (C, F, KH, KW)
      decltype(values) o(values.size());
      for (std::size_t u = 0; u < kh; ++u)
        for (std::size_t v = 0; v < kw; ++v)
          for (std::size_t p = 0; p < f; ++p)
            for (std::size_t q = 0; q < ch; ++q) o[((q * f + p) * kh + u) * kw + v] = values[((u * kw + v) * f + p) * ch + q];
      return o;
    };
    const std::vector<std::int64_t> wdims{std::int64_t(ch), std::int64_t(f), std::int64_t(kh), std::int64_t(kw)};
    const fake_quantizer* wq = info.weight && info.weight->enabled() ? info.weight : nullptr;
    const std::string wname = c.path + "/kernel";
    std::string weight;
    if (!wq) {
      weight = add_initializer(ox::tensor_data::float32(wname, wdims, onnx_order(std::vector<float>(kernel.begin(), kernel.end()))));
    } else {
      const kernels::channel_layout wl =
          wq->config().per_channel ? kernels::channel_layout::of(ks, wq->config().channel_axis, wq->path().c_str())
                                   : kernels::channel_layout{1, 1, kernel.size()};
      const quantization_grid wg = wq->grid(wl.channels);
      note_quantizer(*wq, wg);
      const std::int32_t offset = int8_offset(wg, wq->path());
      const bool per_channel = wg.per_channel && wg.channels() > 1;
      std::vector<std::int64_t> sdims;
      std::vector<ox::attribute> axis_attr;
      if (per_channel) {
        const long k_axis = wq->config().channel_axis < 0 ? wq->config().channel_axis + 4 : wq->config().channel_axis;
        const std::int64_t onnx_axis = k_axis == 0 ? 2 : k_axis == 1 ? 3 : k_axis == 2 ? 1 : 0;
        sdims = {std::int64_t(wg.channels())};
        axis_attr.push_back(ox::int_attribute("axis", onnx_axis));
      }
      std::vector<float> scales = wg.scale;
      std::vector<std::int8_t> zps;
      for (std::int32_t z : wg.zero_point) zps.push_back(std::int8_t(z + offset));
      if (!per_channel) scales.resize(1), zps.resize(1);
      const std::string sc = add_initializer(ox::tensor_data::float32(wname + "/scale", sdims, scales));
      const std::string zp = add_initializer(ox::tensor_data::int8(wname + "/zero_point", sdims, zps));
      if (o_.weight_layout == onnx_weight_layout::int8_weights) {
        const std::vector<std::int32_t> q = wq->integers(kernel);
        std::vector<std::int8_t> q8(q.size());
        for (std::size_t e = 0; e < q.size(); ++e) q8[e] = std::int8_t(q[e] + offset);
        weight = add_initializer(ox::tensor_data::int8(wname, wdims, onnx_order(q8)));
      } else {
        if (!wg.symmetric() || offset)
          throw argument_error(wq->path(), "a symmetric kernel grid (zero point 0) for the float_qdq layout", describe(wg));
        weight = add_initializer(ox::tensor_data::float32(wname, wdims, onnx_order(std::vector<float>(kernel.begin(), kernel.end()))));
        weight = node("QuantizeLinear", {weight, sc, zp}, wname + "/q", axis_attr);
      }
      weight = node("DequantizeLinear", {weight, sc, zp}, wname + "/dq", axis_attr);
    }
    const auto& s = c.inputs.at(0)->value.shape();
    const auto& y = c.output->value.shape();
    const std::array<std::size_t, 2> strides{std::size_t(a[0]), std::size_t(a[1])}, dilation{std::size_t(a[2]), std::size_t(a[3])};
    const auto pads = window_pads(y, {kh, kw}, strides, dilation, a[4] ? xq::padding::same : xq::padding::valid);
    std::vector<std::int64_t> output_padding(2);
    for (std::size_t d = 0; d < 2; ++d) {
      const std::size_t k = d ? kw : kh;
      const std::int64_t natural = std::int64_t(strides[d] * (s[1 + d] - 1) + (k - 1) * dilation[d] + 1) -
                                   std::int64_t(pads[d] + pads[d + 2]);
      output_padding[d] = std::int64_t(y[1 + d]) - natural;
    }
    std::vector<std::string> inputs{x, weight};
    const tensor& bias = info.tensors.at(1);
    if (bias.size())
      inputs.push_back(add_initializer(ox::tensor_data::float32(c.path + "/bias", {std::int64_t(f)}, std::vector<float>(bias.begin(), bias.end()))));
    return node("ConvTranspose", inputs, c.path,
                {ox::ints_attribute("kernel_shape", {std::int64_t(kh), std::int64_t(kw)}),
                 ox::ints_attribute("strides", {a[0], a[1]}), ox::ints_attribute("dilations", {a[2], a[3]}),
                 ox::ints_attribute("pads", onnx_pads(pads)), ox::ints_attribute("output_padding", output_padding)});
  }

  /// An embedding: Gather of the table (its kernel quantizer's integers + DequantizeLinear,
  /// or floats; a tied table is one initializer) at the ids cast to int64.
  void export_embedding(std::size_t i, const layer_info& info) {
    const traced_call& c = g_.calls()[i];
    const onnx_value ids = value(c.inputs.at(0), c.describe());
    const fake_quantizer* wq = info.weight && info.weight->enabled() ? info.weight : nullptr;
    std::vector<float> unused;
    const std::string table = weight_2d(c.path, info, wq, 0, unused);
    const std::string index = node("Cast", {ids.name}, c.path + "/ids", {ox::int_attribute("to", 7)});  // INT64
    const std::string y = node("Gather", {table, index}, c.path, {ox::int_attribute("axis", 0)});
    values_[c.output] = onnx_value{y, c.output->value.dimension(), false};
  }

  /// What brings a kernel grid's integers and zero points onto int8: 0 where they fit, -128
  /// for a uint8 grid (tfmot's FakeQuant kernels: [1, 255] around a nudged zero point).
  /// DequantizeLinear computes (q - zero_point) * scale: the same reals, shifted together.
  static std::int32_t int8_offset(const quantization_grid& g, const std::string& path) {
    if (g.fits_int8()) return 0;
    if (g.fits_uint8()) return -128;
    throw argument_error(path, "a kernel grid of int8 (or uint8) integers", describe(g));
  }

  /// A rank-2 kernel in its own layout ((K, F) dense, (V, D) table): the simulation's
  /// integers + DequantizeLinear, or — for a weight tied between layers, which keep ONE
  /// initializer — the float matrix and, per quantized use, its own QuantizeLinear →
  /// DequantizeLinear (each use has its own kernel quantizer). `channel_scale` gets s_w
  /// per output channel (axis `out_axis`); empty when the grid is per channel on the other axis.
  std::string weight_2d(const std::string& path, const layer_info& info, const fake_quantizer* wq, std::size_t out_axis,
                        std::vector<float>& channel_scale) {
    const tensor& k = info.kernel;
    const auto& ks = k.shape();
    const std::size_t f = ks[out_axis];
    const bool tied = info.kernel_id && kernel_users_[info.kernel_id] > 1 && o_.share_reused_weights;
    channel_scale.assign(f, 1.0f);
    const std::string store_key = tied ? xq::detail::concat("tied:", info.kernel_id)
                                       : path + (o_.share_reused_weights ? std::string() : "#" + std::to_string(weights_2d_.size()));
    if (!wq) {
      auto it = weights_2d_.find(store_key);
      if (it == weights_2d_.end())
        it = weights_2d_.emplace(store_key, add_initializer(ox::tensor_data::float32(
                                                (tied ? "tied/" : "") + path + "/kernel", dims64(ks),
                                                std::vector<float>(k.begin(), k.end())))).first;
      return it->second;
    }
    const kernels::channel_layout wl =
        wq->config().per_channel ? kernels::channel_layout::of(ks, wq->config().channel_axis, wq->path().c_str())
                                 : kernels::channel_layout{1, 1, k.size()};
    const quantization_grid wg = wq->grid(wl.channels);
    note_quantizer(*wq, wg);
    const std::int32_t offset = int8_offset(wg, wq->path());
    const bool per_channel = wg.per_channel && wg.channels() > 1;
    const long axis = per_channel ? (wq->config().channel_axis < 0 ? wq->config().channel_axis + 2 : wq->config().channel_axis) : 0;
    if (per_channel && std::size_t(axis) != out_axis) channel_scale.clear();
    else
      for (std::size_t o = 0; o < f; ++o) channel_scale[o] = wg.scale[per_channel ? o : 0];
    std::vector<std::int8_t> zps;
    for (std::int32_t z : wg.zero_point) zps.push_back(std::int8_t(z + offset));
    const std::vector<std::int64_t> sdims = per_channel ? std::vector<std::int64_t>{std::int64_t(wg.channels())}
                                                        : std::vector<std::int64_t>{};
    std::vector<float> scales = wg.scale;
    if (!per_channel) scales.resize(1), zps.resize(1);
    auto params = weight_params_.find(wq);
    if (params == weight_params_.end()) {
      const std::string sc = add_initializer(ox::tensor_data::float32(wq->path() + "/scale", sdims, scales));
      const std::string zp = add_initializer(ox::tensor_data::int8(wq->path() + "/zero_point", sdims, zps));
      params = weight_params_.emplace(wq, std::make_pair(sc, zp)).first;
    }
    std::vector<ox::attribute> axis_attr;
    if (per_channel) axis_attr.push_back(ox::int_attribute("axis", axis));
    const auto& [sc, zp] = params->second;
    if (!tied && o_.weight_layout == onnx_weight_layout::int8_weights) {
      const std::string key = store_key + "#int8";
      auto it = weights_2d_.find(key);
      if (it == weights_2d_.end()) {
        const std::vector<std::int32_t> q = wq->integers(k);
        std::vector<std::int8_t> q8(q.size());
        for (std::size_t e = 0; e < q.size(); ++e) q8[e] = std::int8_t(q[e] + offset);
        it = weights_2d_.emplace(key, add_initializer(ox::tensor_data::int8(path + "/kernel", dims64(ks), q8))).first;
      }
      return node("DequantizeLinear", {it->second, sc, zp}, path + "/kernel/dq", axis_attr);
    }
    if (!wg.symmetric() || offset)
      throw argument_error(wq->path(), "a symmetric kernel grid (zero point 0) for a float kernel + QuantizeLinear", describe(wg));
    auto it = weights_2d_.find(store_key);
    if (it == weights_2d_.end())
      it = weights_2d_.emplace(store_key, add_initializer(ox::tensor_data::float32(
                                              (tied ? "tied/" : "") + path + "/kernel", dims64(ks),
                                              std::vector<float>(k.begin(), k.end())))).first;
    const std::string q = node("QuantizeLinear", {it->second, sc, zp}, path + "/kernel/q", axis_attr);
    return node("DequantizeLinear", {q, sc, zp}, path + "/kernel/dq", axis_attr);
  }

  /// The ONNX kernel of a linear layer from integers or floats in Keras layout (HWIO,
  /// depthwise HW·C·M, dense (K, F)) → OIHW (depthwise (C·M, 1, KH, KW)) or (K, F).
  template <class T>
  static std::vector<T> to_onnx_layout(const std::vector<T>& w, const layer_info& info, const tensor::shape_type& s,
                                       std::vector<std::int64_t>& dims) {
    if (info.linear_form == layer_info::form::dense) {
      dims = {std::int64_t(s[0]), std::int64_t(s[1])};
      return w;
    }
    const std::size_t kh = s[0], kw = s[1], c = s[2], f = s[3];
    std::vector<T> out(w.size());
    if (info.linear_form == layer_info::form::conv2d) {
      dims = {std::int64_t(f), std::int64_t(c), std::int64_t(kh), std::int64_t(kw)};
      for (std::size_t u = 0; u < kh; ++u)
        for (std::size_t v = 0; v < kw; ++v)
          for (std::size_t ch = 0; ch < c; ++ch)
            for (std::size_t o = 0; o < f; ++o) out[((o * c + ch) * kh + u) * kw + v] = w[((u * kw + v) * c + ch) * f + o];
    } else {  // depthwise: (KH, KW, C, M) → (C*M, 1, KH, KW), output channel ch*M + m
      dims = {std::int64_t(c * f), 1, std::int64_t(kh), std::int64_t(kw)};
      for (std::size_t u = 0; u < kh; ++u)
        for (std::size_t v = 0; v < kw; ++v)
          for (std::size_t ch = 0; ch < c; ++ch)
            for (std::size_t m = 0; m < f; ++m) out[((ch * f + m) * kh + u) * kw + v] = w[((u * kw + v) * c + ch) * f + m];
    }
    return out;
  }

  void export_linear(std::size_t i, const layer_info& info, onnx_value v) {
    const traced_call& c = g_.calls()[i];
    const bool dense = info.linear_form == layer_info::form::dense;
    const fake_quantizer* iq = info.larq ? nullptr : site_quantizer(info.input, i);
    const fake_quantizer* wq = !info.larq && info.weight && info.weight->enabled() ? info.weight : nullptr;
    using lq = layer_info::larq_quantizer;
    if (info.larq && info.larq_input == lq::other)
      throw argument_error(c.path, "Larq input quantizers with an ONNX form (ste_sign, approx_sign)",
                           "another quantizer");
    v = dense ? to_nhwc(v) : to_nchw(v);
    if (iq) v.name = qdq(v.name, *iq, input_label(i, 0), c.inputs[0]->value.shape());
    if (info.larq && info.larq_input == lq::sign) {  // sign(x), sign(0) = +1
      const std::string zero = constant(0.0f), one = constant(1.0f), minus = constant(-1.0f);
      const std::string ge = node("GreaterOrEqual", {v.name, zero}, c.path + "/nonnegative");
      v.name = node("Where", {ge, one, minus}, c.path + "/sign");
    }
    if (!dense && info.larq && info.larq_input == lq::sign && info.geometry.padding == xq::padding::same &&
        info.pad_value != 0.0f) {  // Larq's pad_values: pad with the value, then a valid window
      const auto& s = c.inputs[0]->value.shape();
      const auto p = window_pads(s, info.kernel_size, info.geometry.strides, info.geometry.dilation, xq::padding::same);
      const std::string pads = add_initializer(ox::tensor_data::int64(
          c.path + "/pads", {8},
          {0, 0, std::int64_t(p[0]), std::int64_t(p[1]), 0, 0, std::int64_t(p[2]), std::int64_t(p[3])}));
      v.name = node("Pad", {v.name, pads, constant(info.pad_value)}, c.path + "/padded", {ox::string_attribute("mode", "constant")});
      pad_done_ = true;
    }

    // The kernel: the integers the simulation used, or floats.
    std::vector<float> fold_scale;
    const tensor kernel = info.larq ? (info.larq_kernel == lq::none ? info.kernel : info.larq_quantized_kernel)
                                    : quantized_kernel_input(info, &fold_scale);
    const auto& ks = kernel.shape();
    const std::size_t f = info.transposed                                          ? ks[0]
                          : info.linear_form == layer_info::form::depthwise_conv2d ? ks[2] * ks[3]
                                                                                   : ks.back();
    const std::string wname = c.path + "/kernel";
    // A weight tied between layers (one initializer) or a tied projection's table.
    const bool two_d = !info.larq && !info.fold && dense && info.kernel_id &&
                       (info.transposed || (kernel_users_[info.kernel_id] > 1 && o_.share_reused_weights));
    // Initializers once per layer; the nodes that dequantize them once per call site (a
    // DequantizeLinear shared by two convs makes onnxruntime 1.32's QDQ fusion fail with
    // "Attempt to replace the existing tensor").
    const std::string weight_key = o_.share_reused_weights ? c.path : c.path + "#" + std::to_string(occurrence_[i]);
    auto cached = kernels_.find(weight_key);
    kernel_entry two_d_entry;  // its nodes per call site, its initializers once (weight_2d)
    if (two_d) {
      two_d_entry.stored = weight_2d(c.path, info, wq, info.transposed ? 0 : 1, two_d_entry.channel_scale);
      two_d_entry.prebuilt = true;
    } else if (cached == kernels_.end()) {
      kernel_entry k;
      if (wq || (info.larq && info.larq_kernel == lq::sign)) {
        std::vector<std::int32_t> q;
        quantization_grid wg;
        if (wq) {
          const kernels::channel_layout wl =
              wq->config().per_channel ? kernels::channel_layout::of(ks, wq->config().channel_axis, wq->path().c_str())
                                       : kernels::channel_layout{1, 1, kernel.size()};
          wg = wq->grid(wl.channels);
          q = wq->integers(kernel);
          note_quantizer(*wq, wg);
          if (!wg.symmetric() && o_.weight_layout == onnx_weight_layout::float_qdq)
            throw argument_error(wq->path(), "a symmetric kernel grid (zero point 0) for the float_qdq layout",
                                 describe(wg));
        } else {  // Larq's ±1 kernel: integers with scale 1
          wg.scale = {1.0f};
          wg.zero_point = {0};
          wg.qmin = -1;
          wg.qmax = 1;
          q.resize(kernel.size());
          for (std::size_t e = 0; e < q.size(); ++e) q[e] = kernel.data()[e] < 0 ? -1 : 1;
        }
        const std::int32_t offset = int8_offset(wg, wname);
        std::vector<float> scales(f);
        std::vector<std::int8_t> zps(f);
        k.channel_scale.assign(f, 1.0f);
        for (std::size_t o = 0; o < f; ++o) {
          const std::size_t ch = weight_channel(info, wg, kernel.dimension(), o, wname);
          k.channel_scale[o] = scales[o] = wg.scale[ch];
          zps[o] = std::int8_t(wg.zero_point[ch] + offset);
        }
        k.per_channel = wg.per_channel && wg.channels() > 1;
        const std::vector<std::int64_t> sdims =
            k.per_channel ? std::vector<std::int64_t>{std::int64_t(f)} : std::vector<std::int64_t>{};
        if (!k.per_channel) {
          scales.resize(1);
          zps.resize(1);
        }
        const bool int4 = o_.opset >= 21 && wg.num_bits <= 4 && !info.larq;
        k.scale = add_initializer(ox::tensor_data::float32(wname + "/scale", sdims, scales));
        k.zero_point = add_initializer(int4 ? ox::tensor_data::int4(wname + "/zero_point", sdims, zps)
                                            : ox::tensor_data::int8(wname + "/zero_point", sdims, zps));
        std::vector<std::int8_t> q8(q.size());
        for (std::size_t e = 0; e < q.size(); ++e) q8[e] = std::int8_t(q[e] + offset);
        std::vector<std::int64_t> wdims;
        if (o_.weight_layout == onnx_weight_layout::int8_weights || info.larq) {
          const std::vector<std::int8_t> ql = to_onnx_layout(q8, info, ks, wdims);
          k.stored = add_initializer(int4 ? ox::tensor_data::int4(wname, wdims, ql) : ox::tensor_data::int8(wname, wdims, ql));
          k.dequantize = true;
        } else {  // NVIDIA: the float kernel the quantizer saw, Q then DQ
          const std::vector<float> kl = to_onnx_layout(std::vector<float>(kernel.begin(), kernel.end()), info, ks, wdims);
          k.stored = add_initializer(ox::tensor_data::float32(wname, wdims, kl));
          k.quantize = k.dequantize = true;
        }
      } else {  // float kernel (a float model, or its kernel quantizer off; folded: kernel * s)
        std::vector<std::int64_t> wdims;
        const std::vector<float> kl = to_onnx_layout(std::vector<float>(kernel.begin(), kernel.end()), info, ks, wdims);
        k.stored = add_initializer(ox::tensor_data::float32(wname, wdims, kl));
        k.channel_scale.assign(f, 1.0f);
      }
      cached = kernels_.emplace(weight_key, std::move(k)).first;
    }
    const kernel_entry& k = two_d ? two_d_entry : cached->second;
    const std::vector<float>& channel_scale = k.channel_scale;
    const bool int32_bias_possible = channel_scale.size() == f;
    std::string weight = k.stored;
    std::vector<ox::attribute> axis_attr;
    if (k.per_channel) axis_attr.push_back(ox::int_attribute("axis", dense ? 1 : 0));
    if (k.quantize) weight = node("QuantizeLinear", {weight, k.scale, k.zero_point}, wname + "/q", axis_attr);
    if (k.dequantize) weight = node("DequantizeLinear", {weight, k.scale, k.zero_point}, wname + "/dq", axis_attr);

    // The bias: folded batch norm and the layer's own, int32 at s_in * s_w when the input
    // and kernel are quantized (onnxruntime fuses it into QLinearConv / QGemm), else float.
    const traced_call* norm_call = nullptr;
    norm_affine norm;
    if (info.fold) {
      const auto uses = uses_of(c.output);
      const layer_info* ni = uses.size() == 1 ? info_of(*uses[0]) : nullptr;
      if (!ni || ni->what != layer_info::kind::batch_norm)
        throw argument_error(c.path, "its folded batch norm as the only use of its output", "another use");
      norm_call = uses[0];
      norm = affine_of(*ni->norm, ni->path);
    }
    const bool has_bias = info.bias.size() > 0 || norm_call;
    std::string bias;
    if (has_bias) {
      // An int32 bias is at s_in * s_w: call sites with their own input ranges need their own.
      const std::string bias_key =
          weight_key + (iq ? "@" + xq::detail::concat(iq->grid(1).scale[0]) : std::string());
      auto b_cached = biases_.find(bias_key);
      if (b_cached == biases_.end()) {
        std::vector<double> b(f);
        for (std::size_t o = 0; o < f; ++o) {
          b[o] = info.bias.size() ? double(info.bias.data()[o]) : 0.0;
          if (norm_call) b[o] = (b[o] - double(norm.mean[o])) * double(norm.scale[o]) + double(norm.offset[o]);
        }
        std::vector<std::string> names;
        if (iq && wq && o_.weight_layout == onnx_weight_layout::int8_weights && int32_bias_possible) {
          const float s_in = iq->grid(1).scale[0];
          std::vector<std::int32_t> bi(f);
          std::vector<float> bs(f);
          for (std::size_t o = 0; o < f; ++o) {
            bs[o] = s_in * channel_scale[o];
            bi[o] = std::int32_t(std::nearbyint(b[o] / double(bs[o])));
          }
          names.push_back(add_initializer(ox::tensor_data::int32(c.path + "/bias", {std::int64_t(f)}, bi)));
          names.push_back(add_initializer(ox::tensor_data::float32(c.path + "/bias/scale", {std::int64_t(f)}, bs)));
          names.push_back(add_initializer(
              ox::tensor_data::int32(c.path + "/bias/zero_point", {std::int64_t(f)}, std::vector<std::int32_t>(f, 0))));
        } else {
          names.push_back(add_initializer(
              ox::tensor_data::float32(c.path + "/bias", {std::int64_t(f)}, std::vector<float>(b.begin(), b.end()))));
        }
        b_cached = biases_.emplace(bias_key, std::move(names)).first;
      }
      const auto& names = b_cached->second;
      bias = names.size() == 1 ? names[0]
                               : node("DequantizeLinear", {names[0], names[1], names[2]}, c.path + "/bias/dq",
                                      {ox::int_attribute("axis", 0)});
    }

    std::string y;
    if (dense) {
      if (v.rank == 2) {
        std::vector<std::string> in{v.name, weight};
        if (has_bias) in.push_back(bias);
        std::vector<ox::attribute> attrs;
        if (info.transposed) attrs.push_back(ox::int_attribute("transB", 1));  // x · tableᵀ
        y = node("Gemm", in, c.path, attrs);
      } else {
        if (info.transposed) weight = node("Transpose", {weight}, wname + "/transposed", {ox::ints_attribute("perm", {1, 0})});
        y = node("MatMul", {v.name, weight}, c.path + "/matmul");
        if (has_bias) y = node("Add", {y, bias}, c.path);
      }
    } else {
      const auto& s = c.inputs[0]->value.shape();
      std::vector<std::int64_t> pads{0, 0, 0, 0};
      if (!pad_done_) {
        pads = onnx_pads(window_pads(s, info.kernel_size, info.geometry.strides, info.geometry.dilation,
                                     info.geometry.padding));
      }
      std::vector<ox::attribute> attrs{
          ox::ints_attribute("kernel_shape", {std::int64_t(info.kernel_size[0]), std::int64_t(info.kernel_size[1])}),
          ox::ints_attribute("strides", {std::int64_t(info.geometry.strides[0]), std::int64_t(info.geometry.strides[1])}),
          ox::ints_attribute("dilations", {std::int64_t(info.geometry.dilation[0]), std::int64_t(info.geometry.dilation[1])}),
          ox::ints_attribute("pads", pads)};
      if (info.linear_form == layer_info::form::depthwise_conv2d)
        attrs.push_back(ox::int_attribute("group", std::int64_t(ks[2])));
      std::vector<std::string> in{v.name, weight};
      if (has_bias) in.push_back(bias);
      y = node("Conv", in, c.path, attrs);
    }
    pad_done_ = false;
    onnx_value out{y, c.output->value.dimension(), !dense};
    if (const fake_quantizer* oq = site_quantizer(info.output, i)) out.name = qdq(out.name, *oq, c.path + " output", c.output->value.shape());
    values_[norm_call ? norm_call->output : c.output] = out;
    if (norm_call) values_[c.output] = out;
  }

  std::string constant(float v) {
    const auto it = constants_.find(v);
    if (it != constants_.end()) return it->second;
    const std::string n = add_initializer(ox::tensor_data::float32_scalar(xq::detail::concat("const/", v), v));
    constants_[v] = n;
    return n;
  }

  export_options o_;
  ox::graph g_out_;
  std::unordered_map<const variable_state*, onnx_value> values_;
  std::set<std::string> used_;
  /// An activation quantizer's initializers, made once: its scale and zero point, the
  /// integer Clip bounds of a grid narrower than its 8-bit type, or the float bounds that
  /// clip before a 16-bit Q (empty where not needed).
  struct activation_initializers {
    std::string scale, zero_point, qmin, qmax, float_min, float_max;
  };
  std::map<const fake_quantizer*, activation_initializers> activation_params_;
  /// A layer's kernel initializers (and what its call sites do with them).
  struct kernel_entry {
    std::string stored, scale, zero_point;
    bool quantize = false, dequantize = false, per_channel = false;
    bool prebuilt = false;             ///< `stored` is the weight's final node (weight_2d)
    std::vector<float> channel_scale;  ///< s_w per output channel (1 for float kernels)
  };
  std::map<std::string, std::string> weights_2d_;  ///< weight_2d's initializers
  std::map<const fake_quantizer*, std::pair<std::string, std::string>> weight_params_;  ///< a kernel quantizer's scale, zero point
  std::map<const void*, std::size_t> kernel_users_;  ///< layers per kernel parameter
  std::map<std::string, kernel_entry> kernels_;
  std::map<std::string, std::vector<std::string>> biases_;
  std::map<float, std::string> constants_;
  std::map<std::string, std::string> numerics_, quantizer_notes_;
  bool pad_done_ = false;
};

XQ_DECL onnx::model export_model(const model_access& m, const std::vector<std::size_t>& sample_shape,
                                 const export_options& o) {
  layer_table table;
  build_and_describe(m, sample_shape, table);
  graph_trace trace;
  var input, output;
  traced_pass(m, sample_shape, input, output);
  const auto constants = constant_values(m, sample_shape, trace, input.state().get());
  return export_trace(trace, table, input.state().get(), output.state().get(), sample_shape, o, constants);
}

XQ_DECL onnx::model export_trace(const graph_trace& trace, const layer_table& table, const variable_state* input,
                                 const variable_state* output, const std::vector<std::size_t>& sample_shape,
                                 const export_options& o, const std::set<const variable_state*>& constants) {
  // Automatic (opset 0): 13 unless an activation grid needs 16-bit QuantizeLinear (21).
  export_options chosen = o;
  if (!chosen.opset) chosen.opset = has_16_bit_activations(table) ? 21 : 13;
  return exporter(trace, table, chosen, constants).run(input, output, sample_shape);
}

}  // namespace xq::deploy::detail
