#pragma once
/// \file low_bit_ops.ipp
/// The engine's low-bit ops (deploy/engine/low_bit_ops.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../core/tape.hpp"
#include "../../../kernels/channel_layout.hpp"
#include "../../../layers/batch_norm.hpp"
#include "../../../quantizers/low_bit_format_numerics.hpp"
#include "../../../quantizers/quantize_on_grid.hpp"
#include "../../../wrappers/batch_norm_folding.hpp"
#include "../detail/float_call_scope.hpp"
#include "../low_bit_ops.hpp"
#include "../op_codec.hpp"

namespace xq::deploy {

namespace detail {

/// Bytes one scale takes in its storage type.
inline std::size_t scale_width(scale_element t) noexcept { return t == scale_element::float32 ? 4 : 1; }

/// The grid's scales in their storage form: E8M0's biased exponent, UE4M3's code, float32's
/// little-endian bytes.
inline std::vector<std::uint8_t> stored_scales(const quantization_grid& g) {
  std::vector<std::uint8_t> out;
  for (float s : g.scale) {
    switch (g.scale_type) {
      case scale_element::e8m0: out.push_back(std::uint8_t(std::ilogb(s) + 127)); break;
      case scale_element::ue4m3: out.push_back(std::uint8_t(*element_code(grid_element::fp8_e4m3fn, double(s)))); break;
      case scale_element::float32: {
        std::uint8_t b[4];
        std::memcpy(b, &s, 4);
        out.insert(out.end(), b, b + 4);
        break;
      }
    }
  }
  return out;
}

inline std::vector<float> loaded_scales(scale_element t, const std::vector<std::uint8_t>& b, const op_reader& r) {
  if (b.size() % scale_width(t)) r.fail("scales: a byte count that is not a multiple of the scale's width");
  std::vector<float> out(b.size() / scale_width(t));
  for (std::size_t i = 0; i < out.size(); ++i) {
    switch (t) {
      case scale_element::e8m0:
        if (b[i] == 255) r.fail("scales: E8M0's NaN code 0xFF");
        out[i] = std::ldexp(1.0f, int(b[i]) - 127);
        break;
      case scale_element::ue4m3: out[i] = element_value(grid_element::fp8_e4m3fn, b[i]); break;
      case scale_element::float32: std::memcpy(&out[i], &b[4 * i], 4); break;
    }
  }
  return out;
}

// ---- a low-bit format in a file -------------------------------------------------------

template <class E>
E enum_field(const op_reader& r, const char* key, E last) {
  return static_cast<E>(r.integer(key, 0, std::int64_t(last)));
}

inline void encode_format(op_writer& w, const low_bit_format& f) {
  visit_format(f, [&](const auto& s) {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, low_bit::intx_spec>) {
          w.text("kind", "intx");
          w.integer("scheme", std::int64_t(s.scheme));
          w.integer("bits", s.bits);
          w.integer("group_size", s.group_size);
          w.number("eps", double(s.eps));
        } else if constexpr (std::is_same_v<S, low_bit::fp8_spec>) {
          w.text("kind", "fp8");
          w.integer("variant", std::int64_t(s.variant));
          w.integer("element", std::int64_t(s.element));
          w.integer("granularity", std::int64_t(s.granularity));
        } else if constexpr (std::is_same_v<S, low_bit::mx_spec>) {
          w.text("kind", "mx");
          w.integer("variant", std::int64_t(s.variant));
          w.integer("element", std::int64_t(s.element.type));
          w.flag("int8", s.element.int8);
          w.integer("block_size", s.block_size);
        } else if constexpr (std::is_same_v<S, low_bit::nvfp4_spec>) {
          w.text("kind", "nvfp4");
          w.integer("variant", std::int64_t(s.variant));
          w.flag("tiles_16x16", s.tiles_16x16);
        } else {
          w.text("kind", "none");
        }
        if constexpr (!std::is_same_v<S, no_low_bit_format>) w.integer("axis", s.axis);
      });
}

inline low_bit_format decode_format(const op_reader& r) {
  const std::string kind = r.text("kind");
  low_bit_format f;
  const int axis = int(r.integer("axis", -64, 63));
  if (kind == "intx") {
    low_bit::intx_spec s;
    s.scheme = enum_field(r, "scheme", low_bit::intx_scheme::int4_weight_only);
    s.bits = int(r.integer("bits", 2, 8));
    s.group_size = int(r.integer("group_size", 0, 1 << 20));
    s.eps = float(r.number("eps"));
    s.axis = axis;
    f = s;
  } else if (kind == "fp8") {
    low_bit::fp8_spec s;
    s.variant = enum_field(r, "variant", low_bit::fp8_variant::transformer_engine);
    s.element = enum_field(r, "element", low_bit::element_type::e8m0);
    s.granularity = enum_field(r, "granularity", low_bit::fp8_granularity::per_row);
    s.axis = axis;
    f = s;
  } else if (kind == "mx") {
    low_bit::mx_spec s;
    s.variant = enum_field(r, "variant", low_bit::mx_variant::modelopt_mxfp8);
    s.element.type = enum_field(r, "element", low_bit::element_type::e8m0);
    s.element.int8 = r.flag("int8");
    s.block_size = int(r.integer("block_size", 1, 1 << 20));
    s.axis = axis;
    f = s;
  } else if (kind == "nvfp4") {
    low_bit::nvfp4_spec s;
    s.variant = enum_field(r, "variant", low_bit::nvfp4_variant::modelopt_triton);
    s.tiles_16x16 = r.flag("tiles_16x16");
    s.axis = axis;
    f = s;
  } else {
    r.fail("kind: expected intx, fp8, mx or nvfp4, given \"" + kind + "\"");
  }
  f.axis_from_layer = false;
  try {
    validate(f, r.where());
  } catch (const argument_error& e) {
    r.fail("format: expected " + e.expected() + ", given " + e.given());
  }
  return f;
}

/// Whether a format's scales of one sample depend on the other samples of the batch.
inline bool tensor_wide(const low_bit_format& f) noexcept {
  if (const auto* n = f.get_if<low_bit::nvfp4_spec>()) return n->variant != low_bit::nvfp4_variant::torchao_one_level;
  if (const auto* e = f.get_if<low_bit::fp8_spec>()) return e->granularity == low_bit::fp8_granularity::per_tensor;
  return false;
}

}  // namespace detail

