#pragma once
/// \file quantization_grid.hpp
/// `xq::quantization_grid`: the values a quantizer's output stands for, as data. Every
/// quantizer xquant has returns reals of the form
///
///     real = (q - zero_point) * scale,   qmin <= q <= qmax
///
/// with one scale and zero point per tensor, per channel or per block of `block_size`
/// elements along an axis (and torchao's int4 weight-only, a float `offset` added after). Deployment needs the q's and the grid, not the reals: an ONNX
/// file stores q and (scale, zero_point) for DequantizeLinear, and the integer engine
/// computes on q. Each quantizer knows its own grid (`quantizer_base::grid_of`): TF's QDQ
/// is symmetric with zero point 0 and its step is max/qmax or min/qmin, whichever side is
/// larger (ComputeQuantizationRange); TF's FakeQuant is unsigned over the nudged range;
/// PyTorch's is the observer's qparams; Larq's signs are ±1 (`grid_element::binary`),
/// MagnitudeAwareSign's with a scale per channel.
///
/// The element need not be an integer: the FP8, FP6 and FP4 element types of the low-bit
/// formats (OCP MX, NVFP4) are described here too, with one or two levels of scale (a
/// float32, E8M0 or UE4M3 scale per block, times an optional float32 tensor scale); q is
/// then the element's code (its bits) and real = value(q) * scale * tensor_scale.
///
/// Which integers a real gets is not a property of the grid alone: next to a rounding tie
/// and at the ends of the range the peers' operators disagree (ONNX's QuantizeLinear
/// divides and rounds half to even, TF's FakeQuant rounds half up after nudging,
/// PyTorch multiplies by a reciprocal). So the grid carries a `rounding_rule`: which
/// operator the simulation rounds with, and that operator's constants. quantize_on_grid.hpp
/// computes those integers; `grid_integers` below recovers them from the simulation's own
/// output: real is (q - zp) * scale rounded once to float, so the quotient is within a
/// few ulps of an integer of magnitude at most 2^16 and rint gives q exactly.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/tensor.hpp"

