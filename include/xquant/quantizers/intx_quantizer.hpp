#pragma once
/// \file intx_quantizer.hpp
/// `xq::intx_quantizer`: torchao's integer fake quantizers as a quantizer layer
/// (numerics/torchao_affine.hpp): IntxFakeQuantizer's symmetric groups of 2 to 8 bits (the
/// weights of Int8DynamicActivationIntxWeightConfig, 8da4w), its per-token asymmetric
/// activations, and Int4WeightFakeQuantizer's int4 weight-only groups with a float zero point,
/// each with torchao's gradient. State: "scale" and "zero_point" per group or token (the
/// int4 weight-only scheme keeps the group's "min_val" and "max_val", from which its scale and
/// zero point follow); in the summary the scale is 32 bits, the zero point of a per-token row
/// as many as the integer (a symmetric scheme's is 0 and not stored), int4 weight-only's 32.

#include <string>

#include "../config.hpp"
#include "../numerics/torchao_affine.hpp"
#include "low_bit_quantizer.hpp"

namespace xq {

class intx_quantizer : public low_bit_quantizer<intx_quantizer> {
 public:
  using spec_type = low_bit::intx_spec;
  static constexpr bool uses_mask = true;
  static constexpr bool identity_gradient = false;

  XQ_DECL explicit intx_quantizer(low_bit::intx_spec spec = {});

  const spec_type& spec() const noexcept { return spec_; }
  int precision() const override { return spec_.bits; }
  /// "intx_quantizer(int4 intx_symmetric group 32 axis -1)".
  XQ_DECL std::string describe() const override;
  XQ_DECL int state_bits(std::size_t slot) const noexcept;
  XQ_DECL double nominal_bits_per_value() const;

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
#include "impl/intx_quantizer.ipp"
#endif
