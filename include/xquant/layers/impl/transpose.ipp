#pragma once
/// \file transpose.ipp
/// transpose's code (layers/transpose.hpp).

#include <algorithm>
#include <utility>

#include <xtensor/xmanipulation.hpp>

#include "../../core/error.hpp"
#include "../../core/layer_call.hpp"
#include "../transpose.hpp"

namespace xq {
namespace detail {

/// x's axes in the order `perm`, as a new contiguous tensor.
inline tensor permuted(const tensor& x, const std::vector<std::size_t>& perm) {
  tensor::shape_type shape(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) shape[i] = x.shape()[perm[i]];
  tensor y = tensor::from_shape(shape);
  y = xt::transpose(x, perm);
  return y;
}

}  // namespace detail

namespace ops {

XQ_DECL var transpose(const var& x, const std::vector<std::size_t>& perm, const std::string& path) {
  std::vector<bool> seen(x.dimension(), false);
  bool valid = perm.size() == x.dimension();
  for (std::size_t p : perm) {
    valid = valid && p < seen.size() && !seen[p];
    if (valid) seen[p] = true;
  }
  if (!valid)
    throw shape_error(path, detail::concat("a permutation of the ", x.dimension(), " axes of ", detail::shape_string(x.shape())),
                      detail::concat("a permutation of ", perm.size(), " axes"));
  std::vector<std::size_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = i;
  return detail::traced_function("transpose", layer_role::other, {x},
                                 make_result(detail::permuted(x.value(), perm), needs_grad(x),
                                             [x, inverse](const tensor& dy) { add_grad(x, detail::permuted(dy, inverse)); }),
                                 std::vector<std::int64_t>(perm.begin(), perm.end()));
}

}  // namespace ops
}  // namespace xq
