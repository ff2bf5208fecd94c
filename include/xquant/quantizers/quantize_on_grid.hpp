#pragma once
/// \file quantize_on_grid.hpp
/// `xq::quantize_on_grid`: the integers of a tensor on a quantization grid, rounded by the
/// grid's rounding rule (quantization_grid.hpp) — exactly the integers the quantizer whose
/// grid it is produces on its inference call, because the rule names that quantizer's own
/// operator and this runs it: TF's QDQ and FakeQuant, PyTorch's affine fake quantization
/// (integer, wide and float zero points, for the CPU build the rule names) and its
/// learnable form, DoReFa's levels and Larq's sign, heaviside and ternary functions, from
/// numerics/, under TF's denormal flushing where the peer runs under it. ONNX's
/// QuantizeLinear (divide, half to even, saturate) is computed from the grid alone, per
/// tensor, per channel or per block.
///
/// The integer engine's quantize op rounds with it (deploy/engine/quantize_ops.hpp); an
/// exporter compares it with what onnxruntime computes.
///
/// \code
///   const xq::quantization_grid g = *quantizer.grid_of(x);
///   std::vector<std::int32_t> q = xq::quantize_on_grid(g, x, quantizer.path());
/// \endcode

#include <cstdint>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "quantization_grid.hpp"

namespace xq {

/// The integers of `x` on `grid` (q with real = (q - zero_point) * scale; ±1 on a binary
/// grid), rounded by grid.rounding. Throws argument_error naming `where` for a grid that
/// is not consistent or does not fit x's shape (check_grid_for), for float elements (their
/// rounding is the low-bit numerics'), and for what the peer's operator refuses. NaN
/// inputs: what the operator gives where it gives an integer (PyTorch's clamps send NaN to
/// qmin; QuantizeLinear here too), +1 for the signs; an operator whose output stays NaN
/// (TF's) throws, naming the element.
XQ_DECL std::vector<std::int32_t> quantize_on_grid(const quantization_grid& grid, const tensor& x,
                                                   const std::string& where);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantize_on_grid.ipp"
#endif
