#pragma once
/// \file low_bit_schemes.ipp
/// The peers' low-bit recipes as schemes (transform/low_bit_schemes.hpp).

#include <string>

#include "../../core/error.hpp"
#include "../../quantizers/low_bit_format.hpp"

#include "../low_bit_schemes.hpp"

namespace xq {

namespace detail {

/// NVIDIA's placement with `weight` on the kernels and `input` on the inputs (none: weight
/// only); the pools' inputs off where the inputs are low-bit. A layer the format does not
/// fit keeps NVIDIA's int8 grid (per-channel weights: the format ignores per_channel).
inline quantization_scheme low_bit_scheme(std::string name, low_bit_format weight, low_bit_format input,
                                          bool quantize_inputs) {
  quantization_scheme s = schemes::nvidia();
  s.name = std::move(name);
  s.weight.format = std::move(weight);
  s.input.format = std::move(input);
  for (auto& [type, d] : s.layers) {
    (void)type;
    if (!quantize_inputs || s.input.format) {
      if (!d.quantize_weight) d.enabled_by_default = false;  // pools, merges: the peers leave them
      if (!quantize_inputs) d.quantize_input = false;
    }
  }
  if (!quantize_inputs) s.unlisted_weighted.quantize_input = false;
  if (!quantize_inputs || s.input.format) s.unlisted_weightless.enabled_by_default = false;
  return s;
}

inline low_bit::intx_spec int_groups(int bits, int group_size) {
  low_bit::intx_spec w;
  w.scheme = low_bit::intx_scheme::intx_symmetric;
  w.bits = bits;
  w.group_size = group_size;
  return w;
}

}  // namespace detail

namespace schemes {

XQ_DECL quantization_scheme torchao_8da4w(int group_size) {
  low_bit::intx_spec a;
  a.scheme = low_bit::intx_scheme::intx_per_token;
  a.bits = 8;
  return detail::low_bit_scheme("torchao_8da4w", detail::int_groups(4, group_size), a, true);
}

XQ_DECL quantization_scheme torchao_intx_weight_only(int bits, int group_size) {
  return detail::low_bit_scheme("torchao_intx_weight_only", detail::int_groups(bits, group_size), {}, false);
}

XQ_DECL quantization_scheme torchao_int4_weight_only(int group_size) {
  low_bit::intx_spec w;
  w.scheme = low_bit::intx_scheme::int4_weight_only;
  w.group_size = group_size;
  return detail::low_bit_scheme("torchao_int4_weight_only", w, {}, false);
}

XQ_DECL quantization_scheme torchao_float8_dynamic(low_bit::fp8_granularity granularity) {
  low_bit::fp8_spec f;
  f.granularity = granularity;
  return detail::low_bit_scheme("torchao_float8_dynamic", f, f, true);
}

XQ_DECL quantization_scheme mx(low_bit::element_type weight, low_bit::element_type input) {
  low_bit::mx_spec w, a;
  w.element.type = weight;
  a.element.type = input;
  return detail::low_bit_scheme("mx", w, a, true);
}

XQ_DECL quantization_scheme mx_weight_only(low_bit::element_type weight) {
  low_bit::mx_spec w;
  w.element.type = weight;
  return detail::low_bit_scheme("mx_weight_only", w, {}, false);
}

XQ_DECL quantization_scheme nvfp4(bool one_level) {
  low_bit::nvfp4_spec f;
  f.variant = one_level ? low_bit::nvfp4_variant::torchao_one_level : low_bit::nvfp4_variant::torchao;
  return detail::low_bit_scheme("nvfp4", f, f, true);
}

XQ_DECL quantization_scheme nvfp4_weight_only() {
  return detail::low_bit_scheme("nvfp4_weight_only", low_bit::nvfp4_spec{}, {}, false);
}

XQ_DECL quantization_scheme w4a8(int group_size) {
  return detail::low_bit_scheme("w4a8", detail::int_groups(4, group_size), {}, true);
}

XQ_DECL quantization_scheme with_range_learning(quantization_scheme s) {
  const auto* w = s.weight.format.get_if<low_bit::intx_spec>();
  if (!w || w->scheme != low_bit::intx_scheme::intx_symmetric)
    throw argument_error("xq::schemes::with_range_learning", "a scheme with symmetric integer weight groups",
                         s.name + " (" + (s.weight.format ? describe(s.weight.format) : std::string("an integer grid")) + ")");
  s.weight.format.intx.range_learning = true;
  s.name += "+range_learning";
  return s;
}

}  // namespace schemes
}  // namespace xq
