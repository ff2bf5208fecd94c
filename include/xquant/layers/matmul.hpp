#pragma once
/// \file matmul.hpp
/// `ops::matmul`: the matrix product of two activations over their last two axes, batched
/// over the axes before them, which broadcast (Keras `ops.matmul`, `tf.linalg.matmul` with
/// `transpose_a`/`transpose_b`): attention's scores (queries times keys transposed) and its
/// weighted values. Each product is one BLAS GEMM; gradients are GEMMs too, summed over
/// the batch axes an operand was broadcast along.
///
/// \code
///   xq::var scores = xq::ops::matmul(q, k, false, true);  // (B, H, T, D) x (B, H, T, D)^T
///   xq::var out = xq::ops::matmul(weights, v);             // (B, H, T, T) x (B, H, T, D)
/// \endcode

#include <string>

#include "../config.hpp"
#include "../core/tape.hpp"

namespace xq::ops {

/// op(a) x op(b) over the last two axes (op: transposed when asked); a and b of rank 2 or
/// more, their leading axes broadcast. `path` names the caller in errors.
XQ_DECL var matmul(const var& a, const var& b, bool transpose_a = false, bool transpose_b = false,
                   const std::string& path = "matmul");

}  // namespace xq::ops

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/matmul.ipp"
#endif
