#pragma once
/// \file nvfp4_quantizer.ipp
/// nvfp4_quantizer's code (quantizers/nvfp4_quantizer.hpp).

#include <algorithm>
#include <string>

#include "../nvfp4_quantizer.hpp"

namespace xq {

XQ_DECL nvfp4_quantizer::nvfp4_quantizer(low_bit::nvfp4_spec spec)
    : low_bit_quantizer<nvfp4_quantizer>(
          "nvfp4_quantizer",
          {"global_amax", spec.variant == low_bit::nvfp4_variant::modelopt_triton ? "block_amax" : "block_scale"}),
      spec_(spec) {
  low_bit::to_string(spec_.variant);
  if (spec_.tiles_16x16 && spec_.variant != low_bit::nvfp4_variant::transformer_engine)
    throw argument_error("xq::nvfp4_quantizer", "16x16 tiles with the transformer_engine variant",
                         low_bit::to_string(spec_.variant));
}

XQ_DECL std::string nvfp4_quantizer::describe() const {
  return detail::concat("nvfp4_quantizer(", low_bit::describe(spec_), ")");
}

XQ_DECL tensor nvfp4_quantizer::forward_observing(const spec_type& s, const tensor& x, low_bit_state& state, bool* mask,
                                                  const std::string& where) {
  low_bit::nvfp4_state st;
  tensor y = low_bit::nvfp4_quantize_dequantize<default_policy>(x, s, where, &st, mask);
  const std::size_t L = kernels::channel_layout::of(x.shape(), s.axis, where.c_str()).channels;
  tensor amax = tensor::from_shape({1});
  amax.data()[0] = st.tensor_amax;
  tensor blocks = tensor::from_shape(low_bit_state_shape(x.shape(), s.axis, (L + 15) / 16));
  std::copy(st.block.begin(), st.block.end(), blocks.begin());
  state.clear();
  state.push_back(std::move(amax));
  state.push_back(std::move(blocks));
  return y;
}

XQ_DECL tensor nvfp4_quantizer::forward_with(const spec_type& s, const tensor& x, const low_bit_state& state, bool* mask,
                                             const std::string& where) {
  low_bit::nvfp4_state st;
  st.tensor_amax = state.at(0).size() ? state.at(0).data()[0] : 0.0f;
  st.block.assign(state.at(1).begin(), state.at(1).end());
  return low_bit::nvfp4_apply<default_policy>(x, s, st, where, mask);
}

XQ_DECL tensor nvfp4_quantizer::input_gradient(const spec_type& s, const tensor& x, const tensor& dy,
                                               const low_bit_state& state, const bool* mask) {
  (void)x;
  (void)state;
  return low_bit::nvfp4_backward<default_policy>(dy, s, mask);
}

XQ_DECL quantization_grid nvfp4_quantizer::grid(const spec_type& s, const tensor::shape_type& shape,
                                                const low_bit_state& state, const std::string& where) {
  low_bit::nvfp4_state st;
  st.tensor_amax = state.at(0).size() ? state.at(0).data()[0] : 0.0f;
  st.block.assign(state.at(1).begin(), state.at(1).end());
  std::vector<float> block_scale;
  float tensor_scale = 1.0f;
  low_bit::nvfp4_scales(s, st, block_scale, tensor_scale);
  quantization_grid g = detail::blocked_grid(grid_element::fp4_e2m1, 4, shape, s.axis, 16, std::move(block_scale), where);
  g.scale_type = scale_element::ue4m3;
  // The output is element · (block scale · tensor scale) rounded once (nvfp4_scales): one
  // level of float32 scales where the second is 1.
  if (tensor_scale != 1.0f) g.tensor_scale = tensor_scale;
  return g;
}

}  // namespace xq
