#pragma once
/// \file low_bit_format_numerics.hpp
/// A low-bit format (low_bit_format.hpp) as a fake quantizer runs it: the quantize-dequantize
/// with scales from the tensor itself, its gradient, and the grid of its output — the static
/// functions of the format's own quantizer (intx_quantizer, fp8_quantizer, mx_quantizer,
/// nvfp4_quantizer), so that a format gives the same numbers in a wrapper as standalone.

#include <cstddef>
#include <string>

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "../core/var.hpp"
#include "low_bit_format.hpp"
#include "quantization_grid.hpp"
#include "quantizer_numerics.hpp"

namespace xq {

/// Throws argument_error naming `where` for a spec its quantizer refuses (bits, variant,
/// element); nothing without a format.
XQ_DECL void validate(const low_bit_format& f, const std::string& where);

/// Whether the format quantizes a tensor whose block axis is `axis_length` long (torchao's
/// MX and NVFP4 refuse a partial block; microxcaling and TransformerEngine pad it).
XQ_DECL bool format_accepts(const low_bit_format& f, std::size_t axis_length);

namespace detail {

/// The format's quantize-dequantize of x (scales from x), with its gradient when `record`
/// (which keeps x's value). argument_error naming `where` for an axis outside x's rank, or
/// a tensor the format refuses.
XQ_DECL quantized_output format_forward(const low_bit_format& f, const var& x, bool record, const std::string& where);
/// The grid of format_forward's output on x (argument_error naming `where` where the format
/// has none); with `output`, that output too (one pass computes both).
XQ_DECL quantization_grid format_grid(const low_bit_format& f, const tensor& x, const std::string& where,
                                      tensor* output = nullptr);

}  // namespace detail
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/low_bit_format_numerics.ipp"
#endif