// ---- packed_kernel ----------------------------------------------------------------------

XQ_DECL packed_kernel packed_kernel::pack(const std::vector<std::size_t>& shape, const quantization_grid& grid,
                                          const std::vector<std::int32_t>& integers) {
  packed_kernel k;
  k.shape = shape;
  k.grid = grid;
  k.grid.dynamic = false;  // a kernel's scales are fixed once it is deployed
  k.grid.rounding.range_min.clear();  // int4 weight-only's group minima: for rounding, which a kernel is past
  const int width = is_float_element(grid.element) ? element_bits(grid.element) : grid.num_bits;
  k.bits = width <= 4 ? 4 : 8;
  k.codes.assign(k.bits == 4 ? (integers.size() + 1) / 2 : integers.size(), 0);
  for (std::size_t i = 0; i < integers.size(); ++i) {
    const std::uint8_t c = std::uint8_t(integers[i]);  // two's complement for integers
    if (k.bits == 8)
      k.codes[i] = c;
    else
      k.codes[i / 2] |= std::uint8_t((c & 0x0F) << (4 * (i % 2)));
  }
  return k;
}

XQ_DECL std::size_t packed_kernel::elements() const noexcept {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

XQ_DECL std::int32_t packed_kernel::code(std::size_t i) const noexcept {
  std::uint32_t c = bits == 8 ? codes[i] : (codes[i / 2] >> (4 * (i % 2))) & 0x0Fu;
  if (grid.element == grid_element::integer && grid.qmin < 0) {  // sign-extend the integer
    const std::uint32_t sign = 1u << (bits - 1);
    return std::int32_t(c ^ sign) - std::int32_t(sign);
  }
  return std::int32_t(c);
}

XQ_DECL tensor packed_kernel::decode() const {
  tensor out = tensor::from_shape(tensor::shape_type(shape.begin(), shape.end()));
  const std::size_t n = elements();
  const kernels::channel_layout l = grid.granularity() == grid_granularity::per_tensor
                                        ? kernels::channel_layout{1, n, 1}
                                        : kernels::channel_layout::of(shape, grid.channel_axis, "packed_kernel");
  const bool element = is_float_element(grid.element);
  float* y = out.data();
  xq::detail::for_each_scale_run(grid, l.outer, l.channels, l.inner,
                                 [&](std::size_t first, std::size_t count, std::size_t si, std::size_t step) {
                                   for (std::size_t k = 0; k < count; ++k) {
                                     const std::size_t i = first + k, c = si + k * step;
                                     const float s = grid.tensor_scale ? grid.scale[c] * *grid.tensor_scale : grid.scale[c];
                                     const float v = element ? element_value(grid.element, std::uint32_t(code(i)))
                                                             : float(code(i) - grid.zero_point[c]);
                                     y[i] = grid.offset.empty() ? v * s : v * s + grid.offset[c];
                                   }
                                 });
  return out;
}

XQ_DECL std::size_t packed_kernel::stored_bytes() const noexcept {
  std::size_t zero_points = 0;  // stored where one is not 0 (int4 weight-only's 8s are its rule's, not stored)
  for (std::int32_t z : grid.zero_point) zero_points += z != 0 && grid.offset.empty();
  return codes.size() + grid.scale.size() * detail::scale_width(grid.scale_type) + (grid.tensor_scale ? 4 : 0) +
         (zero_points ? grid.zero_point.size() : 0) + 4 * grid.offset.size();
}

namespace detail {

inline void encode_packed(op_writer& w, const packed_kernel& k) {
  const quantization_grid& g = k.grid;
  w.sizes("shape", k.shape);
  w.text("element", to_string(g.element));
  w.integer("num_bits", g.num_bits);
  w.integer("qmin", g.qmin);
  w.integer("qmax", g.qmax);
  w.size("block_size", g.block_size);
  w.integer("axis", g.channel_axis);
  w.flag("per_channel", g.per_channel);
  w.text("scale_type", to_string(g.scale_type));
  if (g.tensor_scale) w.number("tensor_scale", double(*g.tensor_scale));
  if (!g.symmetric() && g.offset.empty())
    w.integers("zero_points", std::vector<std::int64_t>(g.zero_point.begin(), g.zero_point.end()));
  if (!g.offset.empty()) {  // torchao's int4 weight-only: zero points 8 (its rule's), a float offset per group
    w.numbers("offsets", g.offset);
    w.text("rounding", to_string(g.rounding.op));
  }
  const std::vector<std::uint8_t> scales = stored_scales(g);
  w.bytes("scales", scales.data(), scales.size());
  w.integer("bits", k.bits);
  w.bytes("codes", k.codes.data(), k.codes.size());
}

inline packed_kernel decode_packed(const op_reader& r) {
  packed_kernel k;
  k.shape = r.sizes("shape", 4, std::uint64_t(1) << 28);
  if (k.shape.empty()) r.fail("shape: expected a kernel of rank 1 to 4");
  std::uint64_t n = 1;
  for (std::size_t d : k.shape) {
    n *= std::max<std::size_t>(d, 1);
    if (n > (std::uint64_t(1) << 28)) r.fail("shape: more than 2^28 elements");
  }
  quantization_grid& g = k.grid;
  const auto element = grid_element_from_string(r.text("element"));
  const auto scale_type = scale_element_from_string(r.text("scale_type"));
  if (!element || !scale_type) r.fail("element or scale_type: not a name xquant knows");
  g.element = *element;
  g.scale_type = *scale_type;
  g.num_bits = int(r.integer("num_bits", 1, 8));
  g.qmin = std::int32_t(r.integer("qmin", -128, 255));
  g.qmax = std::int32_t(r.integer("qmax", -128, 255));
  g.block_size = r.size("block_size", std::size_t(1) << 28);
  g.channel_axis = int(r.integer("axis", -4, 3));
  g.per_channel = r.flag("per_channel");
  if (r.has("tensor_scale")) g.tensor_scale = float(r.number("tensor_scale"));
  g.scale = loaded_scales(g.scale_type, r.bytes("scales"), r);
  if (r.has("zero_points")) {
    for (std::int64_t z : r.integers("zero_points", g.scale.size())) g.zero_point.push_back(std::int32_t(z));
  } else {
    g.zero_point.assign(g.scale.size(), 0);
  }
  if (r.has("offsets")) {
    const auto op = rounding_operator_from_string(r.text("rounding"));
    if (!op) r.fail("rounding: not a name xquant knows");
    g.rounding.op = *op;
    g.offset = r.numbers<float>("offsets", g.scale.size());
    g.zero_point.assign(g.scale.size(), 8);
  }
  k.bits = int(r.integer("bits", 4, 8));
  if (k.bits != 4 && k.bits != 8) r.fail("bits: expected 4 or 8");
  k.codes = r.bytes("codes");
  const std::size_t want = k.bits == 4 ? std::size_t((n + 1) / 2) : std::size_t(n);
  if (k.codes.size() != want) r.fail(xq::detail::concat("codes: expected ", want, " bytes, given ", k.codes.size()));
  try {
    check_grid_for(g, k.shape, r.where());
  } catch (const argument_error& e) {
    r.fail("grid: expected " + e.expected() + ", given " + e.given());
  }
  // Every code must stand for a value of the grid: an integer in [qmin, qmax], a finite element.
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t c = k.code(i);
    const bool ok = is_float_element(g.element) ? std::isfinite(element_value(g.element, std::uint32_t(c)))
                                                : c >= g.qmin && c <= g.qmax;
    if (!ok) r.fail(xq::detail::concat("codes: element ", i, " has code ", c, ", outside the grid"));
  }
  return k;
}

}  // namespace detail

