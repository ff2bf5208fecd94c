#pragma once
/// \file tf_fake_quant_numerics.hpp
/// `xq::tf_fake_quant_numerics`: tfmot's operator (docs/semantics.md §1, §3): TF
/// `fake_quant_with_min_max_vars` per tensor, `..._per_channel` on the last axis, with
/// the nudged range; the backward is the op's input gradient (dy inside the nudged range,
/// both ends inclusive), computed from the mask the forward wrote alongside, with TF's
/// denormal flushing. The range gets no gradient: it is tracked, not trained.

#include "quantizer_numerics.hpp"

namespace xq {

class tf_fake_quant_numerics final : public quantizer_numerics {
 public:
  static const tf_fake_quant_numerics& instance();

  XQ_DECL quantized_output apply(const quantizer_config& c, const tensor& x, const kernels::channel_layout&, const vector& min,
                         const vector& max, bool with_gradient, const std::string& where) const override;
  XQ_DECL quantization_grid grid(const quantizer_config& c, std::size_t channels, const vector& min,
                                 const vector& max, const std::string& where) const override;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tf_fake_quant_numerics.ipp"
#endif
