#pragma once
/// \file tf_qdq_numerics.hpp
/// `xq::tf_qdq_numerics`: NVIDIA's QDQ (docs/semantics.md §2, §4): TF
/// `quantize_and_dequantize_v4` with the range given, signed, half to even, narrow or
/// wide, per tensor or per channel on any axis. The backward is the V4 gradient: it
/// recomputes the mask from x and the range as given (dy where min <= x <= max), even
/// where it passes everything (a per-tensor last-value range).

#include "quantizer_numerics.hpp"

namespace xq {

class tf_qdq_numerics final : public quantizer_numerics {
 public:
  static const tf_qdq_numerics& instance();

  XQ_DECL quantized_output apply(const quantizer_config& c, const tensor& x, const kernels::channel_layout&, const vector& min,
                         const vector& max, bool with_gradient, const std::string& where) const override;
  XQ_DECL quantization_grid grid(const quantizer_config& c, std::size_t channels, const vector& min,
                                 const vector& max, const std::string& where) const override;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tf_qdq_numerics.ipp"
#endif
