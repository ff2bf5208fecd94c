#pragma once
/// \file lowered_op.ipp
/// lowered_op's shared checks (deploy/engine/lowered_op.hpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../lowered_op.hpp"

namespace xq::deploy {

XQ_DECL std::string lowered_op::where() const { return path + " (" + kind() + ")"; }

XQ_DECL void lowered_op::refuse(const std::string& expected, const std::string& given) const {
  throw argument_error(where(), expected, given);
}

XQ_DECL void lowered_op::expect_inputs(const std::vector<const engine_tensor*>& in, std::size_t min, std::size_t max) const {
  if (in.size() < min || in.size() > max)
    refuse(min == max ? xq::detail::concat(min, min == 1 ? " input" : " inputs")
                      : xq::detail::concat(min, " to ", max, " inputs"),
           xq::detail::concat(in.size()));
}

XQ_DECL const engine_tensor& lowered_op::expect(const engine_tensor& t, value_kind k, std::size_t rank) const {
  if (t.kind != k || (rank && t.shape.size() != rank))
    refuse(rank ? xq::detail::concat("a rank-", rank, " ", to_string(k), " tensor") : std::string("a ") + to_string(k) + " tensor",
           detail::tensor_string(t));
  return t;
}

XQ_DECL const engine_tensor& lowered_op::expect_one(const std::vector<const engine_tensor*>& in, value_kind k,
                                                    std::size_t rank) const {
  expect_inputs(in, 1, 1);
  return expect(*in[0], k, rank);
}

namespace detail {

XQ_DECL std::string tensor_string(const engine_tensor& t) {
  const char* k = to_string(t.kind);
  return xq::detail::concat(k[0] == 'i' || k[0] == 'a' ? "an " : "a ", k, " tensor of shape ", xq::detail::shape_string(t.shape));
}

XQ_DECL std::uint64_t element_count(const std::vector<std::size_t>& shape) noexcept {
  std::uint64_t n = 1;
  for (std::size_t d : shape) n = saturating_product(n, d);
  return n;
}

XQ_DECL engine_tensor value_of(value_kind k, std::vector<std::size_t> shape) {
  engine_tensor t;
  t.kind = k;
  t.shape = std::move(shape);
  return t;
}

XQ_DECL engine_tensor integer_value_of(std::vector<std::size_t> shape, const integer_grid& g) {
  engine_tensor t = value_of(value_kind::integer, std::move(shape));
  t.set_grid(g);
  return t;
}

}  // namespace detail

}  // namespace xq::deploy
