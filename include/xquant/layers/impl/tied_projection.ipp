#pragma once
/// \file tied_projection.ipp
/// tied_projection's code (layers/tied_projection.hpp).

#include <algorithm>

#include "../tied_projection.hpp"
#include "../../kernels/gemm.hpp"
#include "../../kernels/im2col.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(tied_projection)

namespace ops {

XQ_DECL var matmul_transposed(const var& x, const var& w, const var* b, const std::string& path) {
  if (w.dimension() != 2)
    throw shape_error(path, "a matrix of rank 2 (V, D)", detail::shape_string(w.shape()));
  const std::size_t v = w.shape()[0], d = w.shape()[1];
  if (x.dimension() < 1 || x.shape().back() != d)
    throw shape_error(path, detail::concat("input of shape (..., ", d, ")"), detail::shape_string(x.shape()));
  if (b) detail::require_shape(path, b->shape(), {detail::exactly(v)}, "bias");
  const std::size_t rows = x.size() / d;
  tensor::shape_type shape = x.shape();
  shape.back() = v;
  tensor y = tensor::from_shape(shape);
  if (b)
    for (std::size_t r = 0; r < rows; ++r) std::copy(b->value().begin(), b->value().end(), y.data() + r * v);
  kernels::gemm(false, true, rows, v, d, 1.0f, x.value().data(), d, w.value().data(), d, b ? 1.0f : 0.0f, y.data(), v);
  const var bias = b ? *b : var();
  const bool record = b ? needs_grad(x, w, *b) : needs_grad(x, w);
  return make_result(std::move(y), record, [x, w, bias, rows, v, d](const tensor& dy) {
    if (x.requires_grad()) {  // dx = dy · w
      tensor dx = tensor::from_shape(x.shape());
      kernels::gemm(false, false, rows, d, v, 1.0f, dy.data(), v, w.value().data(), d, 0.0f, dx.data(), d);
      add_grad(x, std::move(dx));
    }
    if (w.requires_grad()) {  // dw = dyᵀ · x
      tensor dw = tensor::from_shape(w.shape());
      kernels::gemm(true, false, v, d, rows, 1.0f, dy.data(), v, x.value().data(), d, 0.0f, dw.data(), d);
      add_grad(w, std::move(dw));
    }
    if (bias.defined() && bias.requires_grad()) {
      tensor db = xt::zeros<float>({v});
      kernels::add_column_sums(dy.data(), rows, v, db.data());
      add_grad(bias, std::move(db));
    }
  });
}

}  // namespace ops

XQ_DECL var tied_projection::call(const var& x) {
  ensure_built(x);
  return call_with(x, table_, bias_ ? var(bias_) : var());
}

XQ_DECL void tied_projection::ensure_built(const var&) const {
  if (!table_) throw argument_error(path(), "a table tied at construction", "a default-constructed projection");
}

XQ_DECL var tied_projection::call_with(const var& x, const var& table, const var& bias) const {
  return ops::matmul_transposed(x, table, bias.defined() ? &bias : nullptr, path());
}

XQ_DECL tied_projection::tied_projection(parameter_ptr matrix, bool use_bias, const char* expected)
    : layer<tied_projection>("tied_projection"), table_(std::move(matrix)) {
  if (!table_) throw argument_error(path(), expected, "a null parameter (not built yet?)");
  if (table_->value.dimension() != 2)
    throw shape_error(path(), "a matrix of rank 2 to tie to", detail::shape_string(table_->value.shape()));
  if (use_bias) bias_ = make_parameter("bias", xt::zeros<float>({table_->value.shape()[0]}));
  name_parameters();
}

}  // namespace xq