// ---- low_bit_quantize_op ----------------------------------------------------------------

XQ_DECL void low_bit_quantize_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const engine_tensor& x = values.at(inputs.at(0));
  tensor in = tensor::from_shape(tensor::shape_type(x.shape.begin(), x.shape.end()));
  std::copy(x.real.begin(), x.real.end(), in.data());
  const tensor y = xq::detail::format_forward(format, var(std::move(in)), false, path).y;
  engine_tensor out;
  out.shape = x.shape;
  out.real.assign(y.begin(), y.end());
  values[output] = std::move(out);
}

XQ_DECL std::string low_bit_quantize_op::describe() const {
  return "low_bit_quantize " + xq::describe(format) + " (scales from each tensor)";
}

XQ_DECL bool low_bit_quantize_op::batch_invariant() const noexcept { return !detail::tensor_wide(format); }

XQ_DECL engine_tensor low_bit_quantize_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  const engine_tensor& x = expect_one(in, value_kind::real);
  const long rank = long(x.shape.size()), axis = format.axis();
  if (!format) refuse("a low-bit format", "none");
  if (rank == 0 || axis < -rank || axis >= rank)
    refuse(xq::detail::concat("a tensor with axis ", axis, " (the format's blocks)"), detail::tensor_string(x));
  work = detail::element_count(x.shape);
  return detail::value_of(value_kind::real, x.shape);
}

