#pragma once
/// \file real_linear_op.hpp
/// The engine's float linear op: a float convolution or dense layer computed with xquant's
/// own float kernels, so it computes what the simulation computed.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/tensor.hpp"
#include "lowered_op.hpp"
#include "window_geometry.hpp"

namespace xq::deploy {

/// A float convolution or dense layer (a float-input layer with binary weights, such as
/// a BNN's stem, or a layer the model leaves unquantized), with xquant's float kernels,
/// so it computes what the simulation computed (a ±1 kernel: within the rounding of the
/// sum's order, see unit_kernel). Its rule: a real input, NHWC with the kernel's input
/// channels (conv) or its input features on the last axis (dense), a bias per output.
class real_linear_op final : public lowered_op {
 public:
  bool dense = false, depthwise = false;
  tensor kernel;  ///< the kernel the simulation multiplies by (fake-quantized if it was)
  tensor bias;    ///< with has_bias
  bool has_bias = false;
  std::array<std::size_t, 2> strides{1, 1}, dilation{1, 1};
  int padding = 0;  ///< xq::padding as int (valid 0, same 1)
  float pad_value = 0.0f;
  /// dense only: x · kernelᵀ with the kernel (V, D) (a tied projection), as
  /// xq::ops::matmul_transposed computes it.
  bool transposed = false;
  /// conv only: the max pooling that followed it, fused (the lowering fuses it after a ±1
  /// kernel: unit_kernel_conv2d_max_pool_f32 never writes the full-size output).
  bool pooled = false;
  window_geometry pool;
  const char* kind() const noexcept override { return dense ? "real_dense" : "real_conv2d"; }
  /// A convolution whose kernel holds only ±1 and 0 (a binarized stem): the fast path
  /// sums its exact products in window order (unit_kernel_conv2d_f32, engine_kernels.hpp),
  /// the same bits for any batch size, within a K-term sum's rounding of the simulation's
  /// GEMM, whose order follows OpenBLAS's tiles. Other kernels, and the reference path, run
  /// xquant's im2col + BLAS GEMM, the simulation's own arithmetic on the same batch.
  XQ_DECL bool unit_kernel() const noexcept;
  bool batch_invariant() const noexcept override { return !dense && unit_kernel(); }
  XQ_DECL void run(std::vector<engine_tensor>& values, const run_options& o) const override;
  /// run's product on `x` (an input its rule accepted), without the op's value numbers:
  /// what another op that multiplies by a float kernel (low_bit_linear_op) computes with.
  XQ_DECL engine_tensor compute(const engine_tensor& x, const run_options& o) const;
  XQ_DECL std::string describe() const override;
  XQ_DECL engine_tensor infer(const std::vector<const engine_tensor*>& inputs, std::uint64_t& work) const override;
  XQ_DECL void encode(op_writer& w) const override;
  /// encode's fields but the kernel (geometry, bias, fused pool), and their reader: for an
  /// op that stores its kernel otherwise (low_bit_linear_op).
  XQ_DECL void encode_geometry(op_writer& w) const;
  XQ_DECL void decode_geometry(const op_reader& r);
  XQ_DECL std::size_t weight_bytes() const noexcept override;
  /// "real_conv2d", "real_dense".
  XQ_DECL static std::unique_ptr<lowered_op> decode(const std::string& kind, const op_reader& r);
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/real_linear_op.ipp"
#endif
