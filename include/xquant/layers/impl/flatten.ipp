#pragma once
/// \file flatten.ipp
/// flatten's code (layers/flatten.hpp).

#include "../flatten.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(flatten)

namespace ops {

XQ_DECL var flatten(const var& x, const std::string& path) {
  if (x.dimension() < 1) throw shape_error(path, "input of shape (N, ...)", detail::shape_string(x.shape()));
  const std::size_t n = x.shape()[0];
  std::size_t rest = 1;
  for (std::size_t i = 1; i < x.dimension(); ++i) rest *= x.shape()[i];
  tensor y = x.value();
  y.reshape({n, rest});
  return make_result(std::move(y), needs_grad(x), [x](const tensor& dy) {
    tensor dx = dy;
    dx.reshape(x.shape());
    add_grad(x, std::move(dx));
  });
}

}  // namespace ops

XQ_DECL var flatten::call(const var& x) const { return ops::flatten(x, path()); }

}  // namespace xq
