#pragma once
/// \file mx_block.hpp
/// MX block quantization (OCP Microscaling v1.0: blocks of 32 values sharing an E8M0
/// power-of-two scale) as each peer computes it, quantize then dequantize, bit for bit.
/// The peers disagree on the shared exponent, the element rounding and the order of
/// operations (research/low-bit.md §1.2; docs/semantics.md "Low-bit formats"):
///
///  | variant (peer function)                          | shared exponent e                          | elements            | order |
///  |--------------------------------------------------|--------------------------------------------|---------------------|-------|
///  | torchao_floor (`mx_tensor.py::to_mx`, FLOOR)     | exponent bits of amax - emax               | RNE, saturate       | x / max(2^e, 2^-126), clamp, cast; * 2^e |
///  | torchao_ceil (CEIL)                              | + 1 when amax's mantissa is not 0          | same                | same |
///  | torchao_even (EVEN)                              | amax rounded to the element's mantissa first | same              | same |
///  | torchao_rceil (`_to_mx_rceil`, torchao's QAT and inference configs) | ceil(log2(amax / max)) | same       | x * 2^-e (1 when e = -127), clamp, cast; * 2^e |
///  | microxcaling_nearest (`mx_ops.py::_quantize_mx`, round="nearest") | floor(log2(amax)) - emax, NaN above 127 | floor(|v| + 0.5) in float32, saturate | x / 2^e, round, * 2^e |
///  | microxcaling_even (round="even")                 | same                                       | its "even" rounding | same |
///  | modelopt_mxfp4 (`MXFP4QTensor.quantize` + `dequantize`) | ceil(max(log2(amax / 6), -127))     | ties toward zero; zero gets the sign bit | x / 2^e, cast; * 2^e |
///
/// `log2` is torch's float32 log2, whose result near a power of two rounds to the integer
/// (torch_log2_table.hpp, measured): that is the exponent these peers compute.
/// Elements: FP8 E4M3/E5M2, FP6 E3M2/E2M3, FP4 E2M1 (every variant but modelopt_mxfp4,
/// which is FP4 only), and microxcaling's INT8 (sign-magnitude k/64, |k| <= 127).
/// Blocks run along one axis of the tensor (default the last); torchao and ModelOpt need
/// the axis length to be a multiple of the block size (argument_error otherwise, as they
/// refuse it), microxcaling pads a partial last block with zeros.

#include <cstddef>
#include <cstdint>
#include <string>

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "../kernels/policy.hpp"
#include "low_bit_float.hpp"

namespace xq::low_bit {

/// Which peer function an MX quantize-dequantize reproduces (the table above).
enum class mx_variant : std::uint8_t {
  torchao_floor,
  torchao_ceil,
  torchao_even,
  torchao_rceil,
  microxcaling_nearest,
  microxcaling_even,
  modelopt_mxfp4,
};

/// The element of an MX block: a float element type, or microxcaling's INT8.
struct mx_element {
  element_type type = element_type::e2m1;
  bool int8 = false;  ///< microxcaling's MXINT8 (ignores `type`)
};

/// An MX format: variant, element, block size and the axis the blocks run along.
struct mx_spec {
  mx_variant variant = mx_variant::torchao_rceil;
  mx_element element{};
  int block_size = 32;
  int axis = -1;  ///< negative counts from the end
};

/// "torchao_rceil", ... (argument_error outside the enum).
XQ_DECL const char* to_string(mx_variant v);
/// "mxfp4 torchao_rceil block 32 axis -1" style.
XQ_DECL std::string describe(const mx_spec& s);
/// Throws argument_error (naming `where`) for an element the variant does not have, a block
/// size < 1, or an axis outside x's rank.
XQ_DECL void validate(const mx_spec& s, std::size_t rank, const std::string& where);

/// Bits per value the format stores: the element's, plus 8 scale bits per block
/// (MXFP4: 4 + 8/32 = 4.25).
XQ_DECL double bits_per_value(const mx_spec& s);

/// torch.log2's floor and ceil for a positive finite float32 (torch_log2_table.hpp).
XQ_DECL int torch_floor_log2(float a);
XQ_DECL int torch_ceil_log2(float a);

/// The quantize-dequantize of x under `s` (argument_error, naming `where`, for a bad spec or
/// an axis length the variant refuses). The scales are written to `scales` when not null:
/// one float32 per block (2^e, NaN for a NaN block), blocks in the order of the layout
/// (outer, block, inner).
template <class Policy = default_policy>
tensor mx_quantize_dequantize(const tensor& x, const mx_spec& s, const std::string& where = "xq::low_bit::mx",
                              std::vector<float>* scales = nullptr);

}  // namespace xq::low_bit

#include "impl/mx_block_kernels.hpp"

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/mx_block.ipp"
#endif
