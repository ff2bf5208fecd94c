#pragma once
/// \file dense.hpp
/// `xq::dense`: y = x · kernel + bias over the last axis (Keras Dense; kernel
/// layout (in, out)). The kernel is built on the first call from the input's last
/// axis, Glorot-uniform like Keras; the bias starts at zero.

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace ops {

/// x (..., in) · w (in, out) [+ b (out)] on the tape. `path` names the caller in errors.
XQ_DECL var matmul_bias(const var& x, const var& w, const var* b, const std::string& path = "matmul");

/// matmul_bias whose sums (x · w, shape x's with the last axis `out`) the caller computed
/// with a faster kernel for special operands (wrappers/xnor_forward.hpp: XNOR-popcount of
/// ±1 values, the float product's sums bit for bit); the bias is added, the backward is
/// matmul_bias's.
XQ_DECL var matmul_bias_with_sums(const var& x, const var& w, const var* b, tensor sums,
                                  const std::string& path = "matmul");

}  // namespace ops

/// Fully connected layer (Keras Dense, no activation).
class dense : public layer<dense> {
 public:
  XQ_SPECIAL_MEMBERS(dense)
  static constexpr layer_role role = layer_role::linear;
  XQ_DECL explicit dense(std::size_t units = 1, bool use_bias = true);

  XQ_DECL var call(const var& x);

  /// Builds the parameters from `x`'s last axis unless built (what the first call does).
  XQ_DECL void ensure_built(const var& x);
  /// x · kernel + bias with `kernel` and `bias` (undefined: none) in place of the layer's
  /// own: how a quantized twin runs it with a fake-quantized (or folded) kernel.
  XQ_DECL var call_with(const var& x, const var& kernel, const var& bias) const;

  /// Creates the parameters for `in` input features (the first call does it).
  XQ_DECL void build(std::size_t in);

  XQ_DECL std::vector<parameter_ptr> parameters() const;
  /// Each stored parameter slot, null ones included (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(kernel_);
    f(bias_);
  }
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  std::size_t units() const noexcept { return units_; }
  bool use_bias() const noexcept { return use_bias_; }

 private:
  std::size_t units_;
  bool use_bias_;
  parameter_ptr kernel_, bias_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/dense.ipp"
#endif