namespace xq {

/// What a grid's elements are.
enum class grid_element : std::uint8_t {
  integer,     ///< integers qmin..qmax (signed when qmin < 0), num_bits of them
  binary,      ///< -1 or +1 (Larq's signs): one bit each, q is -1 or +1
  fp8_e4m3fn,  ///< OCP FP8 E4M3 "FN": bias 7, no infinities, NaN = S.1111.111, max 448
  fp8_e5m2,    ///< OCP FP8 E5M2: bias 15, IEEE-like (infinities, NaNs), max 57344
  fp6_e3m2,    ///< OCP MX FP6 E3M2: bias 3, no infinities or NaNs, max 28
  fp6_e2m3,    ///< OCP MX FP6 E2M3: bias 1, no infinities or NaNs, max 7.5
  fp4_e2m1     ///< OCP MX / NVFP4 FP4 E2M1: bias 1, no infinities or NaNs, max 6
};

/// How a grid's scales (the first level) are stored.
enum class scale_element : std::uint8_t {
  float32,  ///< any finite positive float
  e8m0,     ///< OCP MX's shared exponent: a power of two, 2^-127 to 2^127
  ue4m3     ///< NVFP4's block scale: a positive FP8 E4M3 value
};

/// Per tensor, per channel (`per_channel`), or per block (`block_size` > 0).
enum class grid_granularity : std::uint8_t { per_tensor, per_channel, per_block };

/// Which peer operator maps reals to the grid's integers in the simulation.
enum class rounding_operator : std::uint8_t {
  /// ONNX QuantizeLinear: saturate(rint(x / scale) + zero_point), a float32 division,
  /// ties to even: what onnxruntime computes from the grid alone.
  quantize_linear,
  /// TF quantize_and_dequantize_v4 with the range given (NVIDIA's QDQ): x clamped to the
  /// adjusted range, times qmax / max (or qmin / min), rounded half to even or half up.
  tf_qdq,
  /// TF fake_quant_with_min_max_vars[_per_channel] (tfmot): x clamped to the nudged
  /// range, floor(v + 0.5) on the shifted value; per tensor the Vars op divides, the Args
  /// op and the per-channel op multiply by (qmax - qmin) / (max - min).
  tf_fake_quant,
  /// PyTorch fake_quantize_per_{tensor,channel}_affine: zp + rint(x * (1 / scale)), clamped;
  /// per block, torchao's groups and tokens (its _fake_quantize_affine)
  /// (a range wider than 2^24 levels in int64, as PyTorch does).
  torch_affine,
  /// PyTorch fake_quantize_per_channel_affine with float zero points
  /// (per_channel_affine_float_qparams): lrintf(zp + x * (1 / scale)), one fused
  /// multiply-add in torch's AVX2 and AVX-512 builds (`fused_multiply_add`).
  torch_affine_float_zero_point,
  /// PyTorch _fake_quantize_learnable_per_tensor_affine (LSQ): the learned float zero
  /// point rounded half to even and clamped, then torch_affine.
  lsq,
  /// DoReFa (Larq) activations: rint(clip(x, 0, 1) * n), n = qmax.
  dorefa_activations,
  /// DoReFa (Larq) weights: 2 * rint((tanh(x) / two_max + 1/2) * n) - n, n = qmax,
  /// two_max = 2 max |tanh(w)| over the weight.
  dorefa_weights,
  /// Larq's sign: +1 for x >= 0, -1 below (a denormal reads as 0, as under TF's flushing).
  sign,
  /// Larq's heaviside: 1 for x > 0, else 0.
  heaviside,
  /// Larq's SteTern: +1 for x >= threshold, -1 for x <= -threshold, else 0.
  ternary,
  /// torchao's int4 weight-only groups (Int4WeightFakeQuantizer): q = clamp(rint((x - min) /
  /// scale), 0, 15), a float32 division by the step and half to even, `range_min` each
  /// group's min; the grid's zero point is 8 and its `offset` the group's float zero point
  /// min + 8 · scale.
  torchao_int4_weight_only
};

/// How the simulation rounds onto a grid: the operator and its constants (see
/// `rounding_operator`). Plain data: it saves and loads with the grid.
struct rounding_rule {
  rounding_operator op = rounding_operator::quantize_linear;
  /// tf_qdq: TF's HALF_TO_EVEN (true, NVIDIA's) or HALF_UP.
  bool half_to_even = true;
  /// tf_fake_quant: the formula of TF before 2.6 (`xq::tf::revision::legacy`).
  bool legacy = false;
  /// tf_fake_quant per tensor: multiply by the inverse step (FakeQuantWithMinMaxArgs)
  /// rather than divide by the step (FakeQuantWithMinMaxVars, tfmot's).
  bool product = false;
  /// tf_qdq, tf_fake_quant: the range each channel's operator is given (one per scale).
  std::vector<float> range_min, range_max;
  /// torch_affine_float_zero_point (one per scale), lsq (one): the float zero points.
  std::vector<float> float_zero_point;
  /// torch_affine_float_zero_point: zp + x * inv as one FMA (torch's AVX2 / AVX-512 builds).
  bool fused_multiply_add = false;
  /// ternary: the threshold Δ.
  float threshold = 0.0f;
  /// dorefa_weights: 2 · max |tanh(w)| (0: every weight maps to the middle level).
  float two_max = 0.0f;
};

struct quantization_grid {
  std::vector<float> scale;              ///< one per tensor, channel or block (row-major over the scale shape)
  std::vector<std::int32_t> zero_point;  ///< as many as `scale` (integer and binary elements; 0 for binary)
  std::int32_t qmin = -128;              ///< the smallest integer the operator produces
  std::int32_t qmax = 127;               ///< the largest (narrow range, < 8 bits and reduce_range show here)
  bool per_channel = false;
  int channel_axis = -1;  ///< per channel or per block: the axis (negative counts from the end)
  int num_bits = 8;       ///< bits per element
  /// Per block: `block_size` consecutive elements along `channel_axis` share a scale (ONNX's
  /// blocked layout: the scales have the tensor's shape with that axis ceil(D / block_size)
  /// long). 0: not blocked.
  std::size_t block_size = 0;
  grid_element element = grid_element::integer;
  /// How `scale` is stored: float32, or the low-bit formats' E8M0 / UE4M3 block scales.
  scale_element scale_type = scale_element::float32;
  /// The second level of a two-level scale (NVFP4's float32 per tensor): real = value *
  /// scale[block] * tensor_scale.
  std::optional<float> tensor_scale;
  /// The scales are computed from each tensor the quantizer sees (per-token activations,
  /// MagnitudeAwareSign's mean |w|, DoReFa's max |tanh w|); the values here are those of
  /// the tensor grid_of was given.
  bool dynamic = false;
  /// How the simulation maps reals to the integers (quantize_on_grid.hpp).
  rounding_rule rounding;
  /// A float added after the product, one per scale (empty: none): real = (q - zero_point)
  /// · scale + offset, each operation rounded to float32. torchao's int4 weight-only
  /// dequantizes so ((q - 8) · scale + its float zero point): no integer zero point gives
  /// those reals, so the offset travels with the grid, and every consumer either adds it
  /// (the engine's decoded kernel, ONNX's DequantizeLinear followed by an Add) or refuses.
  std::vector<float> offset;

