#pragma once
/// \file matmul.ipp
/// matmul's code (layers/matmul.hpp).

#include <algorithm>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/layer_call.hpp"
#include "../../core/op_observer.hpp"
#include "../../kernels/gemm.hpp"
#include "../broadcasting.hpp"
#include "../matmul.hpp"

namespace xq {
namespace detail {

/// The batch geometry of a broadcast matmul: for each output matrix, which matrix of a
/// and of b it multiplies.
struct matmul_batches {
  tensor::shape_type batch_shape;
  std::vector<std::size_t> a_index, b_index;
};

inline matmul_batches matmul_batch_plan(const std::string& path, const tensor::shape_type& a,
                                        const tensor::shape_type& b) {
  const tensor::shape_type a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  matmul_batches plan;
  plan.batch_shape = broadcast_shape(path, a_batch, b_batch);
  const std::size_t rank = plan.batch_shape.size();
  std::size_t count = 1;
  for (auto d : plan.batch_shape) count *= d;
  plan.a_index.resize(count);
  plan.b_index.resize(count);
  std::vector<std::size_t> index(rank, 0);
  for (std::size_t n = 0; n < count; ++n) {
    std::size_t ia = 0, ib = 0;  // row-major offsets, a broadcast axis contributing 0
    for (std::size_t i = 0; i < rank; ++i) {
      const std::size_t ai = i + a_batch.size() >= rank ? i + a_batch.size() - rank : std::size_t(-1);
      const std::size_t bi = i + b_batch.size() >= rank ? i + b_batch.size() - rank : std::size_t(-1);
      if (ai != std::size_t(-1)) ia = ia * a_batch[ai] + (a_batch[ai] == 1 ? 0 : index[i]);
      if (bi != std::size_t(-1)) ib = ib * b_batch[bi] + (b_batch[bi] == 1 ? 0 : index[i]);
    }
    plan.a_index[n] = ia;
    plan.b_index[n] = ib;
    for (std::size_t i = rank; i-- > 0;) {  // next index, last axis fastest
      if (++index[i] < plan.batch_shape[i]) break;
      index[i] = 0;
    }
  }
  return plan;
}

}  // namespace detail

namespace ops {

XQ_DECL var matmul(const var& a, const var& b, bool transpose_a, bool transpose_b, const std::string& path) {
  if (a.dimension() < 2 || b.dimension() < 2)
    throw shape_error(path, "two operands of rank 2 or more",
                      detail::concat(detail::shape_string(a.shape()), " and ", detail::shape_string(b.shape())));
  const std::size_t ar = a.shape()[a.dimension() - 2], ac = a.shape()[a.dimension() - 1];
  const std::size_t br = b.shape()[b.dimension() - 2], bc = b.shape()[b.dimension() - 1];
  const std::size_t m = transpose_a ? ac : ar, k = transpose_a ? ar : ac;
  const std::size_t kb = transpose_b ? bc : br, n = transpose_b ? br : bc;
  if (k != kb)
    throw shape_error(path,
                      detail::concat("inner dimensions that agree: op(a) of ", detail::shape_string(a.shape()),
                                     " has ", k, " columns"),
                      detail::concat("op(b) of ", detail::shape_string(b.shape()), " with ", kb, " rows"));
  const auto plan = std::make_shared<detail::matmul_batches>(detail::matmul_batch_plan(path, a.shape(), b.shape()));
  auto shape = plan->batch_shape;
  shape.push_back(m);
  shape.push_back(n);
  tensor y = tensor::from_shape(shape);
  const std::size_t a_size = ar * ac, b_size = br * bc, y_size = m * n;
  for (std::size_t i = 0; i < plan->a_index.size(); ++i)
    kernels::gemm(transpose_a, transpose_b, m, n, k, 1.0f, a.value().data() + plan->a_index[i] * a_size, ac,
                  b.value().data() + plan->b_index[i] * b_size, bc, 0.0f, y.data() + i * y_size, n);
  // For xq::summarize: k multiply-adds per output element (attention's two products too).
  notify_op(path, "matmul", y.shape(), {k, n});
  return detail::traced_function("matmul", layer_role::other, {a, b},
      make_result(std::move(y), needs_grad(a, b),
                  [a, b, plan, transpose_a, transpose_b, m, n, k, a_size, b_size, y_size, ac, bc](const tensor& dy) {
    // C = op(A) op(B): dop(A) = dC op(B)^T, dop(B) = op(A)^T dC. A matrix that several
    // products share (a broadcast one) gathers all their gradients: zeros, then beta = 1.
    // Otherwise each gradient matrix is written once (beta = 0, no fill).
    const std::size_t products = plan->a_index.size();
    if (a.requires_grad()) {
      tensor da = tensor::from_shape(a.shape());
      const bool shared = a_size != 0 && da.size() / a_size < products;
      if (shared) std::fill(da.begin(), da.end(), 0.0f);
      const float beta = shared ? 1.0f : 0.0f;
      for (std::size_t i = 0; i < products; ++i) {
        float* d = da.data() + plan->a_index[i] * a_size;
        const float* g = dy.data() + i * y_size;
        const float* bm = b.value().data() + plan->b_index[i] * b_size;
        if (!transpose_a)  // dA (m x k) = dC (m x n) op(B)^T
          kernels::gemm(false, !transpose_b, m, k, n, 1.0f, g, n, bm, bc, beta, d, ac);
        else  // A is k x m: dA = op(B) dC^T
          kernels::gemm(transpose_b, true, k, m, n, 1.0f, bm, bc, g, n, beta, d, ac);
      }
      add_grad(a, std::move(da));
    }
    if (b.requires_grad()) {
      tensor db = tensor::from_shape(b.shape());
      const bool shared = b_size != 0 && db.size() / b_size < products;
      if (shared) std::fill(db.begin(), db.end(), 0.0f);
      const float beta = shared ? 1.0f : 0.0f;
      for (std::size_t i = 0; i < products; ++i) {
        float* d = db.data() + plan->b_index[i] * b_size;
        const float* g = dy.data() + i * y_size;
        const float* am = a.value().data() + plan->a_index[i] * a_size;
        if (!transpose_b)  // dB (k x n) = op(A)^T dC
          kernels::gemm(!transpose_a, false, k, n, m, 1.0f, am, ac, g, n, beta, d, bc);
        else  // B is n x k: dB = dC^T op(A)
          kernels::gemm(true, transpose_a, n, k, m, 1.0f, g, n, am, ac, beta, d, bc);
      }
      add_grad(b, std::move(db));
    }
  }), {std::int64_t(transpose_a), std::int64_t(transpose_b)});
}

}  // namespace ops
}  // namespace xq
