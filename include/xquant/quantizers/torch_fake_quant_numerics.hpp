#pragma once
/// \file torch_fake_quant_numerics.hpp
/// `xq::torch_fake_quant_numerics`: PyTorch's operator (docs/semantics.md §5): the
/// observer's `calculate_qparams` on the range, then `fake_quantize_per_tensor_affine`
/// or `fake_quantize_per_channel_affine`; the backward is its cachemask gradient.
///
/// The grid a quantizer_config describes, as PyTorch observer options: qint8 (symmetric;
/// quant_min -127 when narrow) or quint8 (affine), int16 / uint16 beyond 8 bits, always
/// as an explicit [quant_min, quant_max] (the same as PyTorch's defaults at 8 bits,
/// reduce_range included). An unobserved range (+Inf / -Inf, or no channels yet) gives
/// PyTorch's neutral scale 1 and zero point 0.

#include <cstdint>

#include "../numerics/torch_observers.hpp"
#include "quantizer_numerics.hpp"

namespace xq {

class torch_fake_quant_numerics final : public quantizer_numerics {
 public:
  static const torch_fake_quant_numerics& instance();

  /// The observer options of the grid `c` describes (see the file comment).
  static torch::observer_options observer_options_for(const quantizer_config& c);

  XQ_DECL quantized_output apply(const quantizer_config& c, const tensor& x, const kernels::channel_layout& l, const vector& min,
                         const vector& max, bool with_gradient, const std::string& where) const override;
  XQ_DECL quantization_grid grid(const quantizer_config& c, std::size_t channels, const vector& min,
                                 const vector& max, const std::string& where) const override;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/torch_fake_quant_numerics.ipp"
#endif