XQ_DECL void low_bit_quantize_op::encode(op_writer& w) const {
  w.map("format", [&](op_writer& m) { detail::encode_format(m, format); });
}

XQ_DECL std::unique_ptr<lowered_op> low_bit_quantize_op::decode(const std::string&, const op_reader& r) {
  auto op = std::make_unique<low_bit_quantize_op>();
  op->format = detail::decode_format(*r.map("format"));
  return op;
}

namespace detail {

/// K (the reduction axis) and N of a dense kernel: (K, N), or a (N, K) table.
inline void dense_extents(const packed_kernel& w, bool transposed, std::size_t& k, std::size_t& n) {
  k = transposed ? w.shape[1] : w.shape[0];
  n = transposed ? w.shape[0] : w.shape[1];
}

/// The kernel as block_scaled_gemm multiplies it: K x N integers (FP4: twice the value), the
/// blocks x N dequantization scales (NVFP4: block scale times tensor scale, one rounding, as
/// the decoded values use), and its element kind.
inline packed_block_scaled_matrix integer_operands(const packed_kernel& w, bool transposed) {
  std::size_t k = 0, n = 0;
  dense_extents(w, transposed, k, n);
  const quantization_grid& g = w.grid;
  const bool fp4 = g.element == grid_element::fp4_e2m1;
  const block_element kind = fp4 ? block_element::fp4_e2m1 : g.num_bits <= 4 ? block_element::int4 : block_element::int8;
  const std::size_t block = g.block_size, blocks = (k + block - 1) / block;
  std::vector<std::int8_t> kn(k * n);
  std::vector<float> sb(blocks * n);
  for (std::size_t r = 0; r < k; ++r)
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t at = transposed ? j * k + r : r * n + j;
      const std::int32_t c = w.code(at);
      kn[r * n + j] = std::int8_t(fp4 ? std::int32_t(2.0f * element_value(g.element, std::uint32_t(c))) : c);
    }
  for (std::size_t b = 0; b < blocks; ++b)
    for (std::size_t j = 0; j < n; ++j) {
      const float s = g.scale[transposed ? j * blocks + b : b * n + j];
      sb[b * n + j] = g.tensor_scale ? s * *g.tensor_scale : s;
    }
  return packed_block_scaled_matrix(kn.data(), k, n, kind, block, sb.data(),
                                    g.scale_type == scale_element::float32 ? 32 : 8);
}

}  // namespace detail

