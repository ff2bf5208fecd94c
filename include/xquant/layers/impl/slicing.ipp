#pragma once
/// \file slicing.ipp
/// slice's and split's code (layers/slicing.hpp).

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "../../core/error.hpp"
#include "../../core/layer_call.hpp"
#include "../slicing.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(slice)

namespace detail {

/// `axis` of a rank-`rank` tensor, negative counting from the end.
inline std::size_t resolve_axis(const std::string& path, int axis, std::size_t rank) {
  const long long a = axis < 0 ? static_cast<long long>(rank) + axis : axis;
  if (a < 0 || a >= static_cast<long long>(rank))
    throw shape_error(path, concat("an input with axis ", axis), concat("rank ", rank));
  return std::size_t(a);
}

/// The sizes of the axes before and after `axis`.
inline std::pair<std::size_t, std::size_t> outer_inner(const tensor::shape_type& shape, std::size_t axis) {
  std::size_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= shape[i];
  for (std::size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
  return {outer, inner};
}

}  // namespace detail

namespace ops {

XQ_DECL var slice(const var& x, int axis, std::size_t begin, std::size_t end, const std::string& path) {
  const std::size_t a = detail::resolve_axis(path, axis, x.dimension());
  const std::size_t length = x.shape()[a];
  if (end == to_end) end = length;
  if (begin >= end || end > length)
    throw shape_error(path, detail::concat("a range [", begin, ", ", end, ") inside axis ", axis, " of length ", length),
                      detail::shape_string(x.shape()));
  const auto [outer, inner] = detail::outer_inner(x.shape(), a);
  auto shape = x.shape();
  shape[a] = end - begin;
  tensor y = tensor::from_shape(shape);
  const std::size_t run = (end - begin) * inner, stride = length * inner;
  for (std::size_t o = 0; o < outer; ++o)
    std::copy_n(x.value().data() + o * stride + begin * inner, run, y.data() + o * run);
  return detail::traced_function(
      "slice", layer_role::other, {x},
      make_result(std::move(y), needs_grad(x), [x, outer = outer, inner = inner, begin, run, stride](const tensor& dy) {
        tensor dx = tensor::from_shape(x.shape());
        std::fill(dx.begin(), dx.end(), 0.0f);
        for (std::size_t o = 0; o < outer; ++o)
          std::copy_n(dy.data() + o * run, run, dx.data() + o * stride + begin * inner);
        add_grad(x, std::move(dx));
      }),
      {std::int64_t(a), std::int64_t(begin), std::int64_t(end)});
}

XQ_DECL std::vector<var> split(const var& x, int axis, const std::vector<std::size_t>& sizes, const std::string& path) {
  const std::size_t a = detail::resolve_axis(path, axis, x.dimension());
  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t(0));
  if (sizes.empty() || total != x.shape()[a] || std::find(sizes.begin(), sizes.end(), 0u) != sizes.end())
    throw shape_error(path,
                      detail::concat("an axis ", axis, " as long as the parts (each at least 1), which add up to ",
                                     total),
                      detail::shape_string(x.shape()));
  std::vector<var> parts;
  std::size_t begin = 0;
  for (std::size_t s : sizes) {
    parts.push_back(slice(x, axis, begin, begin + s, path));
    begin += s;
  }
  return parts;
}

XQ_DECL std::vector<var> split(const var& x, int axis, std::size_t count, const std::string& path) {
  const std::size_t a = detail::resolve_axis(path, axis, x.dimension());
  if (count == 0 || x.shape()[a] % count != 0)
    throw shape_error(path, detail::concat("an axis ", axis, " that ", count, " equal parts divide"),
                      detail::shape_string(x.shape()));
  return split(x, axis, std::vector<std::size_t>(count, x.shape()[a] / count), path);
}

}  // namespace ops
}  // namespace xq
