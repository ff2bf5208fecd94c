#pragma once
/// \file flatten.hpp
/// `xq::flatten`: (N, d1, d2, ...) -> (N, d1 * d2 * ...) (Keras Flatten; row-major,
/// so NHWC flattens channels fastest, as Keras does). A rank-1 input (N,) becomes (N, 1).

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace ops {

/// Keeps the batch axis and joins the rest. `path` names the caller in errors.
inline var flatten(const var& x, const std::string& path = "flatten") {
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

/// Flatten layer: everything but the batch axis into one axis.
class flatten : public layer<flatten> {
 public:
  flatten() : layer<flatten>("flatten") {}
  var call(const var& x) const { return ops::flatten(x, path()); }
  std::vector<parameter_ptr> parameters() const { return {}; }
};

}  // namespace xq