XQ_DECL bool low_bit_linear_op::integer_product_fits(product_kind kind, const packed_kernel& w, bool transposed,
                                                     bool folded, const low_bit_format& input) {
  using P = product_kind;
  if (kind == P::simulated) return true;
  const quantization_grid& g = w.grid;
  if (folded || w.shape.size() != 2 || g.granularity() != grid_granularity::per_block) return false;
  const int axis = g.channel_axis < 0 ? g.channel_axis + 2 : g.channel_axis;
  if (axis != (transposed ? 1 : 0)) return false;
  const bool fp4 = g.element == grid_element::fp4_e2m1;
  if (!fp4 && (g.element != grid_element::integer || !g.symmetric() || !g.offset.empty() || g.qmin < -128 ||
               g.qmax > 127))
    return false;
  const std::size_t granule = fp4 || g.num_bits <= 4 ? 8 : 4;
  if (g.block_size % granule || g.block_size > packed_block_scaled_matrix::max_block) return false;
  switch (kind) {
    case P::static_int8: return !input;
    case P::per_token_int8: {
      const auto* t = input.get_if<low_bit::intx_spec>();
      return t && t->scheme == low_bit::intx_scheme::intx_per_token && t->bits == 8 && t->axis == -1;
    }
    case P::fp4_blocks: {
      if (!fp4) return false;
      if (const auto* m = input.get_if<low_bit::mx_spec>())
        return !m->element.int8 && m->element.type == low_bit::element_type::e2m1 && m->axis == -1 &&
               std::size_t(m->block_size) == g.block_size;
      if (const auto* v = input.get_if<low_bit::nvfp4_spec>())
        return !v->tiles_16x16 && v->axis == -1 && g.block_size == 16;
      return false;
    }
    case P::simulated: break;
  }
  return true;
}

