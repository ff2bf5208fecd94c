#pragma once
/// \file fp8_quantizer.ipp
/// fp8_quantizer's code (quantizers/fp8_quantizer.hpp).

#include <algorithm>
#include <string>

#include "../fp8_quantizer.hpp"

namespace xq {

XQ_DECL fp8_quantizer::fp8_quantizer(low_bit::fp8_spec spec)
    : low_bit_quantizer<fp8_quantizer>("fp8_quantizer", {"amax"}), spec_(spec) {
  low_bit::to_string(spec_.variant);
  if (spec_.element != low_bit::element_type::e4m3fn && spec_.element != low_bit::element_type::e5m2)
    throw argument_error("xq::fp8_quantizer", "an FP8 element: fp8_e4m3fn or fp8_e5m2",
                         low_bit::to_string(spec_.element));
}

XQ_DECL std::string fp8_quantizer::describe() const {
  return detail::concat("fp8_quantizer(", low_bit::describe(spec_), ")");
}

XQ_DECL tensor fp8_quantizer::forward_observing(const spec_type& s, const tensor& x, low_bit_state& state, bool* mask,
                                                const std::string& where) {
  (void)mask;
  low_bit::fp8_state st;
  tensor y = low_bit::fp8_quantize_dequantize<default_policy>(x, s, where, &st);
  tensor amax = s.granularity == low_bit::fp8_granularity::per_tensor
                    ? tensor::from_shape({1})
                    : tensor::from_shape(low_bit_state_shape(x.shape(), s.axis, 1));
  std::copy(st.amax.begin(), st.amax.end(), amax.begin());
  state.assign(1, std::move(amax));
  return y;
}

XQ_DECL tensor fp8_quantizer::forward_with(const spec_type& s, const tensor& x, const low_bit_state& state, bool* mask,
                                           const std::string& where) {
  (void)mask;
  low_bit::fp8_state st;
  st.amax.assign(state.at(0).begin(), state.at(0).end());
  return low_bit::fp8_apply<default_policy>(x, s, st, where);
}

XQ_DECL tensor fp8_quantizer::input_gradient(const spec_type& s, const tensor& x, const tensor& dy,
                                             const low_bit_state& state, const bool* mask) {
  (void)mask;
  low_bit::fp8_state st;
  st.amax.assign(state.at(0).begin(), state.at(0).end());
  return low_bit::fp8_backward<default_policy>(x, dy, s, st);
}

XQ_DECL quantization_grid fp8_quantizer::grid(const spec_type& s, const tensor::shape_type& shape,
                                              const low_bit_state& state, const std::string& where) {
  low_bit::fp8_state st;
  st.amax.assign(state.at(0).begin(), state.at(0).end());
  const long rank = long(shape.size());
  const long axis = s.axis < 0 ? s.axis + rank : s.axis;
  const std::size_t row = axis >= 0 && axis < rank ? shape[std::size_t(axis)] : 1;
  return detail::blocked_grid(detail::grid_element_of(s.element, where), 8, shape, s.axis, row,
                              low_bit::fp8_scales(s, st), where);
}

}  // namespace xq
