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

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "dense.hpp"

namespace xq {

class tied_dense : public layer<tied_dense> {
 public:
  static constexpr layer_role role = layer_role::linear;
  /// Its matrix belongs to another layer, whose summary row counts it.
  static constexpr bool counts_macs = false;
  tied_dense() : layer<tied_dense>("tied_dense") {}
  /// Uses `matrix` (in, out) as its kernel: shares it, does not copy it.
  explicit tied_dense(parameter_ptr matrix, bool use_bias = false)
      : layer<tied_dense>("tied_dense"), kernel_(std::move(matrix)) {
    if (!kernel_) throw argument_error(path(), "a built matrix parameter to tie to", "a null parameter (not built yet?)");
    if (kernel_->value.dimension() != 2)
      throw shape_error(path(), "a matrix of rank 2 (in, out) to tie to", detail::shape_string(kernel_->value.shape()));
    if (use_bias) bias_ = make_parameter("bias", xt::zeros<float>({kernel_->value.shape()[1]}));
    name_parameters();
  }

  var call(const var& x) {
    ensure_built(x);
    return call_with(x, kernel_, bias_ ? var(bias_) : var());
  }

  /// The weighted-layer contract (weight_quantized.hpp): the tied matrix is the kernel.
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  void ensure_built(const var&) const {
    if (!kernel_) throw argument_error(path(), "a matrix tied at construction", "a default-constructed tied_dense");
  }
  var call_with(const var& x, const var& kernel, const var& bias) const {
    return ops::matmul_bias(x, kernel, bias.defined() ? &bias : nullptr, path());
  }

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
