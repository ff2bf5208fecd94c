#pragma once
/// \file flatten.hpp
/// `xq::flatten`: (N, d1, d2, ...) -> (N, d1 * d2 * ...) (Keras Flatten; row-major,
/// so NHWC flattens channels fastest, as Keras does). A rank-1 input (N,) becomes (N, 1).

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace ops {

/// Keeps the batch axis and joins the rest. `path` names the caller in errors.
XQ_DECL var flatten(const var& x, const std::string& path = "flatten");

}  // namespace ops

/// Flatten layer: everything but the batch axis into one axis.
class flatten : public layer<flatten> {
 public:
  XQ_SPECIAL_MEMBERS(flatten)
  flatten() : layer<flatten>("flatten") {}
  XQ_DECL var call(const var& x) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/flatten.ipp"
#endif
