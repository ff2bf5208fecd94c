#pragma once
/// \file dataset.ipp
/// The datasets' and batches' code (train/dataset.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "../dataset.hpp"

namespace xq {

XQ_DECL dataset dataset::of(std::vector<tensor> inputs, std::vector<tensor> targets) {
  if (inputs.empty() || targets.empty())
    throw argument_error("xq::dataset::of", "at least one input and one target",
                         detail::concat(inputs.size(), " inputs and ", targets.size(), " targets"));
  dataset d;
  d.inputs = std::move(inputs.front());
  d.targets = std::move(targets.front());
  d.extra_inputs.assign(std::make_move_iterator(inputs.begin() + 1), std::make_move_iterator(inputs.end()));
  d.extra_targets.assign(std::make_move_iterator(targets.begin() + 1), std::make_move_iterator(targets.end()));
  return d;
}

XQ_DECL void dataset::validate(const char* where) const {
  if (inputs.dimension() == 0)
    throw shape_error(where, "inputs of shape (N, ...)", detail::shape_string(inputs.shape()));
  const std::size_t n = inputs.shape()[0];
  auto check = [&](const tensor& t, const char* what, std::size_t k) {
    if (t.dimension() != 0 && t.shape()[0] == n) return;
    throw shape_error(where,
                      detail::concat(what, " ", k, " of shape (", n, ", ...) for inputs of shape ",
                                     detail::shape_string(inputs.shape())),
                      detail::shape_string(t.shape()));
  };
  for (std::size_t k = 1; k < input_count(); ++k) check(input(k), "input", k);
  if (targets.dimension() == 0 || targets.shape()[0] != n)
    throw shape_error(where,
                      detail::concat("targets of shape (", n, ", ...) for inputs of shape ",
                                     detail::shape_string(inputs.shape())),
                      detail::shape_string(targets.shape()));
  for (std::size_t k = 1; k < target_count(); ++k) check(target(k), "target", k);
}

XQ_DECL std::size_t batch_count(std::size_t n, std::size_t batch_size) {
  if (batch_size == 0) throw argument_error("xq::batch_count", "batch_size >= 1", "batch_size = 0");
  // Not (n + batch_size - 1) / batch_size, which wraps to 0 for a batch size near SIZE_MAX:
  // a batch larger than the data is one batch of all of it (Keras).
  return n == 0 ? 0 : (n - 1) / batch_size + 1;
}

namespace detail {
XQ_DECL std::size_t uniform_index(std::mt19937& rng, std::size_t bound) {
  const std::uint64_t range = std::uint64_t{1} << 32;
  const std::uint64_t b = bound;
  const std::uint64_t limit = range - range % b;
  std::uint64_t r;
  do r = rng();
  while (r >= limit);
  return static_cast<std::size_t>(r % b);
}
}  // namespace detail

XQ_DECL std::vector<std::size_t> sequential_order(std::size_t n) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  return order;
}

XQ_DECL std::vector<std::size_t> shuffled_order(std::size_t n, std::mt19937& rng) {
  if (n > (std::size_t{1} << 32))
    throw argument_error("xq::shuffled_order", "at most 2^32 samples", detail::concat(n));
  std::vector<std::size_t> order = sequential_order(n);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[detail::uniform_index(rng, i)]);
  return order;
}

XQ_DECL tensor gather_rows(const tensor& source, const std::size_t* rows, std::size_t count) {
  if (source.dimension() == 0)
    throw shape_error("xq::gather_rows", "a tensor of shape (N, ...)", detail::shape_string(source.shape()));
  const std::size_t n = source.shape()[0];
  const std::size_t row_size = n == 0 ? 0 : source.size() / n;
  tensor::shape_type shape = source.shape();
  shape[0] = count;
  tensor out = tensor::from_shape(shape);
  const float* src = source.data();
  float* dst = out.data();
  for (std::size_t i = 0; i < count; ++i) {
    if (rows[i] >= n)
      throw argument_error("xq::gather_rows", detail::concat("row indices below ", n),
                           detail::concat(rows[i], " at position ", i));
    if (row_size) std::memcpy(dst + i * row_size, src + rows[i] * row_size, row_size * sizeof(float));
  }
  return out;
}

XQ_DECL batch make_batch(const dataset& data, const std::vector<std::size_t>& order, std::size_t first,
                         std::size_t count) {
  if (first > order.size())
    throw argument_error("xq::make_batch", detail::concat("a first row of at most ", order.size()),
                         detail::concat(first));
  count = std::min(count, order.size() - first);
  batch b{gather_rows(data.inputs, order.data() + first, count),
          gather_rows(data.targets, order.data() + first, count), {}, {}};
  for (const tensor& t : data.extra_inputs) b.extra_inputs.push_back(gather_rows(t, order.data() + first, count));
  for (const tensor& t : data.extra_targets) b.extra_targets.push_back(gather_rows(t, order.data() + first, count));
  return b;
}

}  // namespace xq