  std::size_t channels() const noexcept { return scale.size(); }
  grid_granularity granularity() const noexcept {
    return block_size ? grid_granularity::per_block
                      : per_channel ? grid_granularity::per_channel : grid_granularity::per_tensor;
  }
  /// Whether every integer fits int8 / uint8 (the ONNX storage types of 8-bit grids), or
  /// int16 / uint16 (QuantizeLinear's from opset 21).
  bool fits_int8() const noexcept { return qmin >= -128 && qmax <= 127; }
  bool fits_uint8() const noexcept { return qmin >= 0 && qmax <= 255; }
  bool fits_int16() const noexcept { return qmin >= -32768 && qmax <= 32767; }
  bool fits_uint16() const noexcept { return qmin >= 0 && qmax <= 65535; }
  /// Whether every zero point is 0 (symmetric: TF's QDQ, PyTorch's symmetric schemes).
  XQ_DECL bool symmetric() const noexcept;
};

/// Larq's sign as a grid: ±1 with one scale 1, rounded by rounding_operator::sign (the grid
/// of ste_sign, approx_sign and swish_sign).
XQ_DECL quantization_grid sign_grid();

/// "integer", "binary", "fp8_e4m3fn", ... (the names files and messages use).
XQ_DECL const char* to_string(grid_element e) noexcept;
/// "float32", "e8m0", "ue4m3".
XQ_DECL const char* to_string(scale_element e) noexcept;
/// "quantize_linear", "tf_qdq", "tf_fake_quant", "torch_affine", ...
XQ_DECL const char* to_string(rounding_operator r) noexcept;
/// The inverses of to_string: nullopt for another name.
XQ_DECL std::optional<grid_element> grid_element_from_string(const std::string& name) noexcept;
XQ_DECL std::optional<scale_element> scale_element_from_string(const std::string& name) noexcept;
XQ_DECL std::optional<rounding_operator> rounding_operator_from_string(const std::string& name) noexcept;

/// Whether the element type is a float format (FP8, FP6, FP4).
constexpr bool is_float_element(grid_element e) noexcept {
  return e != grid_element::integer && e != grid_element::binary;
}
/// Whether `g` is a low-bit format's grid (quantizers/low_bit_format.hpp): blocked, of float
/// elements, or with offsets. Deployment stores these kernels packed as the format stores
/// them (the engine's low_bit_ops.hpp, ONNX's onnx_low_bit.ipp), never through the int8 path.
inline bool is_low_bit_grid(const quantization_grid& g) noexcept {
  return g.block_size > 0 || is_float_element(g.element) || !g.offset.empty();
}
/// Bits of a float element type (8, 6 or 4; 0 for integer and binary).
XQ_DECL int element_bits(grid_element e) noexcept;
/// The value of a float element's code (its low element_bits bits; NaN for E4M3FN's and
/// E5M2's NaN codes, ±infinity for E5M2's).
XQ_DECL float element_value(grid_element e, std::uint32_t code) noexcept;
/// The code of `value` if the element type holds it exactly (a zero keeps its sign), else nullopt.
XQ_DECL std::optional<std::uint32_t> element_code(grid_element e, double value) noexcept;
/// Whether `scale_type` stores `s` exactly (float32: any finite positive float).
XQ_DECL bool representable_scale(scale_element scale_type, float s) noexcept;

/// Checks that the grid is consistent in itself: its element and bits, the integer range,
/// a zero point per scale inside it, finite positive scales representable in the scale type
/// (0 allowed for a binary grid: MagnitudeAwareSign's scale of an all-zero channel), the
/// granularity (an axis for per channel and per block, not both), and the rounding
/// rule's constants against the scale count. Throws argument_error naming `where`.
XQ_DECL void check_grid(const quantization_grid& grid, const std::string& where);

/// How many scales the grid has for a tensor of `shape` (1 per tensor, the axis length per
/// channel, outer · ceil(D / block_size) · inner per block). argument_error naming `where`
/// for an axis out of range.
XQ_DECL std::size_t grid_scale_count(const quantization_grid& grid, const std::vector<std::size_t>& shape,
                                     const std::string& where);

/// Throws argument_error naming `where` unless the grid is consistent (check_grid) and has
/// as many scales as a tensor of `shape` needs.
XQ_DECL void check_grid_for(const quantization_grid& grid, const std::vector<std::size_t>& shape,
                            const std::string& where);

/// The integers of a quantized tensor `fq` (the quantizer's output on some input):
/// q = rint(fq / scale) + zero_point with the scale and zero point of each element's
/// tensor, channel or block (a float zero point: rint(fq / scale + zp)); ±1 on a binary grid
/// (+1 where the scale is 0); the element's code on a float grid. Throws argument_error
/// (naming `where`) if a value is not on the grid, i.e. if `fq` is not an output of this
/// grid's quantizer.
XQ_DECL std::vector<std::int32_t> grid_integers(const quantization_grid& grid, const tensor& fq,
                                                const std::string& where);

/// "int8 per-tensor scale 0.0123 zero point 0 [-127, 127]" style, for reports and errors;
/// "binary ±1 per-channel(axis -1, 16 scales)", "fp4_e2m1 per-block(axis -1, block 16, 8
/// ue4m3 scales) x tensor scale 0.5", "... dynamic" for the other kinds.
XQ_DECL std::string describe(const quantization_grid& grid);

namespace detail {
/// Calls f(first, count, scale_index, scale_step) for runs of `count` consecutive elements
/// of a row-major tensor laid out as (outer, axis_length, inner) around the grid's axis
/// (per tensor: any split): element first + k has scale scale_index + k * scale_step
/// (step 0: one scale for the run; 1: consecutive scales, per block).
template <class F>
void for_each_scale_run(const quantization_grid& grid, std::size_t outer, std::size_t axis_length, std::size_t inner,
                        F&& f) {
  switch (grid.granularity()) {
    case grid_granularity::per_tensor: f(std::size_t(0), outer * axis_length * inner, std::size_t(0), std::size_t(0)); return;
    case grid_granularity::per_channel:
      for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t c = 0; c < axis_length; ++c) f((o * axis_length + c) * inner, inner, c, std::size_t(0));
      return;
    case grid_granularity::per_block: {
      const std::size_t blocks = (axis_length + grid.block_size - 1) / grid.block_size;
      for (std::size_t o = 0; o < outer; ++o)
        for (std::size_t i = 0; i < axis_length; ++i)
          f((o * axis_length + i) * inner, inner, (o * blocks + i / grid.block_size) * inner, std::size_t(1));
      return;
    }
  }
}
}  // namespace detail

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantization_grid.ipp"
#endif
