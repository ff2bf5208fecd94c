#pragma once
/// \file onnx_low_bit.ipp
/// The ONNX exporter's low-bit formats (deploy/onnx/export_graph.hpp): kernels on a blocked
/// or float-element grid (torchao's int4/int2 groups and int4 weight-only, FP8 per row, MX,
/// NVFP4), and the dynamic quantization points whose scales follow each tensor (8da4w's
/// per-token int8, FP8 per row, MX, NVFP4 activations) as the standard operators that
/// compute them.
///
/// Kernels. The elements are the simulation's integers or codes, the scales its grid's, so no
/// runtime rounds a weight again. In the runtime form (what onnxruntime 1.32 runs, opset 21):
/// int4 (int2 from opset 25, int8 beyond) initializers; FP8 E4M3 codes, and E2M1 and FP6
/// values re-encoded as FLOAT8E4M3FN (each of their values is exact in E4M3); float32 scales
/// (MX's E8M0 scales are powers of two, exact in float32); NVFP4's UE4M3 block scales as a
/// FLOAT8E4M3FN initializer dequantized by its float32 tensor scale, whose output is the
/// kernel's block scale: value · float(bs · tensor scale), the simulation's product. One
/// blocked DequantizeLinear follows, its axis the image of the grid's axis in the layout the
/// ONNX node consumes (a conv's HWIO input channels are OIHW's axis 1, a dense (in, out)
/// kernel's axis 0 stays 0). torchao's int4 weight-only dequantizes as (q − 8)·scale + a float
/// zero point per group, rounded twice: UINT4 codes with zero point 8 through the same
/// DequantizeLinear, then an Add of the zero points over the kernel reshaped into its groups
/// (…, blocks, block, …) and back — the simulation's two float32 operations. The spec form (export_options::low_bit_form) stores E2M1 as
/// FLOAT4E2M1 (opset 23) and MX scales as FLOAT8E8M0 (opset 24) instead. Either way the
/// exporter computes what DequantizeLinear will give for every element and requires the
/// simulation's dequantized kernel, bit for bit.
///
/// Dynamic points, in the simulation's order of float32 operations (each ONNX op rounds once,
/// as each of the simulation's does; Round is half to even in ONNX and in the simulation):
///  - torchao per-token int8 (intx_per_token): ReduceMin/ReduceMax along the row, min(·, 0),
///    max(·, 0), scale = max((max⁺ − min⁻) / 255, eps), zp = clip(−128 − round(min⁻ / scale)),
///    q = clip(round(x · (1 / scale)) + zp), y = (q − zp) · scale; 1 / scale written so that
///    onnxruntime's optimizer cannot turn the product into a division (see `reciprocal`);
///  - torchao FP8 per row / per tensor: s = amax / 448, Cast(clip(x / s, ±448)) to
///    FLOAT8E4M3FN (round to nearest even, measured equal to ml_dtypes on 2^20 values and
///    every midpoint) and back, times s;
///  - torchao MX (RCEIL): per block of the axis (a Reshape to (…, D/B, B, …)), d = amax / max;
///    the shared exponent ceil(log2 d) as torch computes it, exactly, without Log: the count
///    of thresholds below d, one per exponent k in [−127, 126] (2^k, or the largest float
///    above 2^k whose torch.log2 is still k: torch_log2_table.hpp), minus 127; the scale and
///    its multiplier 2^−e (1 for e = −127) are Gathers from tables of powers of two;
///    elements clip(x · 2^−e, ±max) rounded to E2M1 (Round(t / step) · step, the step 0.5,
///    1 or 2 by |t|: round to nearest even on E2M1's grid) or Cast to FLOAT8E4M3FN;
///  - torchao NVFP4: the tensor amax over the whole tensor (every sample of the batch, as the
///    simulation computes it), g = amax / 2688, 1 / g; per block of 16 the UE4M3 scale
///    Cast(clip((amax_b / 6) / g, 2^−6, 448)) to FLOAT8E4M3FN and back, elements clip(x ·
///    ((1 / g) / bs), ±6) rounded to E2M1, times g · bs (one level: 1 / bs and bs).
/// NaN inputs are outside this contract (the simulation's NaN rules are not reproduced).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../numerics/low_bit_specs.hpp"
#include "../../../numerics/torch_log2_table.hpp"
#include "../detail/onnx_writer.hpp"
#include "../export_graph.hpp"

