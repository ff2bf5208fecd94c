#pragma once
/// \file transpose.hpp
/// `xq::ops::transpose(x, perm)`: the axes of x reordered (tf.transpose, numpy.transpose):
/// output axis i is input axis perm[i]. Attention splits its projections into heads with it,
/// (B, T, H, K) -> (B, H, T, K), and merges them back.
///
/// \code
///   xq::var heads = xq::ops::transpose(q, {0, 2, 1, 3});
/// \endcode
///
/// One strided copy into a contiguous tensor; the backward pass is the inverse permutation.

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/tape.hpp"
#include "../core/var.hpp"

namespace xq::ops {

/// x with its axes in the order `perm` (a permutation of 0 .. rank - 1); a shape_error at
/// `path` when it is not one.
XQ_DECL var transpose(const var& x, const std::vector<std::size_t>& perm, const std::string& path = "transpose");

}  // namespace xq::ops

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/transpose.ipp"
#endif
