#pragma once
/// \file low_bit_specs.hpp
/// The low-bit formats' specs as plain data: which peer's function a format reproduces and
/// its block layout (element type, block or group size, axis). The numerics that run them are
/// in low_bit_float.hpp, torchao_affine.hpp, float8_scaled.hpp, mx_block.hpp and
/// nvfp4_block.hpp; this header is apart so that a configuration can name a format
/// (quantizer_config's `format`) without compiling its kernels.

#include <cstdint>

namespace xq::low_bit {

/// The element types (low_bit_float.hpp describes each).
enum class element_type : std::uint8_t { e4m3fn, e5m2, e3m2, e2m3, e2m1, ue4m3, e8m0 };

/// Which torchao fake quantizer an integer quantize-dequantize reproduces (torchao_affine.hpp's table).
enum class intx_scheme : std::uint8_t { intx_symmetric, intx_per_token, int4_weight_only };

/// A torchao integer format.
struct intx_spec {
  intx_scheme scheme = intx_scheme::intx_symmetric;
  int bits = 4;        ///< 2..8 (int4_weight_only: 4)
  int group_size = 32; ///< intx_symmetric, int4_weight_only: values per group; 0: the whole axis
  int axis = -1;       ///< the axis groups and rows run along
  float eps = 0.0f;    ///< the scale's lower bound; 0: float32's smallest normal (torchao's default)
  /// torchao's range learning (IntxFakeQuantizeConfig(range_learning=True), intx_symmetric
  /// weights): the first call's scales, clamped to >= 1e-9, become trainable parameters the
  /// later calls quantize with; their gradient is torch's autograd through the
  /// dequantizing product and the reciprocal (round's straight through).
  bool range_learning = false;
};

/// Which peer an FP8 quantize-dequantize reproduces.
enum class fp8_variant : std::uint8_t { torchao, transformer_engine };
/// One scale per tensor or per row.
enum class fp8_granularity : std::uint8_t { per_tensor, per_row };

/// An FP8 format.
struct fp8_spec {
  fp8_variant variant = fp8_variant::torchao;
  element_type element = element_type::e4m3fn;  ///< e4m3fn or e5m2
  fp8_granularity granularity = fp8_granularity::per_row;
  int axis = -1;  ///< per_row: the axis a row runs along (negative counts from the end)
};

/// Which peer function an MX quantize-dequantize reproduces (mx_block.hpp's table).
enum class mx_variant : std::uint8_t {
  torchao_floor,
  torchao_ceil,
  torchao_even,
  torchao_rceil,
  microxcaling_nearest,
  microxcaling_even,
  modelopt_mxfp4,
  modelopt_mxfp8,
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

/// Which peer function an NVFP4 quantize-dequantize reproduces (nvfp4_block.hpp's table).
enum class nvfp4_variant : std::uint8_t {
  torchao,
  torchao_one_level,
  transformer_engine,
  modelopt_qtensor,
  modelopt_triton,
};

/// An NVFP4 format: variant, TransformerEngine's 16x16 weight tiles, the axis of the blocks.
struct nvfp4_spec {
  nvfp4_variant variant = nvfp4_variant::torchao;
  bool tiles_16x16 = false;  ///< transformer_engine only: 16 block rows share one block scale
  int axis = -1;             ///< negative counts from the end
};

}  // namespace xq::low_bit