namespace xq::deploy::detail {

namespace ox = xq::onnx;

/// A tensor of a sub-byte or byte type from one code per element (low bits first, as ONNX packs).
inline ox::tensor_data packed_tensor(std::string name, ox::data_type t, std::vector<std::int64_t> dims,
                                     const std::vector<std::uint8_t>& codes) {
  const std::size_t bits = ox::element_bits(t);
  ox::tensor_data d;
  d.name = std::move(name);
  d.type = t;
  d.dims = std::move(dims);
  d.raw.assign((codes.size() * bits + 7) / 8, '\0');
  const unsigned mask = bits >= 8 ? 0xFFu : (1u << bits) - 1u;
  for (std::size_t k = 0; k < codes.size(); ++k)
    d.raw[k * bits / 8] = char(static_cast<unsigned char>(d.raw[k * bits / 8]) | ((codes[k] & mask) << ((k * bits) % 8)));
  return d;
}

/// The ONNX axis that axis `a` of a weight of shape `s` becomes in layout `k`, where its
/// elements stay consecutive; -1 where the layout interleaves or reorders them.
inline std::int64_t onnx_axis_of(onnx_layout::kind k, std::size_t a, const tensor::shape_type& s) {
  using kind = onnx_layout::kind;
  static constexpr std::int64_t spatial[] = {2, 3, 1, 0};  // HWIO -> OIHW; (KH, KW, F, C) -> (C, F, KH, KW)
  switch (k) {
    case kind::as_is: return std::int64_t(a);
    case kind::conv2d:
    case kind::conv_transpose: return a < 4 ? spatial[a] : -1;
    case kind::depthwise:  // (KH, KW, C, M) -> (C·M, 1, KH, KW)
      if (a < 2) return spatial[a];
      return (a == 2 && s[3] == 1) || (a == 3 && s[2] == 1) ? 0 : -1;
    case kind::lstm_recurrent:
    case kind::gru_recurrent: return a == 0 ? 2 : -1;  // (u, G·u) -> (1, G·u, u): the gate rows move
  }
  return -1;
}

XQ_DECL std::string onnx_writer::floats(const std::string& name, const std::vector<float>& values) {
  return add_initializer(ox::tensor_data::float32(name, {std::int64_t(values.size())}, values));
}

XQ_DECL void onnx_writer::expose(const std::string& value, const std::string& name, ox::data_type t,
                                 std::vector<ox::dimension> dims) {
  if (used_.count(name)) return;
  used_.insert(name);
  out_.add_node("Identity", {value}, {name}, {}, fresh("node/" + name));
  out_.outputs.push_back(ox::value_info(name, t, std::move(dims)));
}

XQ_DECL std::string onnx_writer::reduce(const std::string& op, const std::string& x, const std::vector<std::int64_t>& axes,
                                        bool keepdims, const std::string& name) {
  const bool axes_input = o_.opset >= (op == "ReduceSum" ? 13 : 18);
  if (axes_input)
    return node(op, {x, int64s(name + "/axes", axes)}, name, {ox::int_attribute("keepdims", keepdims ? 1 : 0)});
  return node(op, {x}, name, {ox::ints_attribute("axes", axes), ox::int_attribute("keepdims", keepdims ? 1 : 0)});
}

// ---- kernels ----------------------------------------------------------------------------------

XQ_DECL std::string onnx_writer::low_bit_kernel(std::size_t i, const weight_use& u, onnx_layout& l,
                                                const std::string& name) {
  const quantization_grid& g = u.q.grid;
  const std::string& path = u.q.quantizer;
  const tensor& raw = g_.weights.at(u.weight).value;
  const std::vector<std::size_t> shape(raw.shape().begin(), raw.shape().end());
  const bool spec_form = o_.low_bit_form == onnx_low_bit_form::spec;
  if (o_.opset < 21)
    throw argument_error(path,
                         "opset 21 or later for a low-bit kernel (blocked DequantizeLinear; export_options::opset 0 "
                         "chooses it)",
                         xq::detail::concat("opset ", o_.opset, " for ", describe(g)));
  check_grid_for(g, shape, path);
  if (u.q.dequantized.size() != raw.size())
    throw argument_error(path, xq::detail::concat(raw.size(), " dequantized values of the kernel"),
                         xq::detail::concat(u.q.dequantized.size()));

  // The grid's axis in the ONNX layout, and each ONNX element's scale there (checked: one
  // scale slot of the file holds one scale of the grid).
  const std::size_t rank = shape.size(), count = raw.size();
  const grid_granularity gran = g.granularity();
  std::size_t own_axis = 0, length = 1, inner = 1;
  std::int64_t axis = -1;
  if (gran != grid_granularity::per_tensor) {
    const long a = g.channel_axis < 0 ? g.channel_axis + long(rank) : g.channel_axis;
    own_axis = std::size_t(a);
    length = shape[own_axis];
    for (std::size_t d = own_axis + 1; d < rank; ++d) inner *= shape[d];
    axis = onnx_axis_of(l.what, own_axis, raw.shape());
    if (axis < 0)
      throw argument_error(path,
                           "a kernel grid whose blocks run along an axis the ONNX layout keeps in order (a conv's "
                           "input channels, a dense kernel's input axis)",
                           xq::detail::concat(describe(g), " on a kernel of shape ", xq::detail::shape_string(raw.shape())));
  }
  const std::size_t block = gran == grid_granularity::per_block ? g.block_size : 1;
  const std::size_t blocks = (length + block - 1) / block;
  auto own_scale = [&](std::size_t e) -> std::size_t {
    switch (gran) {
      case grid_granularity::per_tensor: return 0;
      case grid_granularity::per_channel: return (e / inner) % length;
      case grid_granularity::per_block: {
        const std::size_t o = e / (length * inner), c = (e / inner) % length, in = e % inner;
        return (o * blocks + c / block) * inner + in;
      }
    }
    return 0;
  };
  // The scale tensor's dims in the file: a scalar, one per index of the axis, or the
  // kernel's dims with the axis shortened to its block count.
  std::vector<std::int64_t> sdims;
  if (gran == grid_granularity::per_channel) sdims = {l.dims[std::size_t(axis)]};
  if (gran == grid_granularity::per_block) {
    sdims = l.dims;
    sdims[std::size_t(axis)] = std::int64_t(blocks);
  }
  std::vector<std::int64_t> onnx_strides(l.dims.size(), 1);
  for (std::size_t d = l.dims.size(); d-- > 1;) onnx_strides[d - 1] = onnx_strides[d] * l.dims[d];
  std::vector<std::int64_t> scale_strides(sdims.size(), 1);
  for (std::size_t d = sdims.size(); d-- > 1;) scale_strides[d - 1] = scale_strides[d] * sdims[d];
  std::size_t scale_count = 1;
  for (std::int64_t d : sdims) scale_count *= std::size_t(d);
  auto file_scale = [&](std::size_t e) -> std::size_t {  // ONNX element e's scale slot in the file
    if (gran == grid_granularity::per_tensor) return 0;
    const std::int64_t c = (std::int64_t(e) / onnx_strides[std::size_t(axis)]) % l.dims[std::size_t(axis)];
    if (gran == grid_granularity::per_channel) return std::size_t(c);
    std::size_t slot = 0;
    for (std::size_t d = 0; d < l.dims.size(); ++d) {
      const std::int64_t coord = (std::int64_t(e) / onnx_strides[d]) % l.dims[d];
      slot += std::size_t((d == std::size_t(axis) ? coord / std::int64_t(block) : coord) * scale_strides[d]);
    }
    return slot;
  };
  std::vector<std::size_t> slot_scale(scale_count, std::size_t(-1));
  for (std::size_t e = 0; e < count; ++e) {
    const std::size_t src = l.from.empty() ? e : l.from[e];
    std::size_t& held = slot_scale[file_scale(e)];
    const std::size_t own = own_scale(src);
    if (held == std::size_t(-1)) held = own;
    else if (held != own)
      throw argument_error(path, "a kernel grid whose blocks stay whole in the ONNX layout",
                           xq::detail::concat(describe(g), ": file element ", e, " mixes blocks ", held, " and ", own));
  }

  // The elements.
  ox::data_type element_type;
  std::vector<std::uint8_t> codes(count);
  std::vector<std::int32_t> zero_points;  // per file scale slot; empty: all 0
  if (!is_float_element(g.element)) {
    if (g.element != grid_element::integer)
      throw argument_error(path, "an integer or float-element kernel grid", describe(g));
    std::int32_t lo = g.qmin, hi = g.qmax;
    if (!g.symmetric()) {
      zero_points.resize(scale_count);
      for (std::size_t k = 0; k < scale_count; ++k) {
        zero_points[k] = g.zero_point.at(slot_scale[k]);
        lo = std::min(lo, zero_points[k]), hi = std::max(hi, zero_points[k]);
      }
    }
    if (o_.opset >= 25 && lo >= -2 && hi <= 1) element_type = ox::data_type::int2;
    else if (lo >= -8 && hi <= 7) element_type = ox::data_type::int4;
    else if (lo >= 0 && hi <= 15) element_type = ox::data_type::uint4;
    else if (lo >= -128 && hi <= 127) element_type = ox::data_type::int8;
    else if (lo >= 0 && hi <= 255) element_type = ox::data_type::uint8;
    else throw argument_error(path, "a blocked kernel grid of at most 8-bit integers", describe(g));
    for (std::size_t e = 0; e < count; ++e)
      codes[e] = std::uint8_t(std::uint32_t(u.q.integers[l.from.empty() ? e : l.from[e]]) & 0xFFu);
  } else {
    const bool fp4_spec = spec_form && g.element == grid_element::fp4_e2m1;
    if (fp4_spec && o_.opset < 23)
      throw argument_error(path, "opset 23 or later for FLOAT4E2M1 kernels (the spec form)", xq::detail::concat("opset ", o_.opset));
    element_type = fp4_spec                            ? ox::data_type::float4e2m1
                   : g.element == grid_element::fp8_e5m2 ? ox::data_type::float8e5m2
                                                         : ox::data_type::float8e4m3fn;
    const bool recode = element_type == ox::data_type::float8e4m3fn && g.element != grid_element::fp8_e4m3fn;
    for (std::size_t e = 0; e < count; ++e) {
      const std::uint32_t q = std::uint32_t(u.q.integers[l.from.empty() ? e : l.from[e]]);
      if (!recode) {
        codes[e] = std::uint8_t(q);
        continue;
      }
      // E2M1 and FP6 values are E4M3 values: the same value, E4M3's code.
      const auto c = element_code(grid_element::fp8_e4m3fn, double(element_value(g.element, q)));
      if (!c)
        throw argument_error(path, "element values FLOAT8E4M3FN holds exactly",
                             xq::detail::concat(to_string(g.element), " code ", q));
      codes[e] = std::uint8_t(*c);
    }
  }

  // The scales, in the file's slot order.
  std::vector<float> scales(scale_count);
  for (std::size_t k = 0; k < scale_count; ++k) scales[k] = g.scale.at(slot_scale[k]);
  // torchao's int4 weight-only: an offset per scale, added after the DequantizeLinear.
  std::vector<float> offsets(g.offset.empty() ? 0 : scale_count);
  for (std::size_t k = 0; k < offsets.size(); ++k) offsets[k] = g.offset.at(slot_scale[k]);
  if (!offsets.empty() && gran == grid_granularity::per_channel)
    throw argument_error(path, "offsets per tensor or per block", describe(g));
  if (!offsets.empty() && gran == grid_granularity::per_block && l.dims[std::size_t(axis)] % std::int64_t(block) != 0)
    throw argument_error(path, "blocks that divide the axis (a kernel with offsets: a Reshape splits the axis into its blocks)",
                         xq::detail::concat(l.dims[std::size_t(axis)], " along it, blocks of ", block));
  const bool two_level = g.scale_type == scale_element::ue4m3 && g.tensor_scale.has_value();
  const bool e8m0 = spec_form && g.scale_type == scale_element::e8m0;
  if (e8m0 && o_.opset < 24)
    throw argument_error(path, "opset 24 or later for FLOAT8E8M0 scales (the spec form)", xq::detail::concat("opset ", o_.opset));

  // What DequantizeLinear gives each element, against the simulation's kernel, bit for bit.
  for (std::size_t e = 0; e < count; ++e) {
    const std::size_t src = l.from.empty() ? e : l.from[e], slot = file_scale(e);
    const float scale = two_level ? scales[slot] * *g.tensor_scale : scales[slot];
    const float value = is_float_element(g.element)
                            ? element_value(g.element, std::uint32_t(u.q.integers[src]))
                            : float(u.q.integers[src] - (zero_points.empty() ? 0 : zero_points[slot]));
    const float file = g.offset.empty() ? value * scale : value * scale + offsets[slot];
    const float simulated = u.q.dequantized.data()[src];
    if (!(file == simulated) && !(std::isnan(file) && std::isnan(simulated)))
      throw argument_error(path, "a kernel whose elements times its scales are the simulation's values",
                           xq::detail::concat("element ", src, ": ", value, " · ", scale, " = ", file, ", simulated ",
                                              simulated, " (", describe(g), ")"));
  }

  note(path, u.q.description, g);
  std::string key = xq::detail::concat(u.weight, "|", int(l.what), "|", path);
  if (!o_.share_reused_weights) key += xq::detail::concat("|node ", i);
  auto it = weights_.find(key);
  if (it == weights_.end()) {
    stored_weight s;
    s.dequantize = true;
    s.block_size = gran == grid_granularity::per_block ? std::int64_t(block) : 0;
    s.stored = add_initializer(packed_tensor(name, element_type, l.dims, codes));
    if (two_level) {  // NVFP4: UE4M3 block scales, dequantized by the float32 tensor scale
      std::vector<std::uint8_t> sc(scale_count);
      for (std::size_t k = 0; k < scale_count; ++k) {
        const auto c = element_code(grid_element::fp8_e4m3fn, double(scales[k]));
        if (!c || scales[k] < 0.0f) throw argument_error(path, "UE4M3 block scales", xq::detail::concat(scales[k]));
        sc[k] = std::uint8_t(*c);
      }
      s.scale = add_initializer(packed_tensor(name + "/block_scale", ox::data_type::float8e4m3fn, sdims, sc));
      s.tensor_scale = add_initializer(ox::tensor_data::float32_scalar(name + "/tensor_scale", *g.tensor_scale));
    } else if (e8m0) {  // MX in the spec form: the biased exponent of each power of two
      std::vector<std::uint8_t> sc(scale_count);
      for (std::size_t k = 0; k < scale_count; ++k) {
        int ex = 0;
        const float m = std::frexp(scales[k], &ex);  // scales[k] = m · 2^ex, m = 0.5 for a power of two
        if (m != 0.5f || ex - 1 < -127 || ex - 1 > 127)
          throw argument_error(path, "E8M0 scales (powers of two, 2^-127 to 2^127)", xq::detail::concat(scales[k]));
        sc[k] = std::uint8_t(ex - 1 + 127);
      }
      s.scale = add_initializer(packed_tensor(name + "/scale", ox::data_type::float8e8m0, sdims, sc));
      s.e8m0 = true;
    } else {
      s.scale = add_initializer(ox::tensor_data::float32(name + "/scale", sdims, scales));
    }
    if (!zero_points.empty()) {
      std::vector<std::uint8_t> z(scale_count);
      for (std::size_t k = 0; k < scale_count; ++k) z[k] = std::uint8_t(std::uint32_t(zero_points[k]) & 0xFFu);
      s.zero_point = add_initializer(packed_tensor(name + "/zero_point", element_type, sdims, z));
    }
    if (!offsets.empty()) {
      std::vector<std::int64_t> odims;  // a scalar per tensor; per block (…, blocks, 1, …)
      if (gran == grid_granularity::per_block) {
        odims = sdims;
        odims.insert(odims.begin() + axis + 1, 1);
        s.offset_split = l.dims;
        s.offset_split[std::size_t(axis)] = std::int64_t(blocks);
        s.offset_split.insert(s.offset_split.begin() + axis + 1, std::int64_t(block));
      }
      s.offset = add_initializer(ox::tensor_data::float32(name + "/offset", odims, offsets));
    }
    s.layout = l;
    s.layout.axis = axis;
    s.layout.channel.clear();
    it = weights_.emplace(key, std::move(s)).first;
  }
  const stored_weight& s = it->second;
  l = s.layout;
  // Nodes per use (a DequantizeLinear shared by two convs trips onnxruntime's QDQ fusion).
  std::string scale = s.scale;
  if (!s.tensor_scale.empty()) scale = node("DequantizeLinear", {s.scale, s.tensor_scale}, name + "/block_scale/dq");
  std::vector<std::string> in{s.stored, scale};
  if (!s.zero_point.empty()) in.push_back(s.zero_point);
  std::vector<ox::attribute> attrs;
  if (s.layout.axis >= 0) attrs.push_back(ox::int_attribute("axis", s.layout.axis));
  if (s.block_size) attrs.push_back(ox::int_attribute("block_size", s.block_size));
  if (s.e8m0) attrs.push_back(ox::int_attribute("output_dtype", 1));  // FLOAT, not the scale's type
  std::string y = node("DequantizeLinear", in, name + "/dq", std::move(attrs));
  if (!s.offset.empty()) {  // (q - 8) · scale, then + the group's float zero point: torchao's two roundings
    if (s.offset_split.empty()) {
      y = node("Add", {y, s.offset}, name + "/offset");
    } else {
      const std::string blocked = node("Reshape", {y, int64s(name + "/blocked_shape", s.offset_split)}, name + "/blocked");
      const std::string added = node("Add", {blocked, s.offset}, name + "/offset");
      y = node("Reshape", {added, int64s(name + "/kernel_shape", s.layout.dims)}, name + "/unblocked");
    }
  }
  if (o_.expose_quantized) expose(y, "q:" + path, ox::data_type::float32, std::vector<ox::dimension>(l.dims.begin(), l.dims.end()));
  return y;
}

// ---- dynamic quantization points ------------------------------------------------------------

XQ_DECL onnx_value onnx_writer::dynamic_quantize(std::size_t i, const op::quantize& q) {
  const graph_node& n = g_.nodes[i];
  const std::string& path = q.quantizer;
  note(path, q.description, q.grid);
  onnx_value v = to_nchw(input(i, 0));  // exposed spatial tensors are NCHW, as the ops after them want
  const std::vector<std::size_t>& s = shape_of(n.output);
  const std::size_t rank = s.size();
  int a = q.format.axis();
  if (a < 0) a += int(rank);
  if (a <= 0 || a >= int(rank))
    throw argument_error(path, "a dynamic format along a non-batch axis of its tensor",
                         xq::detail::concat("axis ", q.format.axis(), " of a rank-", rank, " tensor"));
  const bool nchw = v.rank == 4 && v.nchw;
  const std::int64_t ax = nchw ? nchw_axis(std::size_t(a)) : std::int64_t(a);
  std::vector<std::int64_t> dims;
  if (nchw) dims = {std::int64_t(s[0]), std::int64_t(s[3]), std::int64_t(s[1]), std::int64_t(s[2])};
  else
    for (std::size_t d : s) dims.push_back(std::int64_t(d));
  std::vector<std::int64_t> all_axes;
  for (std::size_t d = 0; d < rank; ++d) all_axes.push_back(std::int64_t(d));
  const std::string x = v.name, base = path;
  auto refuse = [&](const std::string& why) {
    throw argument_error(path,
                         "a dynamic format the ONNX export computes exactly with standard operators (torchao's "
                         "per-token int8, FP8 E4M3 per row or tensor, MX RCEIL with E2M1 or E4M3 elements, NVFP4)",
                         describe(q.format) + ": " + why);
  };
  if (o_.opset < 19 && !q.format.get_if<low_bit::intx_spec>())
    throw argument_error(path, "opset 19 or later for a dynamic FP8, MX or NVFP4 point (Cast to FLOAT8E4M3FN)",
                         xq::detail::concat("opset ", o_.opset));
  const auto cast_e4m3 = [&](const std::string& t, const std::string& name) {  // round to E4M3 (RNE) and back
    const std::string c = node("Cast", {t}, name + "/e4m3", {ox::int_attribute("to", std::int64_t(ox::data_type::float8e4m3fn))});
    return node("Cast", {c}, name, {ox::int_attribute("to", 1)});
  };
  const auto round_e2m1 = [&](const std::string& t, const std::string& name) {
    // Round to nearest even on E2M1's grid {0, .5, 1, 1.5, 2, 3, 4, 6} for |t| <= 6: the grid
    // step is 0.5 below 2, 1 below 4, 2 above; t / step is exact (a power of two), and an
    // even multiple of the step is an even mantissa.
    const std::string mag = node("Abs", {t}, name + "/abs");
    const std::string upper = node("Where", {node("Less", {mag, constant(4.0f)}, name + "/below4"), constant(1.0f), constant(2.0f)},
                                   name + "/upper_step");
    const std::string step = node("Where", {node("Less", {mag, constant(2.0f)}, name + "/below2"), constant(0.5f), upper},
                                  name + "/step");
    return node("Mul", {node("Round", {node("Div", {t, step}, name + "/steps")}, name + "/rounded"), step}, name);
  };
  // 1 / s as the simulation computes it (one float32 division), written as (2 / s) · 0.5 —
  // the same bits while 2 / s stays finite (s >= 2^-126 here) — because onnxruntime's
  // optimizer (ORT_ENABLE_ALL) rewrites Mul(x, Div(1, s)) into Div(x, s), which rounds
  // otherwise at ties: measured, 5 of 1,179,648 per-token int8 values one step away.
  const auto reciprocal = [&](const std::string& sc, const std::string& name) {
    return node("Mul", {node("Div", {constant(2.0f), sc}, name + "/twice"), constant(0.5f)}, name);
  };
  // (…, D, …) -> (…, D / B, B, …) along ax, and back (the batch copied: 0).
  const auto blocks_of = [&](std::size_t b, const std::string& name) {
    if (dims[std::size_t(ax)] % std::int64_t(b) != 0)
      refuse(xq::detail::concat("an axis of ", dims[std::size_t(ax)], " values, not a multiple of the block ", b));
    std::vector<std::int64_t> split{0};
    for (std::size_t d = 1; d < dims.size(); ++d) {
      if (std::int64_t(d) == ax) split.push_back(dims[d] / std::int64_t(b)), split.push_back(std::int64_t(b));
      else split.push_back(dims[d]);
    }
    return node("Reshape", {x, int64s(name + "/block_shape", split)}, name + "/blocks");
  };
  const auto unblock = [&](const std::string& y, const std::string& name) {
    std::vector<std::int64_t> back{0};
    for (std::size_t d = 1; d < dims.size(); ++d) back.push_back(dims[d]);
    return node("Reshape", {y, int64s(name + "/shape", back)}, name);
  };

  std::string y;
  if (const auto* f = q.format.get_if<low_bit::intx_spec>()) {
    if (f->scheme != low_bit::intx_scheme::intx_per_token) refuse("only torchao's per-token activations are dynamic here");
    const float qmin = -std::ldexp(1.0f, f->bits - 1), qmax = std::ldexp(1.0f, f->bits - 1) - 1.0f;
    const float eps = f->eps > 0.0f ? f->eps : 1.17549435e-38f;
    const std::string lo = reduce("ReduceMin", x, {ax}, true, base + "/min");
    const std::string hi = reduce("ReduceMax", x, {ax}, true, base + "/max");
    const std::string min_neg = node("Min", {lo, constant(0.0f)}, base + "/min_neg");
    const std::string max_pos = node("Max", {hi, constant(0.0f)}, base + "/max_pos");
    const std::string range = node("Sub", {max_pos, min_neg}, base + "/range");
    const std::string scale =
        node("Max", {node("Div", {range, constant(qmax - qmin)}, base + "/step"), constant(eps)}, base + "/scale");
    const std::string shift = node("Round", {node("Div", {min_neg, scale}, base + "/min_steps")}, base + "/min_rounded");
    const std::string zp =
        node("Clip", {node("Sub", {constant(qmin), shift}, base + "/zp_raw"), constant(qmin), constant(qmax)}, base + "/zero_point");
    const std::string inv = reciprocal(scale, base + "/inv_scale");
    const std::string r = node("Round", {node("Mul", {x, inv}, base + "/scaled")}, base + "/rounded");
    const std::string qv =
        node("Clip", {node("Add", {r, zp}, base + "/shifted"), constant(qmin), constant(qmax)}, base + "/q");
    y = node("Mul", {node("Sub", {qv, zp}, base + "/centred"), scale}, base + "/dq");
  } else if (const auto* f = q.format.get_if<low_bit::fp8_spec>()) {
    if (f->variant != low_bit::fp8_variant::torchao) refuse("TransformerEngine's scaling is not exported");
    if (f->element != low_bit::element_type::e4m3fn) refuse("E5M2 elements are not exported");
    const bool per_row = f->granularity == low_bit::fp8_granularity::per_row;
    // fp8_spec's axis is the row's axis (the format's axis() says which).
    const std::string amax = reduce("ReduceMax", node("Abs", {x}, base + "/abs"), per_row ? std::vector<std::int64_t>{ax} : all_axes,
                                    true, base + "/amax");
    const std::string scale = node("Div", {amax, constant(448.0f)}, base + "/scale");
    const std::string t = node("Clip", {node("Div", {x, scale}, base + "/scaled"), constant(-448.0f), constant(448.0f)},
                               base + "/clipped");
    y = node("Mul", {cast_e4m3(t, base + "/element"), scale}, base + "/dq");
  } else if (const auto* f = q.format.get_if<low_bit::mx_spec>()) {
    if (f->variant != low_bit::mx_variant::torchao_rceil) refuse("only torchao's RCEIL exponent is exported");
    if (f->element.int8 || (f->element.type != low_bit::element_type::e2m1 && f->element.type != low_bit::element_type::e4m3fn))
      refuse("only E2M1 and E4M3 elements are exported");
    const bool fp4 = f->element.type == low_bit::element_type::e2m1;
    const float max = fp4 ? 6.0f : 448.0f;
    const std::string xb = blocks_of(std::size_t(f->block_size), base);
    const std::string amax = reduce("ReduceMax", node("Abs", {xb}, base + "/abs"), {ax + 1}, true, base + "/amax");
    const std::string d = node("Div", {amax, constant(max)}, base + "/descale");
    // torch's ceil(log2 d), clamped to [-127, 127]: -127 + #{k : d > threshold_k}.
    std::vector<float> thresholds, powers, multipliers;
    for (int k = -127; k <= 126; ++k) {
      const std::uint32_t above = xq::low_bit::detail::torch_log2_above[k + 149];
      float t = std::ldexp(1.0f, k);
      if (above != 0) std::memcpy(&t, &above, sizeof t);
      thresholds.push_back(t);
    }
    for (int e = -127; e <= 127; ++e) {
      powers.push_back(std::ldexp(1.0f, e));
      multipliers.push_back(e == -127 ? 1.0f : std::ldexp(1.0f, -e));  // torchao: 1 for e = -127
    }
    const std::string last = int64s(base + "/last_axis", {std::int64_t(rank) + 1});
    const std::string above = node("Greater", {node("Unsqueeze", {d, last}, base + "/descale_column"),
                                               floats(base + "/log2_thresholds", thresholds)},
                                   base + "/above");
    const std::string counted = reduce("ReduceSum", node("Cast", {above}, base + "/above_float", {ox::int_attribute("to", 1)}),
                                       {std::int64_t(rank) + 1}, false, base + "/exponent_index");
    const std::string index = node("Cast", {counted}, base + "/index", {ox::int_attribute("to", 7)});  // INT64
    const std::string scale = node("Gather", {floats(base + "/powers", powers), index}, base + "/scale", {ox::int_attribute("axis", 0)});
    const std::string pre =
        node("Gather", {floats(base + "/multipliers", multipliers), index}, base + "/multiplier", {ox::int_attribute("axis", 0)});
    const std::string t =
        node("Clip", {node("Mul", {xb, pre}, base + "/scaled"), constant(-max), constant(max)}, base + "/clipped");
    const std::string e = fp4 ? round_e2m1(t, base + "/element") : cast_e4m3(t, base + "/element");
    y = unblock(node("Mul", {e, scale}, base + "/dq_blocks"), base + "/dq");
  } else if (const auto* f = q.format.get_if<low_bit::nvfp4_spec>()) {
    const bool one_level = f->variant == low_bit::nvfp4_variant::torchao_one_level;
    if (f->variant != low_bit::nvfp4_variant::torchao && !one_level) refuse("only torchao's NVFP4 is exported");
    const std::string xb = blocks_of(16, base);
    const std::string amax_b = reduce("ReduceMax", node("Abs", {xb}, base + "/abs"), {ax + 1}, true, base + "/block_amax");
    const std::string sixth = node("Div", {amax_b, constant(6.0f)}, base + "/block_sixth");
    std::string bs, pre, post;
    if (one_level) {
      bs = cast_e4m3(node("Clip", {sixth, constant(0.015625f), constant(448.0f)}, base + "/block_scale_raw"), base + "/block_scale");
      pre = reciprocal(bs, base + "/multiplier");
      post = bs;
    } else {
      // The tensor amax over the whole tensor: every sample of the batch.
      const std::string amax = reduce("ReduceMax", node("Abs", {x}, base + "/tensor_abs"), all_axes, true, base + "/tensor_amax");
      const std::string gs = node("Div", {amax, constant(2688.0f)}, base + "/tensor_scale");
      const std::string inv_g = node("Div", {constant(1.0f), gs}, base + "/inv_tensor_scale");
      bs = cast_e4m3(node("Clip", {node("Div", {sixth, gs}, base + "/block_ratio"), constant(0.015625f), constant(448.0f)},
                          base + "/block_scale_raw"),
                     base + "/block_scale");
      pre = node("Div", {inv_g, bs}, base + "/multiplier");
      post = node("Mul", {gs, bs}, base + "/scale");
    }
    const std::string t = node("Clip", {node("Mul", {xb, pre}, base + "/scaled"), constant(-6.0f), constant(6.0f)}, base + "/clipped");
    y = unblock(node("Mul", {round_e2m1(t, base + "/element"), post}, base + "/dq_blocks"), base + "/dq");
  } else {
    refuse("no format");
  }
  if (o_.expose_quantized) {
    expose(x, "q:" + q.label + "/input", ox::data_type::float32, batch_dims(s, true));
    expose(y, "q:" + q.label, ox::data_type::float32, batch_dims(s, true));
  }
  v.name = y;
  return v;
}

}  // namespace xq::deploy::detail
