#pragma once
/// \file reshape.hpp
/// `xq::reshape`: gives each sample a new shape (Keras Reshape: the target shape
/// excludes the batch axis; one entry may be -1, inferred from the others).
///
/// \code
///   xq::reshape to_image({28, 28, 1});       // (N, 784) -> (N, 28, 28, 1)
///   xq::reshape rows({-1, 16});              // (N, 8, 8, 4) -> (N, 16, 16)
/// \endcode

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

namespace detail {

/// "(-1, 28)".
XQ_DECL std::string target_shape_string(const std::vector<std::ptrdiff_t>& shape);

/// Throws unless `target` has sizes >= 0 and at most one -1.
XQ_DECL void require_valid_target(const std::string& path, const std::vector<std::ptrdiff_t>& target);

/// "784", or "a multiple of 28" for a target with a -1: how many values fit it.
XQ_DECL std::string target_count_string(const std::vector<std::ptrdiff_t>& target);

/// `target` with its -1 resolved for `count` values; false if it does not fit.
XQ_DECL bool resolve_target(const std::vector<std::ptrdiff_t>& target, std::size_t count,
                            tensor::shape_type& out);

/// The reshape itself: a copy of x's values under `shape`; the gradient goes back
/// under x's shape.
XQ_DECL var reshape_to(const var& x, const tensor::shape_type& shape);

}  // namespace detail

namespace ops {

/// Reshapes `x` to `shape` (batch axis included; one entry may be -1).
XQ_DECL var reshape(const var& x, const std::vector<std::ptrdiff_t>& shape,
                    const std::string& path = "reshape");

}  // namespace ops

/// Reshape layer: each sample to `target_shape` (batch axis excluded; one -1 allowed).
class reshape : public layer<reshape> {
 public:
  XQ_SPECIAL_MEMBERS(reshape)
  /// Throws `xq::argument_error` for a target with a size below -1 or two -1s.
  explicit reshape(std::vector<std::ptrdiff_t> target_shape = {-1})
      : layer<reshape>("reshape"), target_(std::move(target_shape)) {
    detail::require_valid_target("reshape", target_);
  }

  XQ_DECL var call(const var& x) const;

  std::vector<parameter_ptr> parameters() const { return {}; }
  /// The target shape per sample, as given (a -1 stays -1).
  const std::vector<std::ptrdiff_t>& target_shape() const noexcept { return target_; }

 private:
  std::vector<std::ptrdiff_t> target_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/reshape.ipp"
#endif
