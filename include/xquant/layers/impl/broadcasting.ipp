#pragma once
/// \file broadcasting.ipp
/// The broadcasting ops' code (layers/broadcasting.hpp).

#include <algorithm>
#include <utility>

#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

#include "../../core/error.hpp"
#include "../../core/layer_call.hpp"
#include "../broadcasting.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(subtract)

namespace detail {

XQ_DECL tensor::shape_type broadcast_shape(const std::string& path, const tensor::shape_type& a,
                                           const tensor::shape_type& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  tensor::shape_type out(rank);
  for (std::size_t i = 0; i < rank; ++i) {  // from the last axis
    const std::size_t da = i < a.size() ? a[a.size() - 1 - i] : 1, db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      throw shape_error(path, concat("shapes that broadcast (each axis equal, or 1 in one of them) with ",
                                     shape_string(a)),
                        shape_string(b));
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

XQ_DECL tensor reduce_to_shape(tensor g, const tensor::shape_type& shape) {
  if (g.shape() == shape) return g;
  const std::size_t lead = g.dimension() - shape.size();
  std::vector<std::size_t> axes;
  for (std::size_t i = 0; i < g.dimension(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(i);
  tensor summed = axes.empty() ? std::move(g) : tensor(xt::sum(g, axes, xt::evaluation_strategy::immediate));
  summed.reshape(shape);
  return summed;
}

/// y = f(a, b) broadcast; the backward gives dy and both values to `grads`, which returns
/// the two full-shape gradients (reduced here to the operands' shapes).
template <class Forward, class Grads>
var broadcast_binary(const char* name, const var& a, const var& b, const std::string& path, Forward f, Grads grads) {
  const auto shape = broadcast_shape(path, a.shape(), b.shape());
  tensor y = tensor::from_shape(shape);
  y = f(a.value(), b.value());  // xtensor broadcasts; equal shapes take its contiguous loop
  return traced_function(name, layer_role::merge, {a, b},
                         make_result(std::move(y), needs_grad(a, b), [a, b, grads](const tensor& dy) {
    auto [da, db] = grads(dy, a, b);
    if (a.requires_grad()) add_grad(a, reduce_to_shape(std::move(da), a.shape()));
    if (b.requires_grad()) add_grad(b, reduce_to_shape(std::move(db), b.shape()));
  }));
}

}  // namespace detail

namespace ops {

XQ_DECL var broadcast_add(const var& a, const var& b, const std::string& path) {
  return detail::broadcast_binary(
      "broadcast_add", a, b, path, [](const tensor& x, const tensor& y) { return x + y; },
      [](const tensor& dy, const var& lhs, const var& rhs) {
        return std::pair<tensor, tensor>(lhs.requires_grad() ? dy : tensor(), rhs.requires_grad() ? dy : tensor());
      });
}

XQ_DECL var broadcast_subtract(const var& a, const var& b, const std::string& path) {
  return detail::broadcast_binary(
      "subtract", a, b, path, [](const tensor& x, const tensor& y) { return x - y; },
      [](const tensor& dy, const var& lhs, const var& rhs) {
        return std::pair<tensor, tensor>(lhs.requires_grad() ? dy : tensor(), rhs.requires_grad() ? tensor(-dy) : tensor());
      });
}

XQ_DECL var broadcast_multiply(const var& a, const var& b, const std::string& path) {
  return detail::broadcast_binary(
      "broadcast_multiply", a, b, path, [](const tensor& x, const tensor& y) { return x * y; },
      [](const tensor& dy, const var& lhs, const var& rhs) {
        return std::pair<tensor, tensor>(lhs.requires_grad() ? tensor(dy * rhs.value()) : tensor(),
                                         rhs.requires_grad() ? tensor(dy * lhs.value()) : tensor());
      });
}

}  // namespace ops

XQ_DECL var subtract::call(const std::vector<var>& inputs) const {
  if (inputs.size() != 2)
    throw argument_error(path(), "exactly two inputs (a - b)", detail::concat(inputs.size(), " inputs"));
  return ops::broadcast_subtract(inputs[0], inputs[1], path());
}

}  // namespace xq
