#pragma once
/// \file quantization_grid.ipp
/// quantization_grid's code (quantizers/quantization_grid.hpp).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../../kernels/channel_layout.hpp"
#include "../quantization_grid.hpp"

namespace xq {

XQ_DECL quantization_grid sign_grid() {
  quantization_grid g;
  g.element = grid_element::binary;
  g.num_bits = 1;
  g.qmin = -1;
  g.qmax = 1;
  g.scale = {1.0f};
  g.zero_point = {0};
  g.rounding.op = rounding_operator::sign;
  return g;
}

XQ_DECL bool quantization_grid::symmetric() const noexcept {
  for (std::int32_t z : zero_point)
    if (z != 0) return false;
  return true;
}

namespace detail::grid {

constexpr const char* element_names[] = {"integer", "binary", "fp8_e4m3fn", "fp8_e5m2", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1"};
constexpr const char* scale_names[] = {"float32", "e8m0", "ue4m3"};
constexpr const char* rounding_names[] = {"quantize_linear", "tf_qdq", "tf_fake_quant", "torch_affine",
                                          "torch_affine_float_zero_point", "lsq", "dorefa_activations",
                                          "dorefa_weights", "sign", "heaviside", "ternary",
                                          "torchao_int4_weight_only"};

/// A float element format: exponent and mantissa bits, bias, and its special codes.
struct float_format {
  int exponent_bits, mantissa_bits, bias;
  bool ieee_specials;  ///< E5M2: the top exponent is infinity / NaN
  bool fn_nan;         ///< E4M3FN: S.1111.111 is NaN, every other code finite
};

inline float_format format_of(grid_element e) noexcept {
  switch (e) {
    case grid_element::fp8_e4m3fn: return {4, 3, 7, false, true};
    case grid_element::fp8_e5m2: return {5, 2, 15, true, false};
    case grid_element::fp6_e3m2: return {3, 2, 3, false, false};
    case grid_element::fp6_e2m3: return {2, 3, 1, false, false};
    case grid_element::fp4_e2m1: return {2, 1, 1, false, false};
    case grid_element::integer:
    case grid_element::binary: break;
  }
  return {0, 0, 0, false, false};
}

inline std::string where_at(const std::string& where, const char* what) { return where + " (" + what + ")"; }

}  // namespace detail::grid

XQ_DECL const char* to_string(grid_element e) noexcept {
  const auto i = static_cast<std::size_t>(e);
  return i < std::size(detail::grid::element_names) ? detail::grid::element_names[i] : "?";
}

XQ_DECL const char* to_string(scale_element e) noexcept {
  const auto i = static_cast<std::size_t>(e);
  return i < std::size(detail::grid::scale_names) ? detail::grid::scale_names[i] : "?";
}

XQ_DECL const char* to_string(rounding_operator r) noexcept {
  const auto i = static_cast<std::size_t>(r);
  return i < std::size(detail::grid::rounding_names) ? detail::grid::rounding_names[i] : "?";
}

XQ_DECL std::optional<grid_element> grid_element_from_string(const std::string& name) noexcept {
  for (std::size_t i = 0; i < std::size(detail::grid::element_names); ++i)
    if (name == detail::grid::element_names[i]) return static_cast<grid_element>(i);
  return std::nullopt;
}

XQ_DECL std::optional<scale_element> scale_element_from_string(const std::string& name) noexcept {
  for (std::size_t i = 0; i < std::size(detail::grid::scale_names); ++i)
    if (name == detail::grid::scale_names[i]) return static_cast<scale_element>(i);
  return std::nullopt;
}

XQ_DECL std::optional<rounding_operator> rounding_operator_from_string(const std::string& name) noexcept {
  for (std::size_t i = 0; i < std::size(detail::grid::rounding_names); ++i)
    if (name == detail::grid::rounding_names[i]) return static_cast<rounding_operator>(i);
  return std::nullopt;
}

XQ_DECL int element_bits(grid_element e) noexcept {
  const detail::grid::float_format f = detail::grid::format_of(e);
  return f.exponent_bits ? 1 + f.exponent_bits + f.mantissa_bits : 0;
}

XQ_DECL float element_value(grid_element e, std::uint32_t code) noexcept {
  const detail::grid::float_format f = detail::grid::format_of(e);
  if (!f.exponent_bits) return std::numeric_limits<float>::quiet_NaN();
  const int bits = 1 + f.exponent_bits + f.mantissa_bits;
  code &= (1u << bits) - 1u;
  const bool negative = (code >> (bits - 1)) & 1u;
  const std::uint32_t exponent = (code >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1u);
  const std::uint32_t mantissa = code & ((1u << f.mantissa_bits) - 1u);
  const std::uint32_t top = (1u << f.exponent_bits) - 1u;
  float v;
  if (f.fn_nan && exponent == top && mantissa == (1u << f.mantissa_bits) - 1u) {
    v = std::numeric_limits<float>::quiet_NaN();
  } else if (f.ieee_specials && exponent == top) {
    v = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else if (exponent == 0) {  // subnormal: m / 2^M * 2^(1 - bias)
    v = std::ldexp(float(mantissa), 1 - f.bias - f.mantissa_bits);
  } else {
    v = std::ldexp(float((1u << f.mantissa_bits) + mantissa), int(exponent) - f.bias - f.mantissa_bits);
  }
  return negative ? -v : v;
}

XQ_DECL std::optional<std::uint32_t> element_code(grid_element e, double value) noexcept {
  const int bits = element_bits(e);
  if (!bits || std::isnan(value)) return std::nullopt;
  for (std::uint32_t code = 0; code < (1u << bits); ++code) {
    const float v = element_value(e, code);
    if (double(v) == value && std::signbit(v) == std::signbit(value)) return code;
  }
  return std::nullopt;
}

XQ_DECL bool representable_scale(scale_element scale_type, float s) noexcept {
  if (!std::isfinite(s) || !(s > 0.0f)) return false;
  switch (scale_type) {
    case scale_element::float32: return true;
    case scale_element::e8m0: {
      int e = 0;
      const float m = std::frexp(s, &e);  // s = m * 2^e, m in [0.5, 1)
      return m == 0.5f && e - 1 >= -127 && e - 1 <= 127;
    }
    case scale_element::ue4m3: return element_code(grid_element::fp8_e4m3fn, double(s)).has_value();
  }
  return false;
}

XQ_DECL void check_grid(const quantization_grid& g, const std::string& where) {
  using xq::detail::concat;
  const std::string& w = where;
  if (!to_string(g.element)[0] || to_string(g.element)[0] == '?')
    throw argument_error(w, "a known element type", concat("element ", int(g.element)));
  if (to_string(g.scale_type)[0] == '?') throw argument_error(w, "a known scale type", concat("scale type ", int(g.scale_type)));
  if (to_string(g.rounding.op)[0] == '?')
    throw argument_error(w, "a known rounding operator", concat("operator ", int(g.rounding.op)));
  if (g.scale.empty()) throw argument_error(w, "at least one scale", "none");
  if (g.per_channel && g.block_size)
    throw argument_error(w, "per channel or per block, not both", concat("per channel with blocks of ", g.block_size));
  if (g.block_size > (std::size_t(1) << 20))
    throw argument_error(w, "a block of at most 2^20 elements", concat(g.block_size));
  if (g.channel_axis < -32 || g.channel_axis > 31)
    throw argument_error(w, "an axis from -32 to 31", concat(g.channel_axis));
  if (g.granularity() == grid_granularity::per_tensor && g.scale.size() != 1)
    throw argument_error(w, "one scale (per tensor)", concat(g.scale.size(), " scales"));
  const bool binary = g.element == grid_element::binary;
  for (std::size_t i = 0; i < g.scale.size(); ++i) {
    const float s = g.scale[i];
    const bool ok = binary ? std::isfinite(s) && s >= 0.0f && (s == 0.0f || representable_scale(g.scale_type, s))
                           : representable_scale(g.scale_type, s);
    if (!ok)
      throw argument_error(w, concat(binary ? "finite scales >= 0" : "finite positive scales", " (", to_string(g.scale_type), ")"),
                           concat("scale[", i, "] = ", s));
  }
  if (g.tensor_scale && !(std::isfinite(*g.tensor_scale) && *g.tensor_scale > 0.0f))
    throw argument_error(w, "a finite positive tensor scale", concat(*g.tensor_scale));
  if (!g.offset.empty()) {
    if (g.element != grid_element::integer || g.offset.size() != g.scale.size())
      throw argument_error(w, "offsets on an integer grid, one per scale",
                           concat(g.offset.size(), " on ", to_string(g.element), " with ", g.scale.size(), " scales"));
    for (std::size_t i = 0; i < g.offset.size(); ++i)
      if (!std::isfinite(g.offset[i])) throw argument_error(w, "finite offsets", concat("offset[", i, "] = ", g.offset[i]));
  }
  if (is_float_element(g.element)) {
    if (g.num_bits != element_bits(g.element))
      throw argument_error(w, concat(element_bits(g.element), " bits (", to_string(g.element), ")"), concat(g.num_bits));
    if (!g.zero_point.empty() && g.zero_point.size() != g.scale.size())
      throw argument_error(w, "no zero points or one per scale", concat(g.zero_point.size(), " for ", g.scale.size(), " scales"));
    for (std::int32_t z : g.zero_point)
      if (z != 0) throw argument_error(w, "zero points 0 (float elements)", concat(z));
  } else {
    if (g.zero_point.size() != g.scale.size())
      throw argument_error(w, "one zero point per scale", concat(g.zero_point.size(), " for ", g.scale.size(), " scales"));
    if (g.qmin > g.qmax) throw argument_error(w, "qmin <= qmax", concat("[", g.qmin, ", ", g.qmax, "]"));
    if (binary) {
      if (g.qmin != -1 || g.qmax != 1 || g.num_bits != 1)
        throw argument_error(w, "a binary grid: [-1, 1], 1 bit", concat("[", g.qmin, ", ", g.qmax, "], ", g.num_bits, " bits"));
      for (std::int32_t z : g.zero_point)
        if (z != 0) throw argument_error(w, "zero points 0 (a binary grid)", concat(z));
    } else {
      if (g.num_bits < 1 || g.num_bits > 32) throw argument_error(w, "1 to 32 bits", concat(g.num_bits));
      const std::int64_t levels = std::int64_t(g.qmax) - std::int64_t(g.qmin) + 1;
      if (g.num_bits < 32 && levels > (std::int64_t(1) << g.num_bits))
        throw argument_error(w, concat("at most 2^", g.num_bits, " integers"), concat("[", g.qmin, ", ", g.qmax, "]"));
      for (std::size_t i = 0; i < g.zero_point.size(); ++i)
        if (g.zero_point[i] < g.qmin || g.zero_point[i] > g.qmax)
          throw argument_error(w, concat("zero points in [", g.qmin, ", ", g.qmax, "]"),
                               concat("zero_point[", i, "] = ", g.zero_point[i]));
    }
  }
  // The rounding rule against the grid.
  const rounding_rule& r = g.rounding;
  const std::string rw = detail::grid::where_at(w, to_string(r.op));
  auto need = [&](bool ok, const std::string& expected, const std::string& given) {
    if (!ok) throw argument_error(rw, expected, given);
  };
  const bool integer = g.element == grid_element::integer;
  const std::size_t n = g.scale.size();
  auto finite_all = [](const std::vector<float>& v) {
    for (float x : v)
      if (!std::isfinite(x)) return false;
    return true;
  };
  switch (r.op) {
    case rounding_operator::quantize_linear:  // any element (ONNX's QuantizeLinear has float8 outputs too)
      need(!binary, "an integer or float element (a binary grid rounds by sign)", describe(g));
      break;
    case rounding_operator::tf_qdq:
    case rounding_operator::tf_fake_quant: {
      need(integer && g.block_size == 0, "an integer grid per tensor or per channel", describe(g));
      need(r.range_min.size() == n && r.range_max.size() == n, concat("a range per scale (", n, ")"),
           concat(r.range_min.size(), " minima and ", r.range_max.size(), " maxima"));
      need(finite_all(r.range_min) && finite_all(r.range_max), "finite ranges", "a non-finite one");
      for (std::size_t i = 0; i < n; ++i)
        need(r.range_min[i] <= r.range_max[i], "min <= max", concat("[", r.range_min[i], ", ", r.range_max[i], "] at ", i));
      if (r.op == rounding_operator::tf_fake_quant) {
        need(!g.per_channel || g.channel_axis == -1, "the last axis (FakeQuantWithMinMaxVarsPerChannel)",
             concat("axis ", g.channel_axis));
        need(g.num_bits >= 2 && g.num_bits <= 16 && (g.qmin == 0 || g.qmin == 1) && g.qmax == (1 << g.num_bits) - 1,
             "FakeQuant's grid [0 or 1, 2^bits - 1] of 2 to 16 bits", concat("[", g.qmin, ", ", g.qmax, "], ", g.num_bits, " bits"));
      } else {
        const bool is_signed = g.qmin < 0;
        const std::int64_t top = is_signed ? (std::int64_t(1) << (g.num_bits - 1)) - 1 : (std::int64_t(1) << g.num_bits) - 1;
        need(g.num_bits >= 2 && g.num_bits <= 31 && g.qmax == top &&
                 (is_signed ? (g.qmin == -top || g.qmin == -top - 1) : g.qmin == 0),
             "QDQ's grid of 2 to 31 bits", concat("[", g.qmin, ", ", g.qmax, "], ", g.num_bits, " bits"));
        for (std::int32_t z : g.zero_point) need(z == 0, "zero points 0 (TF's QDQ)", concat(z));
      }
      break;
    }
    case rounding_operator::torch_affine:  // per block: torchao's groups and tokens
      need(integer, "an integer grid", describe(g));
      break;
    case rounding_operator::torch_affine_float_zero_point:
      need(integer && g.per_channel, "an integer grid per channel", describe(g));
      need(r.float_zero_point.size() == n && finite_all(r.float_zero_point), concat("a finite float zero point per scale (", n, ")"),
           concat(r.float_zero_point.size()));
      need(g.qmin >= -(1 << 24) && g.qmax <= (1 << 24), "a range of at most 2^24 levels each side", concat("[", g.qmin, ", ", g.qmax, "]"));
      break;
    case rounding_operator::lsq:
      need(integer && g.granularity() == grid_granularity::per_tensor && g.num_bits <= 16, "an integer grid per tensor of at most 16 bits",
           describe(g));
      need(r.float_zero_point.size() == 1 && finite_all(r.float_zero_point), "one finite float zero point",
           concat(r.float_zero_point.size()));
      need(g.qmin <= 0 && g.qmax >= 0, "qmin <= 0 <= qmax", concat("[", g.qmin, ", ", g.qmax, "]"));
      break;
    case rounding_operator::dorefa_activations:
      need(integer && g.qmin == 0 && g.qmax >= 1 && g.qmax <= (1 << 24) - 1 && g.symmetric(),
           "DoReFa's grid [0, n] with n < 2^24, zero point 0", describe(g));
      break;
    case rounding_operator::dorefa_weights:
      need(integer && g.qmax >= 1 && g.qmax <= (1 << 24) - 1 && g.qmin == -g.qmax && g.symmetric(),
           "DoReFa's weight grid [-n, n] with n < 2^24, zero point 0", describe(g));
      need(std::isfinite(r.two_max) && r.two_max >= 0.0f, "a finite two_max >= 0", concat(r.two_max));
      break;
    case rounding_operator::sign: need(binary, "a binary grid", describe(g)); break;
    case rounding_operator::heaviside:
      need(integer && g.qmin == 0 && g.qmax == 1 && g.symmetric(), "the grid {0, 1}", describe(g));
      break;
    case rounding_operator::ternary:
      need(integer && g.qmin == -1 && g.qmax == 1 && g.symmetric(), "the grid {-1, 0, 1}", describe(g));
      need(std::isfinite(r.threshold) && r.threshold >= 0.0f, "a finite threshold >= 0", concat(r.threshold));
      break;
    case rounding_operator::torchao_int4_weight_only: {
      bool eights = true;
      for (std::int32_t z : g.zero_point) eights = eights && z == 8;
      need(integer && g.qmin == 0 && g.qmax == 15 && g.num_bits == 4 && eights && g.offset.size() == n,
           "int4 weight-only's grid: [0, 15], zero points 8, an offset per scale", describe(g));
      // No minima: a stored kernel, which never rounds again (quantize_on_grid refuses it).
      need((r.range_min.empty() || r.range_min.size() == n) && finite_all(r.range_min),
           concat("a finite group min per scale (", n, "), or none"), concat(r.range_min.size()));
      break;
    }
  }
  if (!g.offset.empty() && r.op != rounding_operator::torchao_int4_weight_only)
    throw argument_error(rw, "no offsets (only torchao_int4_weight_only's grid has them)", concat(g.offset.size(), " offsets"));
}

XQ_DECL std::size_t grid_scale_count(const quantization_grid& g, const std::vector<std::size_t>& shape,
                                     const std::string& where) {
  if (g.granularity() == grid_granularity::per_tensor) return 1;
  const auto l = kernels::channel_layout::of(shape, g.channel_axis, where.c_str());
  if (g.granularity() == grid_granularity::per_channel) return l.channels;
  return l.outer * ((l.channels + g.block_size - 1) / g.block_size) * l.inner;
}

XQ_DECL void check_grid_for(const quantization_grid& g, const std::vector<std::size_t>& shape, const std::string& where) {
  check_grid(g, where);
  const std::size_t n = grid_scale_count(g, shape, where);
  if (n != g.scale.size())
    throw argument_error(where, xq::detail::concat(g.scale.size(), " scales (the quantizer's grid)"),
                         xq::detail::concat(n, " for a tensor of shape ", xq::detail::shape_string(shape)));
}

XQ_DECL std::vector<std::int32_t> grid_integers(const quantization_grid& g, const tensor& fq, const std::string& where) {
  const std::vector<std::size_t> shape(fq.shape().begin(), fq.shape().end());
  check_grid_for(g, shape, where);
  const kernels::channel_layout l = g.granularity() == grid_granularity::per_tensor
                                        ? kernels::channel_layout{1, fq.size(), 1}
                                        : kernels::channel_layout::of(shape, g.channel_axis, where.c_str());
  std::vector<std::int32_t> q(fq.size());
  const float* v = fq.data();
  const bool float_zero_point = g.rounding.op == rounding_operator::torch_affine_float_zero_point;
  const double tensor_scale = g.tensor_scale ? double(*g.tensor_scale) : 1.0;
  auto off_grid = [&](std::size_t i, double steps) {
    return argument_error(where, xq::detail::concat("a value on the grid ", describe(g)),
                          xq::detail::concat(v[i], " at index ", i, " (", steps, " steps from zero)"));
  };
  detail::for_each_scale_run(g, l.outer, l.channels, l.inner, [&](std::size_t first, std::size_t count, std::size_t si,
                                                                  std::size_t step) {
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t i = first + k, c = si + k * step;
      const double s = double(g.scale[c]) * tensor_scale;
      if (is_float_element(g.element)) {
        const double e = s == 0.0 ? 0.0 : double(v[i]) / s;
        // The product value * scale rounded once to float: divided back, within a few ulps
        // of the element's value.
        std::optional<std::uint32_t> code = element_code(g.element, e);
        if (!code) {
          double best = std::numeric_limits<double>::infinity();
          for (std::uint32_t k2 = 0; k2 < (1u << element_bits(g.element)); ++k2) {
            const float ev = element_value(g.element, k2);
            if (!std::isfinite(ev) || std::signbit(ev) != std::signbit(e)) continue;
            const double d = std::fabs(double(ev) - e);
            if (d < best && d <= 1e-5 * std::max(1.0, std::fabs(e))) {
              best = d;
              code = k2;
            }
          }
        }
        if (!code) throw off_grid(i, e);
        q[i] = std::int32_t(*code);
        continue;
      }
      if (!g.offset.empty()) {
        // (q - zp) · scale + offset, rounded twice: the nearest integer of (v - offset) / scale
        // and its neighbours, the one whose two float roundings give v exactly.
        const float sf = g.scale[c], off = g.offset[c];
        const double t = (double(v[i]) - double(off)) / double(sf) + double(g.zero_point[c]);
        const double near = std::nearbyint(t);
        bool found = false;
        for (const double cand : {near, near - 1.0, near + 1.0}) {
          if (cand < g.qmin || cand > g.qmax) continue;
          if (float(float(cand - g.zero_point[c]) * sf) + off == v[i]) {
            q[i] = std::int32_t(cand);
            found = true;
            break;
          }
        }
        if (!found) throw off_grid(i, t);
        continue;
      }
      const double zp = float_zero_point ? double(g.rounding.float_zero_point[c]) : double(g.zero_point[c]);
      const double t = s == 0.0 ? 0.0 : double(v[i]) / s;
      const double r = std::nearbyint(float_zero_point ? t + zp : t);
      // A real on the grid divides to within a few ulps of an integer; anything else
      // was not produced by this quantizer.
      if (!(std::fabs((float_zero_point ? t + zp : t) - r) <= 1e-3)) throw off_grid(i, t);
      double integer = float_zero_point ? r : r + zp;
      if (g.element == grid_element::binary) {
        if (s == 0.0) integer = 1.0;  // every ±1 is 0 on a zero scale: Larq's sign(0) = +1
        if (integer != 1.0 && integer != -1.0) throw off_grid(i, t);
      }
      if (integer < g.qmin || integer > g.qmax) throw off_grid(i, t);
      q[i] = std::int32_t(integer);
    }
  });
  return q;
}

XQ_DECL std::string describe(const quantization_grid& g) {
  std::ostringstream s;
  if (g.element == grid_element::integer) s << (g.qmin < 0 ? "int" : "uint") << g.num_bits;  // int4, uint8, int16, ...
  else if (g.element == grid_element::binary) s << "binary ±1";
  else s << to_string(g.element);
  s << ' ';
  const bool float32 = g.scale_type == scale_element::float32;
  switch (g.granularity()) {
    case grid_granularity::per_tensor:
      if (!g.scale.empty()) {
        s << "per-tensor scale " << g.scale[0];
        if (!float32) s << " (" << to_string(g.scale_type) << ")";
        if (g.element == grid_element::integer && !g.zero_point.empty()) s << " zero point " << g.zero_point[0];
      }
      break;
    case grid_granularity::per_channel:
      s << "per-channel(axis " << g.channel_axis << ", " << g.channels() << (float32 ? "" : std::string(" ") + to_string(g.scale_type))
        << " scales)";
      break;
    case grid_granularity::per_block:
      s << "per-block(axis " << g.channel_axis << ", block " << g.block_size << ", " << g.channels()
        << (float32 ? "" : std::string(" ") + to_string(g.scale_type)) << " scales)";
      break;
  }
  if (g.element == grid_element::integer) s << " [" << g.qmin << ", " << g.qmax << "]";
  if (g.tensor_scale) s << " x tensor scale " << *g.tensor_scale;
  if (!g.offset.empty()) s << " + a float offset per scale";
  if (g.dynamic) s << " dynamic";
  return s.str();
}

}  // namespace xq
