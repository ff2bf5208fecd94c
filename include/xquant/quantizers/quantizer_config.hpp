#pragma once
/// \file quantizer_config.hpp
/// What a `fake_quantizer` does: whose fake-quant operator it runs (the
/// numerics), on which integer grid, and how its stored range follows the
/// training batches. The defaults are NVIDIA's TF2 toolkit (docs/semantics.md §4):
/// 8-bit symmetric narrow QDQ, last-value range.
///
/// \code
///   xq::quantizer_config c;                       // NVIDIA: 8-bit symmetric narrow tf_qdq
///   c.per_channel = true;  c.channel_axis = 2;    // a depthwise kernel (KH, KW, C, M)
///   xq::quantizer_config act;                     // tfmot's activation quantizer
///   act.numerics = xq::quant_numerics::tf_fake_quant;
///   act.symmetric = false;  act.narrow_range = false;
///   act.tracking = xq::range_tracking::moving_average;
/// \endcode

#include <string>

#include "../config.hpp"
#include "low_bit_format.hpp"

namespace xq {

/// Whose operator rounds (docs/semantics.md §1-§5).
enum class quant_numerics {
  tf_qdq,           ///< TF quantize_and_dequantize_v4, range given (NVIDIA's toolkit, §2, §4)
  tf_fake_quant,    ///< TF fake_quant_with_min_max_vars[_per_channel] (tfmot, §1, §3)
  torch_fake_quant  ///< PyTorch fake_quantize_per_{tensor,channel}_affine + observer qparams (§5)
};

/// How the stored range follows the batches.
enum class range_tracking {
  last_value,      ///< the last training batch's range
  moving_average,  ///< tf: EMA with ema_decay from the initial range; torch: first batch, then c
  all_values       ///< the running min and max of every batch (tf: from 0 / 0)
};

struct quantizer_config {
  int num_bits = 8;
  bool symmetric = true;
  /// tf: the narrow grid ([-127, 127] / [1, 255] at 8 bits); torch: quant_min
  /// -127 for the symmetric grid (PyTorch's affine grids have no narrow form,
  /// so it is ignored there).
  bool narrow_range = true;
  bool per_channel = false;
  int channel_axis = -1;  ///< the channel axis when per_channel; negative counts from the end
  quant_numerics numerics = quant_numerics::tf_qdq;
  range_tracking tracking = range_tracking::last_value;
  double ema_decay = 0.999;          ///< tf numerics, moving_average (tfmot MovingAvgQuantize)
  double averaging_constant = 0.01;  ///< torch numerics, moving_average (MovingAverageMinMaxObserver)
  bool reduce_range = false;         ///< torch: halve the integer range
  float init_min = -6.0f, init_max = 6.0f;  ///< tf numerics: the range variables before any batch
  /// A low-bit block format run in place of the integer grid (low_bit_format.hpp): scales
  /// from each tensor, no range kept; the fields above then do not apply.
  low_bit_format format;
};

/// "tf_qdq", "tf_fake_quant", "torch_fake_quant".
XQ_DECL const char* to_string(quant_numerics n) noexcept;

/// "last_value", "moving_average", "all_values".
XQ_DECL const char* to_string(range_tracking t) noexcept;

/// "8-bit symmetric narrow per-channel(axis -1) tf_qdq last_value" style one-line
/// description, for summaries and errors.
XQ_DECL std::string describe(const quantizer_config& c);

/// The num_bits a numerics accepts: [2, 16] for FakeQuant (TF's own limit) and
/// PyTorch, [2, 61] for TF QDQ (TF takes (0, 62); one bit has no symmetric grid).
inline int max_num_bits(quant_numerics n) noexcept { return n == quant_numerics::tf_qdq ? 61 : 16; }

/// Throws argument_error (at `where`: the quantizer's path) when the options
/// cannot work together; says which option and what it accepts.
XQ_DECL void validate(const quantizer_config& c, const std::string& where);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantizer_config.ipp"
#endif
