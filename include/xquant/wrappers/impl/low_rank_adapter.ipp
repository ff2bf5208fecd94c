#pragma once
/// \file low_rank_adapter.ipp
/// low_rank_adapter's code (wrappers/low_rank_adapter.hpp).

#include <algorithm>
#include <cmath>
#include <random>

#include "../low_rank_adapter.hpp"
#include "../../core/error.hpp"
#include "../../core/random.hpp"
#include "../../core/shape_check.hpp"
#include "../../kernels/gemm.hpp"

namespace xq {

namespace detail {

/// The kernel as (rows, cols), cols its last axis.
struct kernel_matrix {
  std::size_t rows = 0, cols = 0;
};

XQ_DECL kernel_matrix kernel_matrix_of(const tensor::shape_type& shape, const std::string& path) {
  if (shape.size() < 2) throw shape_error(path, "a kernel of rank 2 or more for a low-rank adapter", shape_string(shape));
  kernel_matrix m;
  m.cols = shape.back();
  m.rows = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) m.rows *= shape[i];
  return m;
}

XQ_DECL std::vector<parameter_ptr> with_adapter_parameters(std::vector<parameter_ptr> params,
                                                           const low_rank_adapter* adapter) {
  if (adapter) {
    params.push_back(adapter->down);
    params.push_back(adapter->up);
  }
  return params;
}

/// out = K + scale · A·B (out may be a fresh tensor of K's shape).
XQ_DECL void add_low_rank_product(const tensor& kernel, const low_rank_adapter& a, tensor& out, const std::string& path) {
  const kernel_matrix m = kernel_matrix_of(kernel.shape(), path);
  const std::size_t r = a.rank();
  if (!a.down || !a.up || a.down->value.shape() != tensor::shape_type{m.rows, r} ||
      a.up->value.shape() != tensor::shape_type{r, m.cols})
    throw shape_error(path + "/lora", concat("A (", m.rows, ", r) and B (r, ", m.cols, ") for the kernel ", shape_string(kernel.shape())),
                      a.down && a.up ? concat("A ", shape_string(a.down->value.shape()), ", B ", shape_string(a.up->value.shape()))
                                     : std::string("a missing factor"));
  std::copy(kernel.begin(), kernel.end(), out.begin());
  kernels::gemm(false, false, m.rows, m.cols, r, a.scale, a.down->value.data(), r, a.up->value.data(), m.cols, 1.0f,
                out.data(), m.cols);
}

}  // namespace detail

XQ_DECL low_rank_adapter make_low_rank_adapter(const tensor::shape_type& kernel_shape, std::size_t rank, float alpha,
                                               std::uint32_t seed, const std::string& path) {
  const detail::kernel_matrix m = detail::kernel_matrix_of(kernel_shape, path);
  if (rank == 0 || rank > std::min(m.rows, m.cols))
    throw argument_error(path, detail::concat("a LoRA rank in [1, ", std::min(m.rows, m.cols), "] for a (", m.rows, ", ", m.cols, ") kernel"),
                         std::to_string(rank));
  if (!std::isfinite(alpha)) throw argument_error(path, "a finite LoRA alpha", std::to_string(alpha));
  std::mt19937 rng(seed);
  low_rank_adapter a;
  a.down = make_parameter("lora_a", random_uniform({m.rows, rank}, 1.0f / std::sqrt(float(m.rows)), rng));
  a.up = make_parameter("lora_b", tensor(xt::zeros<float>({rank, m.cols})));
  a.scale = alpha / float(rank);
  a.down->set_owner_path(path);
  a.up->set_owner_path(path);
  return a;
}

XQ_DECL tensor merged_kernel(const tensor& kernel, const low_rank_adapter& adapter, const std::string& path) {
  tensor out = tensor::from_shape(kernel.shape());
  detail::add_low_rank_product(kernel, adapter, out, path);
  return out;
}

namespace ops {

XQ_DECL var add_low_rank(const var& kernel, const low_rank_adapter& adapter, const std::string& path) {
  tensor y = merged_kernel(kernel.value(), adapter, path);
  const var a(adapter.down), b(adapter.up);
  const float scale = adapter.scale;
  const detail::kernel_matrix m = detail::kernel_matrix_of(kernel.value().shape(), path);
  const std::size_t r = adapter.rank();
  return make_result(std::move(y), needs_grad(kernel, a, b), [kernel, a, b, scale, m, r](const tensor& dy) {
    if (kernel.requires_grad()) add_grad(kernel, tensor(dy));
    if (a.requires_grad()) {  // dA = scale · dY · Bᵀ
      tensor da = tensor::from_shape(a.value().shape());
      kernels::gemm(false, true, m.rows, r, m.cols, scale, dy.data(), m.cols, b.value().data(), m.cols, 0.0f,
                    da.data(), r);
      add_grad(a, std::move(da));
    }
    if (b.requires_grad()) {  // dB = scale · Aᵀ · dY
      tensor db = tensor::from_shape(b.value().shape());
      kernels::gemm(true, false, r, m.cols, m.rows, scale, a.value().data(), r, dy.data(), m.cols, 0.0f, db.data(),
                    m.cols);
      add_grad(b, std::move(db));
    }
  });
}

}  // namespace ops

}  // namespace xq
