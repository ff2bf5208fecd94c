#pragma once
/// \file dense.ipp
/// dense's code (layers/dense.hpp).

#include <algorithm>

#include "../dense.hpp"
#include "../../core/op_observer.hpp"
#include "../../core/random.hpp"
#include "../../core/shape_check.hpp"
#include "../../kernels/gemm.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(dense)

namespace detail {

/// matmul_bias and matmul_bias_with_sums: `given` (when not null) holds the sums.
XQ_DECL var matmul_bias_op(const var& x, const var& w, const var* b, const std::string& path, tensor* given) {
  if (w.dimension() != 2)
    throw shape_error(path, "kernel of rank 2 (in, out)", detail::shape_string(w.shape()));
  const std::size_t in = w.shape()[0], out = w.shape()[1];
  if (x.dimension() < 2 || x.shape().back() != in) {
    std::vector<detail::axis_spec> axes(std::max<std::size_t>(x.dimension(), 2), detail::any('?'));
    axes[0] = detail::any('N');
    axes.back() = detail::exactly(in);
    throw shape_error(path, detail::concat("input of shape ", detail::describe(axes)),
                      detail::shape_string(x.shape()));
  }
  const std::size_t rows = x.size() / in;
  tensor::shape_type y_shape = x.shape();
  y_shape.back() = out;
  tensor y = given ? std::move(*given) : tensor::from_shape(y_shape);
  if (given) {
    if (y.shape() != y_shape)
      throw shape_error(path + " (given sums)", detail::shape_string(y_shape), detail::shape_string(y.shape()));
    if (b)
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < out; ++j) y.data()[r * out + j] += b->value().data()[j];
  } else {
    if (b) {
      for (std::size_t r = 0; r < rows; ++r) std::copy(b->value().begin(), b->value().end(), y.data() + r * out);
    }
    kernels::gemm(false, false, rows, out, in, 1.0f, x.value().data(), in, w.value().data(), out,
                  b ? 1.0f : 0.0f, y.data(), out);
  }
  notify_op(path, "matmul", y.shape(), w.shape());  // for xq::summarize's MAC count

  const bool record = b ? needs_grad(x, w, *b) : needs_grad(x, w);
  var bias = b ? *b : var();
  return make_result(std::move(y), record, [x, w, bias, rows, in, out](const tensor& dy) {
    if (x.requires_grad()) {  // dx = dy · wᵀ
      tensor dx = tensor::from_shape(x.shape());
      kernels::gemm(false, true, rows, in, out, 1.0f, dy.data(), out, w.value().data(), out, 0.0f,
                    dx.data(), in);
      add_grad(x, std::move(dx));
    }
    if (w.requires_grad()) {  // dw = xᵀ · dy
      tensor dw = tensor::from_shape(w.shape());
      kernels::gemm(true, false, in, out, rows, 1.0f, x.value().data(), in, dy.data(), out, 0.0f,
                    dw.data(), out);
      add_grad(w, std::move(dw));
    }
    if (bias.defined() && bias.requires_grad()) {  // db = sum over rows of dy
      tensor db = xt::zeros<float>({out});
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < out; ++j) db.data()[j] += dy.data()[r * out + j];
      add_grad(bias, std::move(db));
    }
  });
}

}  // namespace detail

namespace ops {

XQ_DECL var matmul_bias(const var& x, const var& w, const var* b, const std::string& path) {
  return detail::matmul_bias_op(x, w, b, path, nullptr);
}

XQ_DECL var matmul_bias_with_sums(const var& x, const var& w, const var* b, tensor sums, const std::string& path) {
  return detail::matmul_bias_op(x, w, b, path, &sums);
}

}  // namespace ops

XQ_DECL var dense::call(const var& x) {
  ensure_built(x);
  return call_with(x, kernel_, bias_ ? var(bias_) : var());
}

XQ_DECL void dense::ensure_built(const var& x) {
  if (!kernel_) build(x.dimension() >= 1 ? x.shape().back() : 0);
}

XQ_DECL var dense::call_with(const var& x, const var& kernel, const var& bias) const {
  return ops::matmul_bias(x, kernel, bias.defined() ? &bias : nullptr, path());
}

XQ_DECL void dense::build(std::size_t in) {
  if (in == 0) throw shape_error(path(), "input with a last axis of at least 1", "an empty last axis");
  kernel_ = make_parameter("kernel", glorot_uniform({in, units_}, in, units_));
  if (use_bias_) bias_ = make_parameter("bias", xt::zeros<float>({units_}));
  name_parameters();
}

XQ_DECL dense::dense(std::size_t units, bool use_bias) : layer<dense>("dense"), units_(units), use_bias_(use_bias) {
  if (units == 0) throw argument_error("dense", "units of at least 1 (as Keras's Dense)", "0");
}

XQ_DECL std::vector<parameter_ptr> dense::parameters() const { return {kernel_, bias_}; }

}  // namespace xq
