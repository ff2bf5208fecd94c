#pragma once
/// \file intx_quantizer.ipp
/// intx_quantizer's code (quantizers/intx_quantizer.hpp).

#include <string>
#include <vector>

#include "../intx_quantizer.hpp"

namespace xq {

namespace detail {
inline std::vector<std::string> intx_state_names(const low_bit::intx_spec& s) {
  if (s.scheme == low_bit::intx_scheme::int4_weight_only) return {"min_val", "max_val"};
  return {"scale", "zero_point"};
}

/// The two state tensors from the interleaved (a, b) pairs of intx_state.
inline void split_intx_state(const low_bit::intx_state& st, const tensor::shape_type& shape, low_bit_state& out) {
  tensor a = tensor::from_shape(shape), b = tensor::from_shape(shape);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a.data()[i] = st.values[2 * i];
    b.data()[i] = st.values[2 * i + 1];
  }
  out.clear();
  out.push_back(std::move(a));
  out.push_back(std::move(b));
}

inline low_bit::intx_state join_intx_state(const low_bit_state& s) {
  low_bit::intx_state st;
  const tensor& a = s.at(0);
  const tensor& b = s.at(1);
  st.values.resize(a.size() * 2);
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    st.values[2 * i] = a.data()[i];
    st.values[2 * i + 1] = b.data()[i];
  }
  return st;
}
}  // namespace detail

XQ_DECL intx_quantizer::intx_quantizer(low_bit::intx_spec spec)
    : low_bit_quantizer<intx_quantizer>("intx_quantizer", detail::intx_state_names(spec)), spec_(spec) {
  low_bit::to_string(spec_.scheme);
  if (spec_.bits < 2 || spec_.bits > 8 || (spec_.scheme == low_bit::intx_scheme::int4_weight_only && spec_.bits != 4))
    throw argument_error("xq::intx_quantizer", "bits in [2, 8] (int4_weight_only: 4)", detail::concat(spec_.bits));
  if (spec_.group_size < 0)
    throw argument_error("xq::intx_quantizer", "a group size >= 0 (0: the whole axis)", detail::concat(spec_.group_size));
  if (spec_.range_learning)  // its scales are parameters: fake_quantizer keeps them
    throw argument_error("xq::intx_quantizer",
                         "a spec without range learning (learned scales run in a fake_quantizer whose config names the "
                         "format: quantizer_config::format)",
                         "range_learning");
}

XQ_DECL std::string intx_quantizer::describe() const {
  return detail::concat("intx_quantizer(", low_bit::describe(spec_), ")");
}

XQ_DECL int intx_quantizer::state_bits(std::size_t slot) const noexcept {
  if (spec_.scheme == low_bit::intx_scheme::int4_weight_only) return 32;
  if (slot == 0) return 32;
  return spec_.scheme == low_bit::intx_scheme::intx_per_token ? spec_.bits : 0;
}

XQ_DECL double intx_quantizer::nominal_bits_per_value() const {
  return low_bit::bits_per_value(spec_, spec_.group_size > 0 ? std::size_t(spec_.group_size) : 0);
}

XQ_DECL tensor intx_quantizer::forward_observing(const spec_type& s, const tensor& x, low_bit_state& state, bool* mask,
                                                 const std::string& where) {
  low_bit::intx_state st;
  tensor y = low_bit::intx_quantize_dequantize<default_policy>(x, s, where, &st, mask);
  const kernels::block_layout bl = low_bit::intx_layout(x, s, where);
  detail::split_intx_state(st, low_bit_state_shape(x.shape(), s.axis, bl.blocks_per_row()), state);
  return y;
}

XQ_DECL tensor intx_quantizer::forward_with(const spec_type& s, const tensor& x, const low_bit_state& state, bool* mask,
                                            const std::string& where) {
  return low_bit::intx_apply<default_policy>(x, s, detail::join_intx_state(state), where, mask);
}

XQ_DECL tensor intx_quantizer::input_gradient(const spec_type& s, const tensor& x, const tensor& dy,
                                              const low_bit_state& state, const bool* mask) {
  return low_bit::intx_backward<default_policy>(x, dy, s, detail::join_intx_state(state), mask);
}

XQ_DECL quantization_grid intx_quantizer::grid(const spec_type& s, const tensor::shape_type& shape,
                                               const low_bit_state& state, const std::string& where) {
  std::vector<float> scale, zero_point;
  const low_bit::intx_state joined = detail::join_intx_state(state);
  low_bit::intx_scales(s, joined, scale, zero_point);
  const long rank = long(shape.size());
  const long axis = s.axis < 0 ? s.axis + rank : s.axis;
  const std::size_t length = axis >= 0 && axis < rank ? shape[std::size_t(axis)] : 1;
  const bool per_row = s.scheme == low_bit::intx_scheme::intx_per_token || s.group_size == 0;
  quantization_grid g = detail::blocked_grid(grid_element::integer, s.bits, shape, s.axis,
                                             per_row ? length : std::size_t(s.group_size), std::move(scale), where);
  if (s.scheme == low_bit::intx_scheme::int4_weight_only) {
    // q in [0, 15] from the group's min, real = (q - 8) · scale + the float zero point.
    g.qmin = 0;
    g.qmax = 15;
    g.zero_point.assign(g.scale.size(), 8);
    g.offset = std::move(zero_point);
    g.rounding.op = rounding_operator::torchao_int4_weight_only;
    g.rounding.range_min.resize(g.scale.size());
    for (std::size_t i = 0; i < g.scale.size(); ++i) g.rounding.range_min[i] = joined.values[2 * i];
    return g;
  }
  for (std::size_t i = 0; i < zero_point.size(); ++i) g.zero_point[i] = std::int32_t(zero_point[i]);
  // torchao multiplies by 1 / scale and rounds half to even (PyTorch's affine operator).
  g.rounding.op = rounding_operator::torch_affine;
  return g;
}

}  // namespace xq
