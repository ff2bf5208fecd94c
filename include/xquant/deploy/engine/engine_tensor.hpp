#pragma once
/// \file engine_tensor.hpp
/// `xq::deploy::engine_tensor`: what flows between the integer engine's operations.
///  - integer: 8-bit (or narrower) activations on one per-tensor grid, stored *centred*,
///    q - zero_point, in int16. Centring once at quantization means no kernel handles zero
///    points; int16 is the operand width of the exact x86 product (integer_gemm.hpp);
///  - accumulator: int32 sums (a binary layer's K - 2 * popcount before its batch norm);
///  - bits: ±1 activations, one bit per channel (bit 1 = -1), ceil(C / 64) words per pixel;
///  - real: float32, where the model itself is float (its input, logits, a layer left
///    unquantized).
/// Without its data, an engine_tensor describes a tensor before it is computed (its kind,
/// shape and grid): what each op's `infer` returns (lowered_op.hpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/tensor.hpp"

namespace xq::deploy {

enum class value_kind { real, integer, accumulator, bits };

/// "real", "integer", "accumulator", "bits".
XQ_DECL const char* to_string(value_kind k) noexcept;

/// The grid an op writes its integers on (the next quantizer's): real = (q - zero_point) *
/// scale, qmin <= q <= qmax.
struct integer_grid {
  float scale = 1.0f;
  std::int32_t zero_point = 0, qmin = -128, qmax = 127;
};

/// One tensor of the engine (see the file comment). Batch first: (N, H, W, C) or (N, C).
struct engine_tensor {
  value_kind kind = value_kind::real;
  std::vector<std::size_t> shape;
  std::vector<float> real;
  std::vector<std::int16_t> integer;  ///< q - zero_point
  std::vector<std::int32_t> accumulator;
  std::vector<std::uint64_t> bits;    ///< words_per_pixel() per pixel, bit 1 = -1
  /// integer: the grid, real = (q - zero_point) * scale with qmin <= q <= qmax.
  float scale = 1.0f;
  std::int32_t zero_point = 0, qmin = -128, qmax = 127;

  XQ_DECL std::size_t elements() const noexcept;
  std::size_t channels() const noexcept { return shape.empty() ? 0 : shape.back(); }
  std::size_t words_per_pixel() const noexcept { return (channels() + 63) / 64; }
  /// As floats: integer (q - zp) * scale, accumulator and bits (±1) as they are.
  XQ_DECL tensor to_real() const;
  /// The integers q (zero point added back): integer tensors only.
  XQ_DECL std::vector<std::int32_t> integers() const;
  /// The grid of an integer tensor.
  integer_grid grid() const noexcept { return {scale, zero_point, qmin, qmax}; }
  /// Sets the grid of an integer tensor.
  void set_grid(const integer_grid& g) noexcept {
    scale = g.scale;
    zero_point = g.zero_point;
    qmin = g.qmin;
    qmax = g.qmax;
  }
  /// Whether the data held is what kind and shape say (its one vector of elements() values,
  /// or of words for bits).
  XQ_DECL bool holds_data() const noexcept;
};

/// Whether two grids are the same (every field).
inline bool same_integer_grid(const integer_grid& a, const integer_grid& b) noexcept {
  return a.scale == b.scale && a.zero_point == b.zero_point && a.qmin == b.qmin && a.qmax == b.qmax;
}

/// "scale 0.1 zero point 0 [-128, 127]".
XQ_DECL std::string describe(const integer_grid& g);

/// Makes `t` a real tensor of `shape` holding `values` (data moved in).
XQ_DECL engine_tensor real_engine_tensor(std::vector<std::size_t> shape, std::vector<float> values);

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/engine_tensor.ipp"
#endif
