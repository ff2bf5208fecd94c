#pragma once
/// \file mx_quantizer.ipp
/// mx_quantizer's code (quantizers/mx_quantizer.hpp).

#include <algorithm>
#include <string>
#include <vector>

#include "../mx_quantizer.hpp"

namespace xq {

XQ_DECL mx_quantizer::mx_quantizer(low_bit::mx_spec spec)
    : low_bit_quantizer<mx_quantizer>("mx_quantizer", {"scale"}), spec_(spec) {
  low_bit::validate(spec_, std::size_t(spec_.axis < 0 ? -spec_.axis : spec_.axis + 1), "xq::mx_quantizer");
}

XQ_DECL int mx_quantizer::precision() const {
  return spec_.element.int8 ? 8 : low_bit::info(spec_.element.type).bits;
}

XQ_DECL std::string mx_quantizer::describe() const {
  return detail::concat("mx_quantizer(", low_bit::describe(spec_), ")");
}

XQ_DECL tensor mx_quantizer::forward_observing(const spec_type& s, const tensor& x, low_bit_state& state, bool* mask,
                                               const std::string& where) {
  (void)mask;  // the identity gradient needs none
  std::vector<float> scales;
  tensor y = low_bit::mx_quantize_dequantize<default_policy>(x, s, where, &scales);
  const std::size_t L = kernels::channel_layout::of(x.shape(), s.axis, where.c_str()).channels;
  tensor st = tensor::from_shape(low_bit_state_shape(x.shape(), s.axis, (L + s.block_size - 1) / s.block_size));
  std::copy(scales.begin(), scales.end(), st.begin());
  state.assign(1, std::move(st));
  return y;
}

XQ_DECL tensor mx_quantizer::forward_with(const spec_type& s, const tensor& x, const low_bit_state& state, bool* mask,
                                          const std::string& where) {
  (void)mask;
  const std::vector<float> scales(state.at(0).begin(), state.at(0).end());
  return low_bit::mx_apply<default_policy>(x, s, scales, where);
}

XQ_DECL quantization_grid mx_quantizer::grid(const spec_type& s, const tensor::shape_type& shape,
                                             const low_bit_state& state, const std::string& where) {
  if (s.element.int8)
    throw argument_error(where, "an MX float element (fp8, fp6, fp4) for deployment", "microxcaling's MXINT8");
  const tensor& scales = state.at(0);
  quantization_grid g = detail::blocked_grid(detail::grid_element_of(s.element.type, where),
                                             low_bit::info(s.element.type).bits, shape, s.axis,
                                             std::size_t(s.block_size), std::vector<float>(scales.begin(), scales.end()),
                                             where);
  g.scale_type = scale_element::e8m0;  // every MX scale is 2^e
  return g;
}

}  // namespace xq
