#pragma once
/// \file tied_dense.ipp
/// tied_dense's code (layers/tied_dense.hpp).

#include "../tied_dense.hpp"
#include "../../core/shape_check.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(tied_dense)

XQ_DECL tied_dense::tied_dense(parameter_ptr matrix, bool use_bias)
    : layer<tied_dense>("tied_dense"), kernel_(std::move(matrix)) {
  if (!kernel_) throw argument_error(path(), "a built matrix parameter to tie to", "a null parameter (not built yet?)");
  if (kernel_->value.dimension() != 2)
    throw shape_error(path(), "a matrix of rank 2 (in, out) to tie to", detail::shape_string(kernel_->value.shape()));
  if (use_bias) bias_ = make_parameter("bias", xt::zeros<float>({kernel_->value.shape()[1]}));
  name_parameters();
}

XQ_DECL var tied_dense::call(const var& x) {
  ensure_built(x);
  return call_with(x, kernel_, bias_ ? var(bias_) : var());
}

XQ_DECL void tied_dense::ensure_built(const var&) const {
  if (!kernel_) throw argument_error(path(), "a matrix tied at construction", "a default-constructed tied_dense");
}

XQ_DECL var tied_dense::call_with(const var& x, const var& kernel, const var& bias) const {
  return ops::matmul_bias(x, kernel, bias.defined() ? &bias : nullptr, path());
}

}  // namespace xq
