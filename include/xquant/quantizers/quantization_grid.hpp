#pragma once
/// \file quantization_grid.hpp
/// `xq::quantization_grid`: the integers a fake quantizer's output stands for. Every
/// fake-quant operator xquant reproduces returns reals of the form
///
///     real = (q - zero_point) * scale,   qmin <= q <= qmax
///
/// with one scale and zero point per tensor or per channel. Deployment needs the q's and
/// the grid, not the reals: an ONNX file stores q and (scale, zero_point) for
/// DequantizeLinear, and the integer engine computes on q. Each numerics knows its own
/// grid (quantizer_numerics::grid): TF's QDQ is symmetric with zero point 0 and its step
/// is max/qmax or min/qmin, whichever side is larger (ComputeQuantizationRange); TF's
/// FakeQuant is unsigned over the nudged range; PyTorch's is the observer's qparams.
///
/// The integers are recovered from the simulation's own output, `q = rint(real / scale)
/// + zero_point`: real is (q - zp) * scale rounded once to float, so the quotient is
/// within a few ulps of an integer of magnitude at most 2^16 and rint gives q exactly.
/// So the integers exported are the ones the simulation computed, whatever rounding rule
/// (half to even, half up after nudging, multiplying by a reciprocal) produced them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/tensor.hpp"

namespace xq {

struct quantization_grid {
  std::vector<float> scale;              ///< one per channel (one entry: per tensor)
  std::vector<std::int32_t> zero_point;  ///< as many as `scale`
  std::int32_t qmin = -128;              ///< the smallest integer the operator produces
  std::int32_t qmax = 127;               ///< the largest (narrow range, < 8 bits and reduce_range show here)
  bool per_channel = false;
  int channel_axis = -1;  ///< per channel: the axis (negative counts from the end)
  int num_bits = 8;

  std::size_t channels() const noexcept { return scale.size(); }
  /// Whether every integer fits int8 / uint8 (the ONNX storage types of 8-bit grids), or
  /// int16 / uint16 (QuantizeLinear's from opset 21).
  bool fits_int8() const noexcept { return qmin >= -128 && qmax <= 127; }
  bool fits_uint8() const noexcept { return qmin >= 0 && qmax <= 255; }
  bool fits_int16() const noexcept { return qmin >= -32768 && qmax <= 32767; }
  bool fits_uint16() const noexcept { return qmin >= 0 && qmax <= 65535; }
  /// Whether every zero point is 0 (symmetric: TF's QDQ, PyTorch's symmetric schemes).
  XQ_DECL bool symmetric() const noexcept;
};

/// The integers of a fake-quantized tensor `fq` (the quantizer's output on some input):
/// q = rint(fq / scale[c]) + zero_point[c], channels on `grid.channel_axis` when per
/// channel. Throws argument_error (naming `where`) if a value is not on the grid, i.e.
/// if `fq` is not an output of this grid's quantizer.
XQ_DECL std::vector<std::int32_t> grid_integers(const quantization_grid& grid, const tensor& fq,
                                                const std::string& where);

/// "int8 per-tensor scale 0.0123 zp 0 [-127, 127]" style, for reports and errors.
XQ_DECL std::string describe(const quantization_grid& grid);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantization_grid.ipp"
#endif
