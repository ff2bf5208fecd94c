#pragma once
/// \file reshape.ipp
/// reshape's code (layers/reshape.hpp).

#include "../reshape.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(reshape)

namespace detail {

XQ_DECL std::string target_shape_string(const std::vector<std::ptrdiff_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

XQ_DECL void require_valid_target(const std::string& path, const std::vector<std::ptrdiff_t>& target) {
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

XQ_DECL std::string target_count_string(const std::vector<std::ptrdiff_t>& target) {
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

XQ_DECL bool resolve_target(const std::vector<std::ptrdiff_t>& target, std::size_t count,
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

XQ_DECL var reshape_to(const var& x, const tensor::shape_type& shape) {
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

XQ_DECL var reshape(const var& x, const std::vector<std::ptrdiff_t>& shape,
                    const std::string& path) {
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

XQ_DECL var reshape::call(const var& x) const {
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

}  // namespace xq
