#pragma once
/// \file nvfp4_block.ipp
/// NVFP4's tensor constants per peer, layouts, codes (numerics/nvfp4_block.hpp).

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../nvfp4_block.hpp"

namespace xq::low_bit {

XQ_DECL const char* to_string(nvfp4_variant v) {
  switch (v) {
    case nvfp4_variant::torchao: return "torchao";
    case nvfp4_variant::torchao_one_level: return "torchao_one_level";
    case nvfp4_variant::transformer_engine: return "transformer_engine";
    case nvfp4_variant::modelopt_qtensor: return "modelopt_qtensor";
    case nvfp4_variant::modelopt_triton: return "modelopt_triton";
  }
  throw argument_error("xq::low_bit::nvfp4_variant", "one of the five NVFP4 variants",
                       xq::detail::concat("value ", static_cast<int>(v)));
}

XQ_DECL std::string describe(const nvfp4_spec& s) {
  return xq::detail::concat("nvfp4 ", to_string(s.variant), s.tiles_16x16 ? " 16x16" : "", " axis ", s.axis);
}

XQ_DECL kernels::block_layout nvfp4_layout(const tensor& x, const nvfp4_spec& s, const std::string& where) {
  to_string(s.variant);
  if (s.tiles_16x16 && s.variant != nvfp4_variant::transformer_engine)
    throw argument_error(where, "16x16 tiles with the transformer_engine variant (the only peer with them)",
                         to_string(s.variant));
  const long r = long(x.dimension());
  if (r == 0 || s.axis < -r || s.axis >= r)
    throw argument_error(where, xq::detail::concat("a block axis in [", -r, ", ", r, ")"),
                         xq::detail::concat("axis ", s.axis, " of a rank-", r, " tensor"));
  kernels::block_layout bl;
  bl.shape = kernels::channel_layout::of(x.shape(), s.axis, where.c_str());
  bl.block = 16;
  bl.tile_rows = s.tiles_16x16 ? 16 : 1;
  if (s.variant != nvfp4_variant::transformer_engine && bl.shape.channels % 16 != 0)
    throw argument_error(where,
                         xq::detail::concat("an axis length that is a multiple of 16 (", to_string(s.variant),
                                            " has no partial blocks; transformer_engine pads them)"),
                         xq::detail::concat("length ", bl.shape.channels, " on axis ", s.axis));
  return bl;
}

namespace detail {

XQ_DECL nvfp4_tensor_constants nvfp4_tensor_constants::make(nvfp4_variant v, float amax) {
  nvfp4_tensor_constants f;
  const float flt_max = std::numeric_limits<float>::max();
  switch (v) {
    case nvfp4_variant::torchao:
      f.g = amax / 2688.0f;  // per_tensor_amax_to_scale: amax / (448 * 6)
      f.inv_g = 1.0f / f.g;
      break;
    case nvfp4_variant::torchao_one_level: break;
    case nvfp4_variant::transformer_engine:
      f.encode = math::min(2688.0f / amax, flt_max);  // torch.min keeps a NaN
      if (f.encode == 0.0f) f.encode = 1.0f;
      f.decode = 1.0f / f.encode;
      f.multiplier = f.encode * (1.0f / 6.0f);  // torch.reciprocal(6.0) in float32
      break;
    case nvfp4_variant::modelopt_qtensor:
      f.g = amax / 2688.0f;  // get_weights_scaling_factor_2: amax / (E2M1_MAX * E4M3_MAX)
      f.six_g = 6.0f * f.g;
      break;
    case nvfp4_variant::modelopt_triton: {
      const float sfa = (amax * 1.0f) / 6.0f;  // global_amax * (448 / 448) / 6
      const float safe = sfa <= 5.9604644775390625e-8f ? 1.0f : sfa;  // fp8_eager: amax <= 2^-24 -> 1
      // `448.0 / safe_amax` is Tensor.__rtruediv__: reciprocal, then a product (not a division)
      f.fp8_scale = (1.0f / safe) * 448.0f;
      f.fp8_inv = 1.0f / f.fp8_scale;
      break;
    }
  }
  return f;
}

}  // namespace detail

XQ_DECL void nvfp4_scales(const nvfp4_spec& s, const nvfp4_state& state, std::vector<float>& block_scale,
                          float& tensor_scale) {
  const detail::nvfp4_tensor_constants c = detail::nvfp4_tensor_constants::make(s.variant, state.tensor_amax);
  block_scale = state.block;
  switch (s.variant) {
    case nvfp4_variant::torchao:
    case nvfp4_variant::modelopt_qtensor: tensor_scale = c.g; break;
    case nvfp4_variant::torchao_one_level: tensor_scale = 1.0f; break;
    case nvfp4_variant::transformer_engine: tensor_scale = c.decode; break;
    case nvfp4_variant::modelopt_triton: {
      tensor_scale = c.fp8_inv;
      const detail::nvfp4_format<nvfp4_variant::modelopt_triton> f(c);
      for (float& b : block_scale) b = f.triton_e4m3(b);
      break;
    }
  }
}

XQ_DECL std::vector<std::uint8_t> nvfp4_codes(const tensor& x, const nvfp4_spec& s, const nvfp4_state& state,
                                              const std::string& where) {
  const kernels::block_layout bl = nvfp4_layout(x, s, where);
  if (state.block.size() != bl.block_count())
    throw argument_error(where, xq::detail::concat("a state of ", bl.block_count(), " block values"),
                         xq::detail::concat(state.block.size(), " block values"));
  std::vector<std::uint8_t> codes(x.size());
  const std::size_t L = bl.shape.channels, inner = bl.shape.inner, nb = bl.blocks_per_row();
  detail::visit_nvfp4(s.variant, state.tensor_amax, [&](const auto& f) {
    for (std::size_t o = 0; o < bl.shape.outer; ++o)
      for (std::size_t c = 0; c < L; ++c)
        for (std::size_t i = 0; i < inner; ++i) {
          const std::size_t at = (o * L + c) * inner + i;
          float p[4];
          f.kernel_params(&state.block[(o * nb + c / 16) * inner + i], p);
          const auto k = f.kernel(p);
          codes[at] = encode(element_type::e2m1, p[3] != 0.0f ? 0.0f : k.element(x.data()[at]));
        }
  });
  return codes;
}

}  // namespace xq::low_bit
