#pragma once
/// \file tied_dense.hpp
/// `xq::tied_dense`: x · W (+ bias) with another layer's matrix W, untransposed: the
/// identity view of a shared weight (tied_projection is the transposed one). Two heads
/// that must apply the same matrix, or a layer reusing a dense kernel, hold one
/// parameter: the same `shared_ptr`, both uses' gradients added into it.
///
/// \code
///   xq::dense first(16);
///   xq::build(first, {1, 16});
///   xq::tied_dense second(first.kernel());      // the same (16, 16) kernel, its own bias
/// \endcode
///
/// The matrix keeps its owner's name; the layer lists only its bias in `parameters()`.

#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "dense.hpp"

namespace xq {

class tied_dense : public layer<tied_dense> {
 public:
  XQ_SPECIAL_MEMBERS(tied_dense)
  static constexpr layer_role role = layer_role::linear;
  /// Its matrix belongs to another layer, whose summary row counts it.
  static constexpr bool counts_macs = false;
  tied_dense() : layer<tied_dense>("tied_dense") {}
  /// Uses `matrix` (in, out) as its kernel: shares it, does not copy it.
  explicit XQ_DECL tied_dense(parameter_ptr matrix, bool use_bias = false);

  XQ_DECL var call(const var& x);

  /// The weighted-layer contract (weight_quantized.hpp): the tied matrix is the kernel.
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  XQ_DECL void ensure_built(const var&) const;
  XQ_DECL var call_with(const var& x, const var& kernel, const var& bias) const;

  /// Its own parameters: the bias only (the matrix belongs to its owner).
  std::vector<parameter_ptr> parameters() const { return {bias_}; }
  /// The matrix's slot and the bias's (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(kernel_);
    f(bias_);
  }

 private:
  parameter_ptr kernel_, bias_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tied_dense.ipp"
#endif
