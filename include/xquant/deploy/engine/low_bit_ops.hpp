#pragma once
/// \file low_bit_ops.hpp
/// The engine's low-bit ops (issue 36): the formats of quantizers/low_bit_format.hpp
/// (torchao's int4 groups and per-token int8, FP8, OCP MX, NVFP4) as a deployed model runs
/// them.
///
///  - `low_bit_quantize_op`: a dynamic activation quantizer — each tensor's scales from the
///    tensor itself, per token or block, with the format's own function, so its values are
///    the simulation's bit for bit (a parity point);
///  - `low_bit_linear_op`: a dense or convolution layer whose kernel is stored as the
///    format stores it — codes packed two per byte for 4-bit elements, block scales in their
///    own width (E8M0 and UE4M3: one byte; float32: four) and NVFP4's float32 tensor scale.
///    Its product is one of two (`product_kind`, lower_options::low_bit_product):
///      simulated: xquant's float product of the decoded kernel (decoded once, when the
///        model is made or loaded) and the input the simulation multiplies it by: what the
///        simulation computed, bit for bit (a batch norm folded in divides the decoded
///        kernel's channels as the simulation does);
///      integer (a dense layer, its kernel blocked along the reduction axis): the
///        block-scaled integer product (block_scaled_gemm.hpp) of the kernel's codes —
///        int4 two per byte, FP4 as twice its value — and the input's codes: torchao's
///        per-token int8 (8da4w), an FP4 input blocked as the kernel (MXFP4, NVFP4 W4A4),
///        or a static int8 grid (W4A8). Each block's sum is exact int32; the blocks add in
///        float in block_scaled_gemm's order, not in the simulation's float order: the
///        output is within that sum's rounding of the simulation's (the parity report's
///        SQNR says how far), the codes it multiplies are the simulation's.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../quantizers/low_bit_format.hpp"
#include "../../quantizers/quantization_grid.hpp"
#include "block_scaled_gemm.hpp"
#include "lowered_op.hpp"
#include "real_linear_op.hpp"

namespace xq::deploy {

/// A kernel as a low-bit format stores it: its shape, its grid (elements, blocks along the
/// reduction axis, scales) and its codes (integers or element codes), `bits` each.
struct packed_kernel {
  std::vector<std::size_t> shape;
  quantization_grid grid;
  /// Codes of `bits` (4 or 8) bits, element i in byte i / 2 (low nibble first) for 4 bits.
  std::vector<std::uint8_t> codes;
  int bits = 8;

  /// Packs the integers or codes of a grid (a weight_use's q.integers).
  XQ_DECL static packed_kernel pack(const std::vector<std::size_t>& shape, const quantization_grid& grid,
                                    const std::vector<std::int32_t>& integers);
  /// The integer or code of element i.
  XQ_DECL std::int32_t code(std::size_t i) const noexcept;
  /// The values the codes stand for: element · (scale · tensor scale), or (q - zp) · scale
  /// (+ the grid's offset: torchao's int4 weight-only), each operation rounded to float32
  /// (what DequantizeLinear, and its Add, compute, and the simulation).
  XQ_DECL tensor decode() const;
  /// Bytes of codes and scales as stored (scales in their storage width).
  XQ_DECL std::size_t stored_bytes() const noexcept;
  XQ_DECL std::size_t elements() const noexcept;
  /// Bits per element, scales included: 4.25 for MXFP4, 4.5 for NVFP4, 5 for int4 groups of
  /// 32 with float32 scales, 6 for int4 weight-only's (a float32 scale and zero point per 32).
  double bits_per_value() const noexcept { return elements() ? 8.0 * double(stored_bytes()) / double(elements()) : 0.0; }
};

/// real -> real: the format's quantize-dequantize, scales from each tensor.
class low_bit_quantize_op final : public lowered_op {
 public:
  low_bit_format format;
  const char* kind() const noexcept override { return "low_bit_quantize"; }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  /// Per-token and per-block scales only: a tensor-wide statistic (NVFP4's two-level
  /// amax, FP8 per tensor) depends on the batch, as in the simulation.
  XQ_DECL bool batch_invariant() const noexcept override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

/// A dense or convolution layer with a low-bit kernel (see the file comment). Input: the
/// real tensor the simulation multiplies the kernel by.
class low_bit_linear_op final : public lowered_op {
 public:
  /// The product (see the file comment). The integer kinds name the input's codes.
  enum class product_kind : std::uint8_t {
    simulated,       ///< the float product of the decoded kernel and the (quantized) input
    per_token_int8,  ///< input: the real tensor before `activation` (torchao's per-token int8)
    fp4_blocks,      ///< input: the real tensor before `activation` (MX FP4 or NVFP4, the kernel's blocks)
    static_int8      ///< input: integers on a per-tensor int8 grid
  };
  product_kind product_mode = product_kind::simulated;
  /// per_token_int8 and fp4_blocks: the input's format (its scales are each tensor's).
  low_bit_format activation;
  packed_kernel weights;
  /// A batch norm folded into the kernel: the decoded kernel's output channels divided by
  /// these (xq::ops::divide_channels), as the simulation divides them. Empty: none.
  std::vector<float> fold_divisor;
  /// The float product's geometry and bias (its kernel is the decoded one: `prepare`).
  real_linear_op product;

  const char* kind() const noexcept override { return product.dense ? "low_bit_dense" : "low_bit_conv2d"; }
  /// Decodes the kernel into `product` (call after setting the fields; decode does).
  XQ_DECL void prepare();
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  XQ_DECL std::string describe() const override;
  bool batch_invariant() const noexcept override { return product.batch_invariant(); }
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  /// The stored codes, scales and bias.
  XQ_DECL std::size_t weight_bytes() const noexcept override;
  /// "low_bit_dense", "low_bit_conv2d".
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);

  /// The integer product `kind` fits a dense layer with this kernel, fold and input format
  /// (for static_int8: `input_format` empty): the kernel blocked along its reduction axis
  /// (`transposed`: a (N, K) table), symmetric integers or FP4, a block the kernel accepts,
  /// no fold; the input's blocks those of the kernel (fp4_blocks).
  XQ_DECL static bool integer_product_fits(product_kind kind, const packed_kernel& w, bool transposed,
                                           bool folded, const low_bit_format& input_format);

 private:
  engine_tensor integer_product(const engine_tensor& x, const run_options& o) const;
  packed_block_scaled_matrix packed_;  ///< the integer product's weights (prepare)
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/low_bit_ops.ipp"
#endif
