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

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace detail {

/// "(-1, 28)".
inline std::string target_shape_string(const std::vector<std::ptrdiff_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// Throws unless `target` has sizes >= 0 and at most one -1.
inline void require_valid_target(const std::string& path, const std::vector<std::ptrdiff_t>& target) {
  int unknown = 0;
  bool ok = true;
  std::size_t known = 1;
  for (std::ptrdiff_t d : target) {
    if (d == -1)
      ++unknown;
    else if (d < 0)
      ok = false;
    else
      known *= static_cast<std::size_t>(d);
  }
  if (!ok || unknown > 1 || (unknown == 1 && known == 0))
    throw argument_error(path, "a target shape of sizes >= 0 with at most one -1 (and no 0 beside it)",
                         target_shape_string(target));
}

/// "784", or "a multiple of 28" for a target with a -1: how many values fit it.
inline std::string target_count_string(const std::vector<std::ptrdiff_t>& target) {
  std::size_t known = 1;
  bool has_unknown = false;
  for (std::ptrdiff_t d : target) {
    if (d == -1)
      has_unknown = true;
    else
      known *= static_cast<std::size_t>(d);
  }
  return concat(has_unknown ? "a multiple of " : "", known);
}

/// `target` with its -1 resolved for `count` values; false if it does not fit.
inline bool resolve_target(const std::vector<std::ptrdiff_t>& target, std::size_t count,
                           tensor::shape_type& out) {
  std::size_t known = 1;
  std::ptrdiff_t unknown_at = -1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1)
      unknown_at = static_cast<std::ptrdiff_t>(i);
    else
      known *= static_cast<std::size_t>(target[i]);
  }
  out.resize(target.size());
  for (std::size_t i = 0; i < target.size(); ++i) out[i] = static_cast<std::size_t>(target[i]);
  if (unknown_at < 0) return known == count;
  if (known == 0 || count % known != 0) return false;
  out[static_cast<std::size_t>(unknown_at)] = count / known;
  return true;
}

/// The reshape itself: a copy of x's values under `shape`; the gradient goes back
/// under x's shape.
inline var reshape_to(const var& x, const tensor::shape_type& shape) {
  tensor y = x.value();
  y.reshape(shape);
  return make_result(std::move(y), needs_grad(x), [x](const tensor& dy) {
    tensor dx = dy;
    dx.reshape(x.shape());
    add_grad(x, std::move(dx));
  });
}

}  // namespace detail

namespace ops {

/// Reshapes `x` to `shape` (batch axis included; one entry may be -1).
inline var reshape(const var& x, const std::vector<std::ptrdiff_t>& shape,
                   const std::string& path = "reshape") {
  detail::require_valid_target(path, shape);
  tensor::shape_type resolved;
  if (!detail::resolve_target(shape, x.size(), resolved))
    throw shape_error(path,
                      detail::concat("input of ", detail::target_count_string(shape),
                                     " values to reshape to ", detail::target_shape_string(shape)),
                      detail::concat(detail::shape_string(x.shape()), " (", x.size(), " values)"));
  return detail::reshape_to(x, resolved);
}

}  // namespace ops

/// Reshape layer: each sample to `target_shape` (batch axis excluded; one -1 allowed).
class reshape : public layer<reshape> {
 public:
  /// Throws `xq::argument_error` for a target with a size below -1 or two -1s.
  explicit reshape(std::vector<std::ptrdiff_t> target_shape = {-1})
      : layer<reshape>("reshape"), target_(std::move(target_shape)) {
    detail::require_valid_target("reshape", target_);
  }

  var call(const var& x) const {
    if (x.dimension() < 1)
      throw shape_error(path(), "input of shape (N, ...)", detail::shape_string(x.shape()));
    const std::size_t n = x.shape()[0];
    std::size_t per_sample = 1;
    for (std::size_t i = 1; i < x.dimension(); ++i) per_sample *= x.shape()[i];
    tensor::shape_type sample;
    if (!detail::resolve_target(target_, per_sample, sample))
      throw shape_error(
          path(),
          detail::concat("input of shape (N, ...) with ", detail::target_count_string(target_),
                         " values per sample to reshape to ", detail::target_shape_string(target_)),
          detail::concat(detail::shape_string(x.shape()), " (", per_sample, " values per sample)"));
    tensor::shape_type full(sample.size() + 1);
    full[0] = n;
    for (std::size_t i = 0; i < sample.size(); ++i) full[i + 1] = sample[i];
    return detail::reshape_to(x, full);
  }

  std::vector<parameter_ptr> parameters() const { return {}; }
  /// The target shape per sample, as given (a -1 stays -1).
  const std::vector<std::ptrdiff_t>& target_shape() const noexcept { return target_; }

 private:
  std::vector<std::ptrdiff_t> target_;
};

}  // namespace xq
