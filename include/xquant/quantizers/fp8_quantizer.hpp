#pragma once
/// \file fp8_quantizer.hpp
/// `xq::fp8_quantizer`: FP8 (E4M3FN or E5M2) fake quantization with a float32 scale per tensor
/// or per row, as a quantizer layer: torchao's Float8FakeQuantizer (x / s, its autograd through
/// the scale) or TransformerEngine's current scaling (x · S, the identity gradient)
/// (numerics/float8_scaled.hpp). State: "amax", per tensor or per row (32 bits in the summary).

#include <string>

#include "../config.hpp"
#include "../numerics/float8_scaled.hpp"
#include "low_bit_quantizer.hpp"

namespace xq {

class fp8_quantizer : public low_bit_quantizer<fp8_quantizer> {
 public:
  using spec_type = low_bit::fp8_spec;
  static constexpr bool uses_mask = false;
  static constexpr bool identity_gradient = false;

  XQ_DECL explicit fp8_quantizer(low_bit::fp8_spec spec = {});

  const spec_type& spec() const noexcept { return spec_; }
  int precision() const override { return 8; }
  /// "fp8_quantizer(fp8_e4m3fn torchao per_row axis -1)".
  XQ_DECL std::string describe() const override;
  int state_bits(std::size_t) const noexcept { return 32; }
  double nominal_bits_per_value() const { return 8.0; }

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
#include "impl/fp8_quantizer.ipp"
#endif