XQ_DECL engine_tensor low_bit_linear_op::integer_product(const engine_tensor& x, const run_options& o) const {
  using P = product_kind;
  std::size_t k = 0, n = 0;
  detail::dense_extents(weights, product.transposed, k, n);
  const std::size_t m = x.elements() / k, blocks = packed_.blocks();
  std::vector<std::uint8_t> a(m * k);
  std::vector<std::int32_t> za(m);
  std::vector<float> sa;
  block_scaled_activations acts;
  acts.codes = a.data();
  acts.ld = k;
  acts.zero_points = za.data();
  if (product_mode == P::static_int8) {  // the integers on the input's grid: a = q + 128
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::uint8_t(x.integer[i] + x.zero_point + 128);
    std::fill(za.begin(), za.end(), x.zero_point + 128);
    sa.assign(m, x.scale);
    acts.scale_block_stride = 0;
  } else {
    // The input's codes and scales as the simulation's quantizer computes them.
    tensor t = tensor::from_shape(tensor::shape_type(x.shape.begin(), x.shape.end()));
    std::copy(x.real.begin(), x.real.end(), t.data());
    tensor fq;
    const quantization_grid g = xq::detail::format_grid(activation, t, path, &fq);
    if (product_mode == P::per_token_int8) {
      const std::vector<std::int32_t> q = quantize_on_grid(g, t, path);
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::uint8_t(q[i] + 128);
      for (std::size_t i = 0; i < m; ++i) za[i] = g.zero_point[i] + 128;
      sa.assign(g.scale.begin(), g.scale.end());
      acts.scale_block_stride = 0;
    } else {  // FP4 codes as 2v + 12, the product's 4x folded into the scale
      std::fill(za.begin(), za.end(), 12);
      sa.resize(m * blocks);
      const bool one_scale = g.granularity() == grid_granularity::per_tensor;  // a one-block tensor
      const std::size_t block = packed_.block();
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t b = 0; b < blocks; ++b) {
          const float s = g.scale[one_scale ? 0 : i * blocks + b];
          const float scale = g.tensor_scale ? s * *g.tensor_scale : s;  // the value's one rounding
          sa[i * blocks + b] = scale * 0.25f;
          // fq = v · scale rounded once, so 2 fq / scale is within far less than 1/2 of the
          // integer 2v: rint gives it back (an MX scale, a power of two: exactly).
          const float inv = 2.0f / scale;
          const std::size_t end = std::min(k, (b + 1) * block);
          for (std::size_t c = b * block; c < end; ++c)
            a[i * k + c] = std::uint8_t(std::int32_t(std::nearbyint(fq.data()[i * k + c] * inv)) + 12);
        }
      acts.scale_row_stride = blocks;
      acts.scale_block_stride = 1;
    }
  }
  acts.scales = sa.data();
  engine_tensor out;
  out.shape = x.shape;
  out.shape.back() = n;
  out.real.resize(m * n);
  if (o.reference_kernels) {  // the oracle, on the unpacked operands
    const std::vector<std::int8_t> w = packed_.unpack();
    std::vector<float> sb(blocks * n);
    for (std::size_t b = 0; b < blocks; ++b)
      for (std::size_t j = 0; j < n; ++j) sb[b * n + j] = packed_.scale(b, j);
    block_scaled_gemm_reference(m, n, k, packed_.block(), acts, w.data(), sb.data(), out.real.data());
  } else {
    block_scaled_gemm(m, acts, packed_, out.real.data());
  }
  if (product.has_bias)
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) out.real[i * n + j] += product.bias.data()[j];
  return out;
}

// ---- low_bit_linear_op ------------------------------------------------------------------

XQ_DECL void low_bit_linear_op::prepare() {
  product.path = path;
  if (product_mode != product_kind::simulated) {
    packed_ = detail::integer_operands(weights, product.transposed);
    product.kernel = tensor::from_shape({0});
    return;
  }
  // The simulation's division of a folded kernel's channels.
  product.kernel = ops::divide_channels(weights.decode(), fold_divisor, path);
}

XQ_DECL void low_bit_linear_op::run(std::vector<engine_tensor>& values, const run_options& o) const {
  const engine_tensor& x = values.at(inputs.at(0));
  engine_tensor out = product_mode == product_kind::simulated ? product.compute(x, o) : integer_product(x, o);
  values[output] = std::move(out);
}

XQ_DECL std::string low_bit_linear_op::describe() const {
  std::ostringstream s;
  s << kind() << " kernel " << xq::detail::shape_string(tensor::shape_type(weights.shape.begin(), weights.shape.end()))
    << " " << xq::describe(weights.grid) << ", " << weights.bits_per_value() << " bits per weight"
    << (product.has_bias ? " + bias" : "") << (fold_divisor.empty() ? "" : ", batch norm folded");
  static const char* const products[] = {"float product of the decoded kernel", "integer product, per-token int8 input",
                                         "integer product, FP4 input blocks", "integer product, int8 input"};
  s << "; " << products[int(product_mode)];
  if (activation) s << " (" << xq::describe(activation) << ")";
  return s.str();
}

