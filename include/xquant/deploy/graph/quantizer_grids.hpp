#pragma once
/// \file quantizer_grids.hpp
/// What the deploy graph reads of a quantizer, through the one quantizer base: the grid
/// its inference call rounds a tensor onto, whether it has seen data, and its output.

#include <string>

#include "../../config.hpp"
#include "../../core/tensor.hpp"
#include "../../quantizers/quantization_grid.hpp"
#include "../../quantizers/quantizer_layer.hpp"

namespace xq::deploy {

/// The grid `q`'s inference call rounds `x` (or a tensor of its shape) onto; argument_error
/// naming `where` for a quantizer whose output is on no fixed grid.
XQ_DECL quantization_grid grid_of(const quantizer_base& q, const tensor& x, const std::string& where);

/// Whether `q` has seen data (a training step, calibration, a range set or restored).
XQ_DECL bool has_seen_data(const quantizer_base& q);

/// Whether `g` is a binary grid (±1 times its scale: Larq's signs).
XQ_DECL bool is_binary(const quantization_grid& g) noexcept;

namespace detail {
/// `q`'s inference output on `x` (nothing recorded, no state changed).
XQ_DECL tensor inference_output(const quantizer_base& q, const tensor& x);
}  // namespace detail

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantizer_grids.ipp"
#endif
