#pragma once
/// \file xnor_forward.hpp
/// The forward of a binarized convolution or dense layer in training by XNOR-popcount.
///
/// A quant_conv2d whose input and kernel quantizers both give ±1 (Larq's signs) computes
/// sums of ±1 products: small integers, exact in float32 whatever the order of the
/// additions. So the binary engine's product (kernels/binary_gemm.hpp: 64 products
/// per XOR and popcount) gives the float convolution's sums bit for bit, at a fraction of
/// its cost; the backward stays the float convolution's (its operands, the gradients, are
/// not binary). Whether the values are ±1 is read from the values themselves while they
/// are packed, so a quantizer turned off, a sign quantizer with a scale, or a zero padding
/// falls back to the float kernels with nothing else to declare.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "../kernels/padding.hpp"

namespace xq::detail {

/// Packs `rows` rows of `row_length` floats into bits, bit 1 for -1 and 0 for +1 (the
/// binary engine's packing), ceil(row_length / 64) words per row, the bits past the row
/// zero. Returns false as soon as a value is neither +1 nor -1 (`bits` then holds
/// nothing useful).
XQ_DECL bool pack_exact_signs(const float* x, std::size_t rows, std::size_t row_length, std::uint64_t* bits);

/// The sums of the convolution of x (N, H, W, C) with kernel (KH, KW, C, F) over window
/// `g`, the padding (if any) being +1 (Larq's pad_values = 1), by XNOR-popcount: the
/// float convolution's sums, bit for bit. nullopt, having computed nothing else, when a
/// value of the kernel or of x is not exactly ±1.
XQ_DECL std::optional<tensor> xnor_conv2d_sums(const tensor& x, const tensor& kernel, const window2d& g);

/// The sums of x · kernel for x (..., IN) and kernel (IN, OUT) (a dense layer's product),
/// by XNOR-popcount; nullopt as above.
XQ_DECL std::optional<tensor> xnor_dense_sums(const tensor& x, const tensor& kernel);

}  // namespace xq::detail

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/xnor_forward.ipp"
#endif