XQ_DECL engine_tensor low_bit_linear_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  if (product_mode != product_kind::simulated) {
    if (!integer_product_fits(product_mode, weights, product.transposed, !fold_divisor.empty(), activation) ||
        !product.dense || packed_.rows() == 0)
      refuse("an integer product its kernel and input fit (a prepared dense op)", describe());
    const engine_tensor& x = expect_one(in, product_mode == product_kind::static_int8 ? value_kind::integer : value_kind::real);
    const std::size_t k = packed_.rows(), n = packed_.cols();
    if (x.shape.size() < 2 || x.shape.back() != k)
      refuse(xq::detail::concat("a tensor with ", k, " features on the last axis"), detail::tensor_string(x));
    if (product_mode == product_kind::static_int8 && (x.qmin < -128 || x.qmax > 127 || x.zero_point < -128 || x.zero_point > 127))
      refuse("an int8 grid", detail::tensor_string(x));
    if (product.has_bias && product.bias.size() != n) refuse(xq::detail::concat("a bias of ", n, " values"), "another");
    std::vector<std::size_t> shape = x.shape;
    shape.back() = n;
    work = detail::saturating_product(detail::element_count(shape), k);
    return detail::value_of(value_kind::real, shape);
  }
  if (product.kernel.size() != weights.elements()) refuse("a prepared op (its kernel decoded)", "none");
  if (!fold_divisor.empty() && fold_divisor.size() != weights.shape.back())
    refuse(xq::detail::concat(weights.shape.back(), " fold divisors"), xq::detail::concat(fold_divisor.size()));
  return product.infer(in, work);
}

XQ_DECL void low_bit_linear_op::encode(op_writer& w) const {
  w.map("kernel", [&](op_writer& m) { detail::encode_packed(m, weights); });
  w.integer("product", std::int64_t(product_mode));
  if (activation) w.map("activation", [&](op_writer& m) { detail::encode_format(m, activation); });
  if (!fold_divisor.empty()) w.numbers("fold_divisor", fold_divisor);
  product.encode_geometry(w);
}

XQ_DECL std::size_t low_bit_linear_op::weight_bytes() const noexcept {
  return weights.stored_bytes() + (product.has_bias ? product.bias.size() * 4 : 0) + fold_divisor.size() * 4;
}

XQ_DECL std::unique_ptr<lowered_op> low_bit_linear_op::decode(const std::string& kind, const op_reader& r) {
  auto op = std::make_unique<low_bit_linear_op>();
  op->product.dense = kind == "low_bit_dense";
  op->weights = detail::decode_packed(*r.map("kernel"));
  op->product_mode = static_cast<product_kind>(r.integer("product", 0, 3));
  if (r.has("activation")) op->activation = detail::decode_format(*r.map("activation"));
  if (r.has("fold_divisor")) {
    op->fold_divisor = r.numbers<float>("fold_divisor");
    const std::size_t channels = op->weights.shape.back();
    if (op->fold_divisor.size() != channels)
      r.fail(xq::detail::concat("fold_divisor: expected ", channels, " values, given ", op->fold_divisor.size()));
    for (float d : op->fold_divisor)
      if (!std::isfinite(d) || d == 0.0f) r.fail("fold_divisor: expected finite nonzero divisors");
  }
  op->product.decode_geometry(r);
  if (op->weights.shape.size() != (op->product.dense ? 2u : 4u))
    r.fail(op->product.dense ? "kernel: expected rank 2" : "kernel: expected rank 4");
  if (op->product_mode != product_kind::simulated &&
      (!op->product.dense || !integer_product_fits(op->product_mode, op->weights, op->product.transposed,
                                                   !op->fold_divisor.empty(), op->activation)))
    r.fail("product: an integer product that its kernel and input format do not fit");
  op->prepare();
  return op;
}

}  // namespace xq::deploy
