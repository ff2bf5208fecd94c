#pragma once
/// \file onnx_weights.ipp
/// The ONNX exporter's weights (deploy/onnx/export_graph.hpp): how a weight use becomes
/// initializers and nodes, and the translations of the ops that have weights (linear,
/// gather, conv_transpose, recurrence).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "../../../core/error.hpp"
#include "../../graph/graph_decisions.hpp"
#include "../detail/onnx_writer.hpp"
#include "../export_graph.hpp"

namespace xq::deploy::detail {

namespace ox = xq::onnx;

/// What brings a kernel grid's integers and zero points onto int8: 0 where they fit, -128
/// for a uint8 grid (tfmot's FakeQuant kernels: [1, 255] around a nudged zero point).
/// DequantizeLinear computes (q - zero_point) * scale: the same reals, shifted together.
inline std::int32_t int8_offset(const quantization_grid& g, const std::string& where) {
  if (g.fits_int8()) return 0;
  if (g.fits_uint8()) return -128;
  throw argument_error(where, "a kernel grid of int8 (or uint8) integers", describe(g));
}

/// Keras's LSTM gate columns i, f, c, o are ONNX's rows i, o, f, c; GRU's z, r, h the same.
inline std::size_t onnx_gate_row(std::size_t j, std::size_t units, bool lstm) {
  static constexpr std::size_t lstm_order[] = {0, 2, 3, 1};
  const std::size_t g = j / units;
  return (lstm ? lstm_order[g] : g) * units + j % units;
}

XQ_DECL onnx_layout onnx_writer::layout_of(onnx_layout::kind k, const tensor::shape_type& s,
                                           const quantization_grid* g, const std::string& where) const {
  using kind = onnx_layout::kind;
  onnx_layout l;
  l.what = k;
  const std::size_t rank = s.size();
  const bool per_channel = g && g->per_channel && g->channels() > 1;
  std::size_t axis = 0;  // the grid's channel axis in the weight's own layout
  if (per_channel) {
    const long a = g->channel_axis < 0 ? g->channel_axis + long(rank) : g->channel_axis;
    if (a < 0 || a >= long(rank) || s[std::size_t(a)] != g->channels())
      throw argument_error(where, xq::detail::concat("a per-channel grid along an axis of the rank-", rank, " weight"),
                           describe(*g));
    axis = std::size_t(a);
  }
  auto identity = [](std::size_t n) {
    std::vector<std::size_t> v(n);
    for (std::size_t j = 0; j < n; ++j) v[j] = j;
    return v;
  };
  auto refuse_axis = [&](const char* expected) {
    throw argument_error(where, expected, xq::detail::concat("axis ", g->channel_axis, " of a rank-", rank, " kernel"));
  };
  const bool four = rank == 4;
  if ((k == kind::conv2d || k == kind::depthwise || k == kind::conv_transpose) && !four)
    throw argument_error(where, "a rank-4 kernel", xq::detail::concat("rank ", rank));
  switch (k) {
    case kind::as_is:
      l.dims.assign(s.begin(), s.end());
      if (per_channel) l.axis = std::int64_t(axis), l.channel = identity(s[axis]);
      return l;
    case kind::conv2d: {  // HWIO -> OIHW
      const std::size_t kh = s[0], kw = s[1], c = s[2], f = s[3];
      l.dims = {std::int64_t(f), std::int64_t(c), std::int64_t(kh), std::int64_t(kw)};
      l.from.resize(kh * kw * c * f);
      for (std::size_t u = 0; u < kh; ++u)
        for (std::size_t v = 0; v < kw; ++v)
          for (std::size_t ch = 0; ch < c; ++ch)
            for (std::size_t o = 0; o < f; ++o) l.from[((o * c + ch) * kh + u) * kw + v] = ((u * kw + v) * c + ch) * f + o;
      if (per_channel) {
        if (axis != 3) refuse_axis("a per-channel kernel grid on the output-channel axis");
        l.axis = 0, l.channel = identity(f);
      }
      return l;
    }
    case kind::depthwise: {  // (KH, KW, C, M) -> (C·M, 1, KH, KW), output channel c·M + m
      const std::size_t kh = s[0], kw = s[1], c = s[2], m = s[3];
      l.dims = {std::int64_t(c * m), 1, std::int64_t(kh), std::int64_t(kw)};
      l.from.resize(kh * kw * c * m);
      for (std::size_t u = 0; u < kh; ++u)
        for (std::size_t v = 0; v < kw; ++v)
          for (std::size_t ch = 0; ch < c; ++ch)
            for (std::size_t mm = 0; mm < m; ++mm)
              l.from[((ch * m + mm) * kh + u) * kw + v] = ((u * kw + v) * c + ch) * m + mm;
      if (per_channel) {
        if (axis != 2 && axis != 3) refuse_axis("a per-channel depthwise grid on its channel or multiplier axis");
        l.axis = 0;
        for (std::size_t o = 0; o < c * m; ++o) l.channel.push_back(axis == 2 ? o / m : o % m);
      }
      return l;
    }
    case kind::conv_transpose: {  // (KH, KW, F, C) -> (C, F, KH, KW)
      const std::size_t kh = s[0], kw = s[1], f = s[2], c = s[3];
      l.dims = {std::int64_t(c), std::int64_t(f), std::int64_t(kh), std::int64_t(kw)};
      l.from.resize(kh * kw * f * c);
      for (std::size_t u = 0; u < kh; ++u)
        for (std::size_t v = 0; v < kw; ++v)
          for (std::size_t p = 0; p < f; ++p)
            for (std::size_t q = 0; q < c; ++q) l.from[((q * f + p) * kh + u) * kw + v] = ((u * kw + v) * f + p) * c + q;
      if (per_channel) {
        static constexpr std::int64_t onnx_axis[] = {2, 3, 1, 0};
        l.axis = onnx_axis[axis], l.channel = identity(s[axis]);
      }
      return l;
    }
    case kind::lstm_recurrent:
    case kind::gru_recurrent: {  // (u, G·u) -> (1, G·u, u), Keras's gate columns as ONNX's rows
      if (rank != 2) throw argument_error(where, "a rank-2 recurrent kernel", xq::detail::concat("rank ", rank));
      const std::size_t u = s[0], gu = s[1];
      const bool lstm = k == kind::lstm_recurrent;
      l.dims = {1, std::int64_t(gu), std::int64_t(u)};
      l.from.resize(u * gu);
      for (std::size_t m = 0; m < u; ++m)
        for (std::size_t j = 0; j < gu; ++j) l.from[onnx_gate_row(j, u, lstm) * u + m] = m * gu + j;
      if (per_channel) {
        if (axis != 1) refuse_axis("a per-channel recurrent kernel grid on its gate columns (axis -1)");
        l.axis = 1;
        l.channel.resize(gu);
        for (std::size_t j = 0; j < gu; ++j) l.channel[onnx_gate_row(j, u, lstm)] = j;
      }
      return l;
    }
  }
  return l;
}

/// `values` (a weight's, in its own layout) in layout `l`'s order.
template <class T>
std::vector<T> in_layout(const onnx_layout& l, const std::vector<T>& values) {
  if (l.from.empty()) return values;
  std::vector<T> out(l.from.size());
  for (std::size_t e = 0; e < out.size(); ++e) out[e] = values.at(l.from[e]);
  return out;
}

XQ_DECL const tensor& onnx_writer::weight_value(const weight_use& u, const std::string& where) const {
  if (!u.present() || u.weight >= g_.weights.size())
    throw argument_error(where, "a weight of the graph", xq::detail::concat("weight ", u.weight));
  return u.quantized ? u.q.dequantized : g_.weights[u.weight].value;
}

/// The DequantizeLinear / QuantizeLinear axis attribute of layout `l` (none per tensor).
inline std::vector<ox::attribute> axis_attribute(const onnx_layout& l) {
  if (l.axis < 0) return {};
  return {ox::int_attribute("axis", l.axis)};
}

/// A grid's scales and zero points (shifted by `offset`) along layout `l`'s axis, or one each.
inline std::pair<std::vector<float>, std::vector<std::int32_t>> grid_along(const onnx_layout& l,
                                                                            const quantization_grid& g,
                                                                            std::int32_t offset) {
  std::vector<float> s;
  std::vector<std::int32_t> z;
  if (l.axis < 0) return {{g.scale.at(0)}, {g.zero_point.at(0) + offset}};
  for (std::size_t c : l.channel) s.push_back(g.scale.at(c)), z.push_back(g.zero_point.at(c) + offset);
  return {s, z};
}

XQ_DECL std::string onnx_writer::weight(std::size_t i, const weight_use& u, onnx_layout::kind k,
                                        const std::string& name, bool int4_ok, onnx_layout* layout) {
  const graph_node& n = g_.nodes[i];
  const tensor& raw = [&]() -> const tensor& {
    if (!u.present() || u.weight >= g_.weights.size())
      throw argument_error(n.layer, "a weight of the graph", xq::detail::concat("weight ", u.weight));
    return g_.weights[u.weight].value;
  }();
  const graph_weight& w = g_.weights[u.weight];
  const std::string where = u.quantized ? u.q.quantizer : n.layer;
  const bool low_bit = u.quantized && is_low_bit_grid(u.q.grid);
  const onnx_layout l = layout_of(k, raw.shape(), u.quantized && !low_bit ? &u.q.grid : nullptr, where);
  if (layout) *layout = l;
  if (u.quantized && u.q.integers.size() != raw.size())
    throw argument_error(where, xq::detail::concat(raw.size(), " integers of the kernel"),
                         xq::detail::concat(u.q.integers.size()));
  // A low-bit format's kernel: its elements and block scales (onnx_low_bit.ipp).
  if (low_bit) {
    if (w.tied() && o_.share_reused_weights)
      throw argument_error(where, "an 8-bit integer grid for a use of a weight tied between layers",
                           describe(u.q.grid));
    onnx_layout blocked = l;
    const std::string x = low_bit_kernel(i, u, blocked, name);
    if (layout) *layout = blocked;
    return x;
  }
  const std::vector<float> floats(raw.begin(), raw.end());

  // A weight tied between layers is ONE float initializer; each quantized use rounds it
  // with its own QuantizeLinear (each use has its own quantizer).
  if (w.tied() && o_.share_reused_weights) {
    const std::string key = xq::detail::concat("tied|", u.weight, "|", int(k));
    auto it = weights_.find(key);
    if (it == weights_.end()) {
      stored_weight s;
      s.layout = l;
      s.stored = add_initializer(ox::tensor_data::float32("tied/" + w.layers.at(0) + "/kernel", l.dims, in_layout(l, floats)));
      it = weights_.emplace(key, std::move(s)).first;
    }
    return u.quantized ? tied_use(it->second.stored, u, l, raw) : it->second.stored;
  }

  std::string key = xq::detail::concat(u.weight, "|", int(k), "|", u.quantized ? u.q.quantizer : std::string("float"));
  if (!o_.share_reused_weights) key += xq::detail::concat("|node ", i);
  auto it = weights_.find(key);
  if (it == weights_.end()) {
    stored_weight s;
    s.layout = l;
    if (!u.quantized) {
      s.stored = add_initializer(ox::tensor_data::float32(name, l.dims, in_layout(l, floats)));
    } else {
      const quantization_grid& g = u.q.grid;
      note(u.q.quantizer, u.q.description, g);
      const bool binary = binary_grid(g);
      const std::int32_t offset = int8_offset(g, u.q.quantizer);
      const auto [scales, zps] = grid_along(l, g, offset);
      const std::vector<std::int64_t> sdims = l.axis < 0 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{std::int64_t(scales.size())};
      // From opset 21, kernels of at most 4 bits are int4 (where the shifted integers fit).
      const bool int4 = int4_ok && o_.opset >= 21 && !binary && g.num_bits <= 4 && g.qmin + offset >= -8 &&
                        g.qmax + offset <= 7;
      s.scale = add_initializer(ox::tensor_data::float32(name + "/scale", sdims, scales));
      const std::vector<std::int8_t> z8(zps.begin(), zps.end());
      s.zero_point = add_initializer(int4 ? ox::tensor_data::int4(name + "/zero_point", sdims, z8)
                                          : ox::tensor_data::int8(name + "/zero_point", sdims, z8));
      if (o_.weight_layout == onnx_weight_layout::int8_weights || binary) {
        // The simulation's integers (Larq's ±1 kernels too, in every layout).
        std::vector<std::int8_t> q8(u.q.integers.size());
        for (std::size_t e = 0; e < q8.size(); ++e) q8[e] = std::int8_t(u.q.integers[e] + offset);
        s.stored = add_initializer(int4 ? ox::tensor_data::int4(name, l.dims, in_layout(l, q8))
                                        : ox::tensor_data::int8(name, l.dims, in_layout(l, q8)));
        s.dequantize = true;
      } else {  // NVIDIA: the float kernel the quantizer saw, Q then DQ
        if (!g.symmetric() || offset)
          throw argument_error(u.q.quantizer, "a symmetric kernel grid (zero point 0) for the float_qdq layout",
                               describe(g));
        s.stored = add_initializer(ox::tensor_data::float32(name, l.dims, in_layout(l, floats)));
        s.quantize = s.dequantize = true;
      }
    }
    it = weights_.emplace(key, std::move(s)).first;
  }
  // Nodes once per use: a DequantizeLinear shared by two convs makes onnxruntime 1.32's QDQ
  // fusion fail ("Attempt to replace the existing tensor").
  const stored_weight& s = it->second;
  std::string x = s.stored;
  if (s.quantize) x = node("QuantizeLinear", {x, s.scale, s.zero_point}, name + "/q", axis_attribute(s.layout));
  if (s.dequantize) x = node("DequantizeLinear", {x, s.scale, s.zero_point}, name + "/dq", axis_attribute(s.layout));
  return x;
}

XQ_DECL std::string onnx_writer::tied_use(const std::string& stored, const weight_use& u, const onnx_layout& l,
                                          const tensor& value) {
  const quantization_grid& g = u.q.grid;
  const std::string& path = u.q.quantizer;
  note(path, u.q.description, g);
  if (binary_grid(g) || (!g.fits_int8() && !g.fits_uint8()))
    throw argument_error(path, "an 8-bit integer grid for a use of a tied weight", describe(g));
  const ox::data_type t = g.fits_int8() ? ox::data_type::int8 : ox::data_type::uint8;
  const auto [scales, zps] = grid_along(l, g, 0);
  const std::vector<std::int64_t> sdims =
      l.axis < 0 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{std::int64_t(scales.size())};
  const std::string key = "tied use|" + path + "|" + describe(g);
  auto cached = activation_params_.find(key);
  if (cached == activation_params_.end()) {
    activation_initializers p;
    p.scale = add_initializer(ox::tensor_data::float32(path + "/scale", sdims, scales));
    if (t == ox::data_type::int8)
      p.zero_point = add_initializer(ox::tensor_data::int8(path + "/zero_point", sdims, std::vector<std::int8_t>(zps.begin(), zps.end())));
    else
      p.zero_point = add_initializer(ox::tensor_data::uint8(path + "/zero_point", sdims, std::vector<std::uint8_t>(zps.begin(), zps.end())));
    // The use's own grid, narrower than the type (narrow range): QuantizeLinear saturates
    // to the type, so an entry past the use's range would be -128 where the simulation
    // clips it to -127. The Clip keeps Q's integers on the grid.
    const auto lo = t == ox::data_type::int8 ? -128 : 0, hi = t == ox::data_type::int8 ? 127 : 255;
    if (g.qmin > lo || g.qmax < hi) {
      if (t == ox::data_type::int8) {
        p.qmin = add_initializer(ox::tensor_data::int8_scalar(path + "/qmin", std::int8_t(g.qmin)));
        p.qmax = add_initializer(ox::tensor_data::int8_scalar(path + "/qmax", std::int8_t(g.qmax)));
      } else {
        p.qmin = add_initializer(ox::tensor_data::uint8_scalar(path + "/qmin", std::uint8_t(g.qmin)));
        p.qmax = add_initializer(ox::tensor_data::uint8_scalar(path + "/qmax", std::uint8_t(g.qmax)));
      }
    }
    cached = activation_params_.emplace(key, std::move(p)).first;
    // What QuantizeLinear computes (round(x / scale) half to even, + zero point, saturated,
    // then clipped), against the simulation's integers: they differ where training rounded
    // otherwise (TF's multiply by the reciprocal, half up on tfmot's nudged range).
    std::size_t differ = 0;
    std::int64_t stride = 1;
    for (std::int64_t d = std::int64_t(l.dims.size()) - 1; d > l.axis && l.axis >= 0; --d) stride *= l.dims[std::size_t(d)];
    for (std::size_t e = 0; e < value.size(); ++e) {
      const std::size_t src = l.from.empty() ? e : l.from[e];
      const std::size_t c = l.axis < 0 ? 0 : std::size_t((std::int64_t(e) / stride) % l.dims[std::size_t(l.axis)]);
      const float r = std::nearbyint(value.data()[src] / scales[c]);
      std::int64_t q = std::int64_t(r) + zps[c];
      q = std::min<std::int64_t>(std::max<std::int64_t>(q, std::max<std::int64_t>(lo, g.qmin)), std::min<std::int64_t>(hi, g.qmax));
      differ += q != u.q.integers[src];
    }
    quantizer_notes_[path + ".tied_use"] = xq::detail::concat(
        "QuantizeLinear + Clip of the tied float weight gives the simulation's integers at ", value.size() - differ,
        " of ", value.size(), " entries");
  }
  const activation_initializers& p = cached->second;
  const std::vector<ox::attribute> axis = axis_attribute(l);
  std::string q = node("QuantizeLinear", {stored, p.scale, p.zero_point}, path + "/q", axis);
  if (!p.qmin.empty()) q = node("Clip", {q, p.qmin, p.qmax}, path + "/clip");
  if (o_.expose_quantized) {  // the use's integers, to compare with the simulation's
    const std::string exposed = "q:" + path;
    if (!used_.count(exposed)) {
      used_.insert(exposed);
      out_.add_node("Identity", {q}, {exposed}, {}, fresh("node/" + exposed));
      std::vector<ox::dimension> dims(l.dims.begin(), l.dims.end());
      out_.outputs.push_back(ox::value_info(exposed, t, dims));
    }
  }
  return node("DequantizeLinear", {q, p.scale, p.zero_point}, path + "/dq", axis);
}

// ---- translations of the ops with weights ---------------------------------------------------

XQ_DECL void onnx_writer::translate(std::size_t i, const op::linear& l) {
  using form = op::linear::form;
  const graph_node& n = g_.nodes[i];
  const node_decisions& d = g_.decisions[i];
  const bool dense = l.shape == form::dense;
  onnx_value v = dense ? to_nhwc(input(i, 0)) : to_nchw(input(i, 0));
  const tensor::shape_type& ks = weight_value(l.kernel, n.layer).shape();
  const std::size_t f = l.out_channels(ks);
  std::array<std::size_t, 4> pads = l.geometry.pads;
  const bool padded = pads[0] || pads[1] || pads[2] || pads[3];
  if (!dense && l.pad_value != 0.0f && padded) {  // Larq's pad_values: pad with the value, then a valid window
    const std::string p = int64s(n.layer + "/pads", {0, 0, std::int64_t(pads[0]), std::int64_t(pads[1]), 0, 0,
                                                     std::int64_t(pads[2]), std::int64_t(pads[3])});
    v.name = node("Pad", {v.name, p, constant(l.pad_value)}, n.layer + "/padded", {ox::string_attribute("mode", "constant")});
    pads = {0, 0, 0, 0};
  }

  // The kernel: the integers the simulation used, or floats.
  const onnx_layout::kind k = dense                              ? onnx_layout::kind::as_is
                              : l.shape == form::depthwise_conv2d ? onnx_layout::kind::depthwise
                                                                 : onnx_layout::kind::conv2d;
  onnx_layout lay;
  std::string kernel = weight(i, l.kernel, k, n.layer + "/kernel", true, &lay);
  // A folded kernel whose batch norm is not absorbed: the simulation divides its output
  // channels by the fold's scale before use.
  const bool divide = !l.kernel.fold_divisor.empty() && !d.fold_cancels;
  if (divide) {
    if (l.kernel.fold_divisor.size() != f)
      throw argument_error(n.layer, xq::detail::concat("a fold divisor per output channel (", f, ")"),
                           xq::detail::concat(l.kernel.fold_divisor.size(), " values"));
    const std::int64_t fi = std::int64_t(f);
    const std::vector<std::int64_t> dims = !dense         ? std::vector<std::int64_t>{fi, 1, 1, 1}
                                           : l.transposed ? std::vector<std::int64_t>{fi, 1}
                                                          : std::vector<std::int64_t>{fi};
    kernel = node("Div", {kernel, add_initializer(ox::tensor_data::float32(n.layer + "/fold_divisor", dims, l.kernel.fold_divisor))},
                  n.layer + "/kernel/unfolded");
  }
  // s_w per output channel, where the kernel is on an integer grid with its scales on the
  // output axis.
  std::vector<float> s_w;
  if (l.kernel.quantized && !binary_grid(l.kernel.q.grid) && !is_low_bit_grid(l.kernel.q.grid)) {
    const quantization_grid& g = l.kernel.q.grid;
    const std::int64_t out_axis = dense && !l.transposed ? 1 : 0;
    if (lay.axis < 0) s_w.assign(f, g.scale.at(0));
    else if (lay.axis == out_axis && lay.channel.size() == f)
      for (std::size_t c : lay.channel) s_w.push_back(g.scale.at(c));
  }
  // s_in: the input holds a quantization point's integers (on a per-tensor integer grid),
  // directly or through ops that commute with rounding (graph_decisions.hpp).
  float s_in = 0.0f;
  const std::size_t p = quantized_by(g_, n.inputs.at(0));
  if (p != no_index)
    if (const auto* q = std::get_if<op::quantize>(&g_.nodes[p].op))
      if (!binary_grid(q->grid) && !q->format && !q->grid.dynamic && q->grid.channels() == 1) s_in = q->grid.scale.at(0);

  // The bias: the absorbed batch norm's affine (its fold cancelling) and the layer's own,
  // int32 at s_in * s_w when the input and kernel are quantized (onnxruntime fuses it into
  // QLinearConv / QGemm), else float.
  const op::batch_norm* norm = d.fold_cancels ? std::get_if<op::batch_norm>(&g_.nodes.at(d.absorbs).op) : nullptr;
  std::string bias;
  if (l.bias.present() || norm) {
    const bool int32 = s_in > 0.0f && s_w.size() == f && !divide && o_.weight_layout == onnx_weight_layout::int8_weights;
    // An int32 bias is at s_in * s_w: call sites with their own input ranges need their own.
    std::string key = n.layer + (o_.share_reused_weights ? std::string() : xq::detail::concat("#node ", i));
    if (int32) key += xq::detail::concat("@", s_in);
    auto cached = biases_.find(key);
    if (cached == biases_.end()) {
      std::vector<double> b(f, 0.0);
      if (l.bias.present()) {
        const tensor& bv = weight_value(l.bias, n.layer);
        if (bv.size() != f) throw argument_error(n.layer, xq::detail::concat("a bias of ", f, " values"), xq::detail::concat(bv.size()));
        for (std::size_t o = 0; o < f; ++o) b[o] = double(bv.data()[o]);
      }
      if (norm) {
        if (norm->mean.size() != f)
          throw argument_error(n.layer, xq::detail::concat("an absorbed batch norm of ", f, " channels"),
                               xq::detail::concat(norm->mean.size()));
        for (std::size_t o = 0; o < f; ++o)
          b[o] = (b[o] - double(norm->mean[o])) * double(norm->scale[o]) + double(norm->offset[o]);
      }
      std::vector<std::string> names;
      const std::int64_t fi = std::int64_t(f);
      if (int32) {
        std::vector<std::int32_t> bi(f);
        std::vector<float> bs(f);
        for (std::size_t o = 0; o < f; ++o) {
          bs[o] = s_in * s_w[o];
          bi[o] = std::int32_t(std::nearbyint(b[o] / double(bs[o])));
        }
        names.push_back(add_initializer(ox::tensor_data::int32(n.layer + "/bias", {fi}, bi)));
        names.push_back(add_initializer(ox::tensor_data::float32(n.layer + "/bias/scale", {fi}, bs)));
        names.push_back(add_initializer(ox::tensor_data::int32(n.layer + "/bias/zero_point", {fi}, std::vector<std::int32_t>(f, 0))));
      } else {
        names.push_back(add_initializer(ox::tensor_data::float32(n.layer + "/bias", {fi}, std::vector<float>(b.begin(), b.end()))));
      }
      cached = biases_.emplace(key, std::move(names)).first;
    }
    const std::vector<std::string>& names = cached->second;
    bias = names.size() == 1 ? names[0]
                             : node("DequantizeLinear", {names[0], names[1], names[2]}, n.layer + "/bias/dq",
                                    {ox::int_attribute("axis", 0)});
  }

  onnx_value out;
  if (dense) {
    if (v.rank == 2) {
      std::vector<std::string> in{v.name, kernel};
      if (!bias.empty()) in.push_back(bias);
      std::vector<ox::attribute> attrs;
      if (l.transposed) attrs.push_back(ox::int_attribute("transB", 1));  // x · tableᵀ
      out = onnx_value{node("Gemm", in, n.layer, attrs), 2, false};
    } else {
      if (l.transposed) kernel = node("Transpose", {kernel}, n.layer + "/kernel/transposed", {ox::ints_attribute("perm", {1, 0})});
      std::string y = node("MatMul", {v.name, kernel}, bias.empty() ? n.layer : n.layer + "/matmul");
      if (!bias.empty()) y = node("Add", {y, bias}, n.layer);
      out = onnx_value{y, v.rank, false};
    }
  } else {
    const op::window& w = l.geometry;
    std::vector<ox::attribute> attrs{ox::ints_attribute("kernel_shape", {std::int64_t(ks[0]), std::int64_t(ks[1])}),
                                     ox::ints_attribute("strides", {std::int64_t(w.strides[0]), std::int64_t(w.strides[1])}),
                                     ox::ints_attribute("dilations", {std::int64_t(w.dilation[0]), std::int64_t(w.dilation[1])}),
                                     ox::ints_attribute("pads", {std::int64_t(pads[0]), std::int64_t(pads[1]),
                                                                 std::int64_t(pads[2]), std::int64_t(pads[3])})};
    if (l.shape == form::depthwise_conv2d) attrs.push_back(ox::int_attribute("group", std::int64_t(ks[2])));
    std::vector<std::string> in{v.name, kernel};
    if (!bias.empty()) in.push_back(bias);
    out = onnx_value{node("Conv", in, n.layer, attrs), 4, true};
  }
  set_output(i, out);
  if (d.fold_cancels) values_.at(g_.nodes.at(d.absorbs).output) = out;  // the absorbed batch norm's value
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::gather& t) {
  const graph_node& n = g_.nodes[i];
  const onnx_value ids = to_nhwc(input(i, 0));
  const std::string table = weight(i, t.table, onnx_layout::kind::as_is, n.layer + "/kernel", false);
  const std::string index = node("Cast", {ids.name}, n.layer + "/ids", {ox::int_attribute("to", 7)});  // INT64
  set_output(i, onnx_value{node("Gather", {table, index}, n.layer, {ox::int_attribute("axis", 0)}),
                           shape_of(n.output).size(), false});
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::conv_transpose& t) {
  const graph_node& n = g_.nodes[i];
  // ConvTranspose: the adjoint of the convolution with the same pads (kernel (C, F, KH, KW)),
  // output_padding to Keras's size; the kernel the simulation quantized as its integers +
  // DequantizeLinear (float + Q + DQ in NVIDIA's layout), its bias in float.
  const onnx_value x = to_nchw(input(i, 0));
  const tensor::shape_type& ks = weight_value(t.kernel, n.layer).shape();
  const std::string kernel = weight(i, t.kernel, onnx_layout::kind::conv_transpose, n.layer + "/kernel", false);
  const std::vector<std::size_t>& s = shape_of(n.inputs.at(0));
  const std::vector<std::size_t>& y = shape_of(n.output);
  const std::size_t kh = ks[0], kw = ks[1], f = ks[2];
  const auto pads = window_over(y, {kh, kw}, t.strides, t.dilation, t.padding).pads;
  std::vector<std::int64_t> output_padding(2);
  for (std::size_t a = 0; a < 2; ++a) {
    const std::size_t k = a ? kw : kh;
    const std::int64_t natural = std::int64_t(t.strides[a] * (s[1 + a] - 1) + (k - 1) * t.dilation[a] + 1) -
                                 std::int64_t(pads[a] + pads[a + 2]);
    output_padding[a] = std::int64_t(y[1 + a]) - natural;
  }
  std::vector<std::string> in{x.name, kernel};
  if (t.bias.present()) {
    const tensor& b = weight_value(t.bias, n.layer);
    in.push_back(add_initializer(ox::tensor_data::float32(n.layer + "/bias", {std::int64_t(f)}, std::vector<float>(b.begin(), b.end()))));
  }
  const std::string out =
      node("ConvTranspose", in, n.layer,
           {ox::ints_attribute("kernel_shape", {std::int64_t(kh), std::int64_t(kw)}),
            ox::ints_attribute("strides", {std::int64_t(t.strides[0]), std::int64_t(t.strides[1])}),
            ox::ints_attribute("dilations", {std::int64_t(t.dilation[0]), std::int64_t(t.dilation[1])}),
            ox::ints_attribute("pads", {std::int64_t(pads[0]), std::int64_t(pads[1]), std::int64_t(pads[2]), std::int64_t(pads[3])}),
            ox::ints_attribute("output_padding", output_padding)});
  set_output(i, onnx_value{out, 4, true});
}

XQ_DECL void onnx_writer::translate(std::size_t i, const op::recurrence& r) {
  const graph_node& n = g_.nodes[i];
  const std::string& name = n.layer;
  // ONNX's LSTM / GRU over the projected inputs xw (B, T, G·u): X is xw time-major; W is
  // the permutation that puts Keras's gate columns in ONNX's order (one 1 per row, so X·Wᵀ
  // is xw exactly); R the recurrent kernel's columns so reordered, as rows (its quantizer's
  // integers + DequantizeLinear when quantized); B = [0, the bias]. GRU's reset_after is
  // linear_before_reset. go_backwards runs `reverse`, whose Y is in input order: reversed
  // back into Keras's processing order.
  const bool lstm = r.kind == op::recurrence::cell::lstm;
  const tensor::shape_type& ks = weight_value(r.recurrent_kernel, name).shape();
  if (ks.size() != 2) throw argument_error(name, "a rank-2 recurrent kernel", xq::detail::concat("rank ", ks.size()));
  const std::size_t u = ks[0], gu = ks[1];
  std::vector<float> w(gu * gu, 0.0f);
  for (std::size_t j = 0; j < gu; ++j) w[onnx_gate_row(j, u, lstm) * gu + j] = 1.0f;
  const std::string W =
      add_initializer(ox::tensor_data::float32(name + "/input_permutation", {1, std::int64_t(gu), std::int64_t(gu)}, w));
  const std::string R = weight(i, r.recurrent_kernel,
                               lstm ? onnx_layout::kind::lstm_recurrent : onnx_layout::kind::gru_recurrent,
                               name + "/recurrent_kernel", false);
  const onnx_value x = to_nhwc(input(i, 0));
  std::vector<std::string> inputs{node("Transpose", {x.name}, name + "/time_major", {ox::ints_attribute("perm", {1, 0, 2})}),
                                  W, R};
  if (r.bias.present()) {
    const tensor& bias = weight_value(r.bias, name);
    if (bias.size() != gu) throw argument_error(name, xq::detail::concat("a bias of ", gu, " values"), xq::detail::concat(bias.size()));
    std::vector<float> b(2 * gu, 0.0f);
    for (std::size_t j = 0; j < gu; ++j) b[gu + onnx_gate_row(j, u, lstm)] = bias.data()[j];
    inputs.push_back(add_initializer(ox::tensor_data::float32(name + "/bias", {1, std::int64_t(2 * gu)}, b)));
  }
  std::vector<ox::attribute> attrs{ox::int_attribute("hidden_size", std::int64_t(u)),
                                   ox::string_attribute("direction", r.go_backwards ? "reverse" : "forward")};
  if (!lstm) attrs.push_back(ox::int_attribute("linear_before_reset", r.reset_after ? 1 : 0));
  const std::string y = fresh(name + (r.return_sequences ? "/sequence" : "/last"));
  out_.add_node(lstm ? "LSTM" : "GRU", inputs, r.return_sequences ? std::vector<std::string>{y} : std::vector<std::string>{"", y},
                attrs, fresh("node/" + name));
  std::string out;
  if (!r.return_sequences) {  // Y_h (1, B, u) -> (B, u): the last step processed
    out = node("Squeeze", {y, int64s(name + "/direction_axis", {0})}, name);
  } else {  // Y (T, 1, B, u) -> (B, T, u), in the order the steps ran
    out = node("Squeeze", {y, int64s(name + "/direction_axis", {1})}, name + "/steps");
    out = node("Transpose", {out}, r.go_backwards ? name + "/batch_major" : name, {ox::ints_attribute("perm", {1, 0, 2})});
    if (r.go_backwards)
      out = node("Slice", {out, int64s(name + "/reversed/starts", {-1}),
                           int64s(name + "/reversed/ends", {std::numeric_limits<std::int64_t>::min()}),
                           int64s(name + "/reversed/axes", {1}), int64s(name + "/reversed/steps", {-1})},
                 name);
  }
  set_output(i, onnx_value{out, shape_of(n.output).size(), false});
}

}  // namespace xq::deploy::detail
