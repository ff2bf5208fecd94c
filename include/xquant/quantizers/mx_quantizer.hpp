#pragma once
/// \file mx_quantizer.hpp
/// `xq::mx_quantizer`: OCP MX fake quantization (FP8/FP6/FP4/INT8 elements, an E8M0 scale per
/// block along a chosen axis) as a quantizer layer, with the shared exponent, element rounding
/// and order of operations of the peer function its variant names (numerics/mx_block.hpp:
/// torchao's to_mx FLOOR/CEIL/EVEN/RCEIL, microxcaling's _quantize_mx, ModelOpt's
/// MXFP4QTensor). State: "scale", one 2^e per block (E8M0: 8 bits in the summary). The
/// gradient is the identity, as torchao's MX QAT backward and ModelOpt's dynamic block quantizer
/// pass it (microxcaling's layers quantize the incoming gradient too: not reproduced). Presets:
/// low_bit_presets.hpp.
///
/// \code
///   xq::low_bit::mx_spec s;                       // torchao RCEIL, FP4, blocks of 32, last axis
///   s.axis = 0;                                   // a dense kernel (in, out): blocks along `in`
///   xq::quant_dense<xq::no_quantizer, xq::mx_quantizer> layer(64, {}, xq::mx_quantizer(s));
/// \endcode

#include <string>

#include "../config.hpp"
#include "../numerics/mx_block.hpp"
#include "low_bit_quantizer.hpp"

namespace xq {

class mx_quantizer : public low_bit_quantizer<mx_quantizer> {
 public:
  using spec_type = low_bit::mx_spec;
  static constexpr bool uses_mask = false;
  static constexpr bool identity_gradient = true;

  /// Checks the spec's variant and element (argument_error); the axis is checked per call.
  XQ_DECL explicit mx_quantizer(low_bit::mx_spec spec = {});

  const spec_type& spec() const noexcept { return spec_; }
  /// The element's bits (4 for FP4, 6 for FP6, 8 for FP8 and INT8).
  XQ_DECL int precision() const override;
  /// "mx_quantizer(mxfp4 torchao_rceil block 32 axis -1)".
  XQ_DECL std::string describe() const override;
  int state_bits(std::size_t) const noexcept { return 8; }
  double nominal_bits_per_value() const { return low_bit::bits_per_value(spec_); }

  XQ_DECL static tensor forward_observing(const spec_type& s, const tensor& x, low_bit_state& state, bool* mask,
                                          const std::string& where);
  /// The grid of the output for a tensor of `shape` under `state` (quantization_grid.hpp):
  /// what deployment stores and computes with (argument_error naming `where` where the
  /// format has no such grid).
  XQ_DECL static quantization_grid grid(const spec_type& s, const tensor::shape_type& shape, const low_bit_state& state,
                                        const std::string& where);
  XQ_DECL static tensor forward_with(const spec_type& s, const tensor& x, const low_bit_state& state, bool* mask,
                                     const std::string& where);
  static tensor input_gradient(const spec_type&, const tensor&, const tensor& dy, const low_bit_state&, const bool*) {
    return dy;
  }

 private:
  spec_type spec_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/mx_quantizer.ipp"
#endif
