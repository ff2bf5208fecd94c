#pragma once
/// \file nvfp4_quantizer.hpp
/// `xq::nvfp4_quantizer`: NVFP4 fake quantization (E2M1 elements, a UE4M3 scale per 16 values
/// along a chosen axis, a float32 scale from the tensor's amax) as a quantizer layer, with the
/// order of operations, clamps and zero rules of the peer function its variant names
/// (numerics/nvfp4_block.hpp: torchao's nvfp4_quantize, TransformerEngine's reference recipe
/// with 1x16 blocks or 16x16 weight tiles, ModelOpt's NVFP4QTensor and its Triton kernel).
/// State: "global_amax" (the tensor's amax, 32 bits in the summary) and "block_scale" (the
/// UE4M3 values, 8 bits; modelopt_triton keeps "block_amax", as ModelOpt's static quantizer
/// does). The gradient is the identity, but for modelopt_triton (dy where |x| <= the block amax).

#include <string>

#include "../config.hpp"
#include "../numerics/nvfp4_block.hpp"
#include "low_bit_quantizer.hpp"

namespace xq {

class nvfp4_quantizer : public low_bit_quantizer<nvfp4_quantizer> {
 public:
  using spec_type = low_bit::nvfp4_spec;
  static constexpr bool uses_mask = true;
  static constexpr bool identity_gradient = false;

  XQ_DECL explicit nvfp4_quantizer(low_bit::nvfp4_spec spec = {});

  const spec_type& spec() const noexcept { return spec_; }
  int precision() const override { return 4; }
  /// "nvfp4_quantizer(nvfp4 torchao axis -1)".
  XQ_DECL std::string describe() const override;
  int state_bits(std::size_t slot) const noexcept { return slot == 0 ? 32 : 8; }
  double nominal_bits_per_value() const { return low_bit::nvfp4_bits_per_value(); }

  XQ_DECL static tensor forward_observing(const spec_type& s, const tensor& x, low_bit_state& state, bool* mask,
                                          const std::string& where);
  /// The grid of the output for a tensor of `shape` under `state` (quantization_grid.hpp):
  /// what deployment stores and computes with (argument_error naming `where` where the
  /// format has no such grid).
  XQ_DECL static quantization_grid grid(const spec_type& s, const tensor::shape_type& shape, const low_bit_state& state,
                                        const std::string& where);
  XQ_DECL static tensor forward_with(const spec_type& s, const tensor& x, const low_bit_state& state, bool* mask,
                                     const std::string& where);
  XQ_DECL static tensor input_gradient(const spec_type& s, const tensor& x, const tensor& dy, const low_bit_state& state,
                                       const bool* mask);

 private:
  spec_type spec_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/nvfp4_quantizer.ipp"
#endif
