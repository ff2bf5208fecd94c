#pragma once
/// \file rank_agreement.ipp
/// train/rank_agreement.hpp's code: the ranks' values gathered with `distributed_training::sum`
/// (the one collective the interface has), compared, and the differences named.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/model.hpp"
#include "../../core/parameter.hpp"
#include "../../core/tensor.hpp"
#include "../fit.hpp"
#include "../rank_agreement.hpp"

namespace xq {
namespace detail {

XQ_DECL std::vector<double> gather_over_ranks(distributed_training& d, const std::vector<double>& v) {
  const std::size_t ranks = static_cast<std::size_t>(d.ranks()), rank = static_cast<std::size_t>(d.rank());
  std::vector<double> all(ranks * v.size(), 0.0);
  std::copy(v.begin(), v.end(), all.begin() + static_cast<std::ptrdiff_t>(rank * v.size()));
  // Every slot but one is zero on each rank: the sum is every rank's values, exactly.
  if (!all.empty()) d.sum(all.data(), all.size());
  return all;
}

/// 64-bit integers travel as two 32-bit halves, which doubles hold exactly.
inline void push_u64(std::vector<double>& v, std::uint64_t x) {
  v.push_back(static_cast<double>(x >> 32));
  v.push_back(static_cast<double>(x & 0xffffffffu));
}
inline std::uint64_t read_u64(const double* p) {
  return (static_cast<std::uint64_t>(p[0]) << 32) | static_cast<std::uint64_t>(p[1]);
}

/// FNV-1a, 64 bits.
inline void hash_bytes(std::uint64_t& h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
}
inline std::uint64_t parameter_hash(const parameter& p) {
  std::uint64_t h = 1469598103934665603ull;
  hash_bytes(h, p.name().data(), p.name().size() + 1);  // the terminator separates the name from the shape
  for (const std::size_t dim : p.value.shape()) {
    const std::uint64_t d = dim;
    hash_bytes(h, &d, sizeof d);
  }
  const unsigned char trainable = p.trainable() ? 1 : 0;
  hash_bytes(h, &trainable, 1);
  return h;
}

/// "rank 0 a, rank 1 b, ..." for `ranks` values.
template <class Describe>
std::string per_rank(std::size_t ranks, Describe&& describe) {
  std::string out;
  for (std::size_t r = 0; r < ranks; ++r) out += concat(r ? ", " : "", "rank ", r, " ", describe(r));
  return out;
}

/// Longest name sent when the ranks' models differ (a longer one is cut).
constexpr std::size_t agreement_name_chars = 96, agreement_max_dims = 8;

/// Parameter `index` of `params` as doubles: present, trainable, rank, dims, name length, chars.
inline std::vector<double> encode_parameter(const std::vector<parameter_ptr>& params, std::size_t index) {
  std::vector<double> v(4 + agreement_max_dims + agreement_name_chars, 0.0);
  if (index >= params.size() || !params[index]) return v;
  const parameter& p = *params[index];
  v[0] = 1.0;
  v[1] = p.trainable() ? 1.0 : 0.0;
  const auto& shape = p.value.shape();
  v[2] = static_cast<double>(std::min(shape.size(), agreement_max_dims));
  for (std::size_t i = 0; i < shape.size() && i < agreement_max_dims; ++i) v[3 + i] = static_cast<double>(shape[i]);
  const std::size_t chars = std::min(p.name().size(), agreement_name_chars);
  v[3 + agreement_max_dims] = static_cast<double>(chars);
  for (std::size_t i = 0; i < chars; ++i) v[4 + agreement_max_dims + i] = static_cast<unsigned char>(p.name()[i]);
  return v;
}

inline std::string describe_parameter(const double* v) {
  if (v[0] == 0.0) return "none";
  std::string name;
  for (std::size_t i = 0; i < static_cast<std::size_t>(v[3 + agreement_max_dims]); ++i)
    name += static_cast<char>(static_cast<unsigned char>(v[4 + agreement_max_dims + i]));
  std::vector<std::size_t> shape;
  for (std::size_t i = 0; i < static_cast<std::size_t>(v[2]); ++i) shape.push_back(static_cast<std::size_t>(v[3 + i]));
  return concat("'", name, "' ", shape_string(shape), v[1] != 0.0 ? "" : " (not trainable)");
}

/// A hash of the shapes of one sample of each of `tensors` (the batch axis left out).
inline std::uint64_t sample_shapes_hash(const std::vector<const tensor*>& tensors) {
  std::uint64_t h = 1469598103934665603ull;
  for (const tensor* t : tensors) {
    const std::uint64_t rank = t->dimension();
    hash_bytes(h, &rank, sizeof rank);
    for (std::size_t i = 1; i < t->shape().size(); ++i) {
      const std::uint64_t dim = t->shape()[i];
      hash_bytes(h, &dim, sizeof dim);
    }
  }
  return h;
}

XQ_DECL std::vector<rank_value> fit_rank_values(const dataset& train, const fit_options& o, std::size_t steps) {
  std::vector<const tensor*> inputs, targets;
  for (std::size_t k = 0; k < train.input_count(); ++k) inputs.push_back(&train.input(k));
  for (std::size_t k = 0; k < train.target_count(); ++k) targets.push_back(&train.target(k));
  return {{"training samples", train.size()},
          {"inputs and targets per sample", train.input_count() * 1000 + train.target_count()},
          {"a hash of the sample shapes (inputs, then targets)", sample_shapes_hash(inputs) ^ (sample_shapes_hash(targets) * 31)},
          {"validation samples", o.validation ? o.validation->size() : 0},
          {"batch_size", o.batch_size},
          {"steps per epoch", steps},
          {"initial_epoch", o.initial_epoch},
          {"epochs", o.epochs},
          {"seed", o.seed},
          {"shuffle", o.shuffle ? 1u : 0u}};
}

}  // namespace detail

XQ_DECL void check_ranks_agree(distributed_training& d, layer_ref model, const std::vector<rank_value>& values,
                               const char* where) {
  const std::size_t ranks = static_cast<std::size_t>(d.ranks());
  if (ranks <= 1) return;
  const std::vector<parameter_ptr> params = detail::parameters(model);
  std::uint64_t model_hash = 1469598103934665603ull, scalars = 0;
  std::vector<std::uint64_t> hashes;
  for (const parameter_ptr& p : params) {
    hashes.push_back(p ? detail::parameter_hash(*p) : 0);
    detail::hash_bytes(model_hash, &hashes.back(), sizeof(std::uint64_t));
    scalars += p ? p->value.size() : 0;
  }
  // Round 1: the values, then the model's parameter count, scalars and hash.
  std::vector<double> mine;
  for (const rank_value& v : values) detail::push_u64(mine, v.value);
  detail::push_u64(mine, params.size());
  detail::push_u64(mine, scalars);
  detail::push_u64(mine, model_hash);
  const std::vector<double> all = detail::gather_over_ranks(d, mine);
  const auto value_of = [&](std::size_t r, std::size_t i) { return detail::read_u64(&all[r * mine.size() + 2 * i]); };
  const auto differs = [&](std::size_t i) {
    for (std::size_t r = 1; r < ranks; ++r)
      if (value_of(r, i) != value_of(0, i)) return true;
    return false;
  };

  std::vector<std::string> differences;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (differs(i)) differences.push_back(detail::concat(values[i].what, ": ", detail::per_rank(ranks, [&](std::size_t r) {
                                                   return std::to_string(value_of(r, i));
                                                 })));
  const std::size_t count = values.size(), scalar = count + 1, hash = count + 2;
  if (differs(count) || differs(scalar) || differs(hash)) {
    // Round 2: each parameter's hash, to find the first that differs; round 3: that one's
    // name and shape on every rank. Every rank decides to run them from round 1's values.
    std::size_t most = 0;
    for (std::size_t r = 0; r < ranks; ++r) most = std::max<std::size_t>(most, value_of(r, count));
    std::vector<double> own;
    for (std::size_t i = 0; i < most; ++i) detail::push_u64(own, i < hashes.size() ? hashes[i] : 0);
    const std::vector<double> each = detail::gather_over_ranks(d, own);
    std::size_t first = most;
    for (std::size_t i = 0; i < most && first == most; ++i)
      for (std::size_t r = 1; r < ranks; ++r)
        if (detail::read_u64(&each[r * own.size() + 2 * i]) != detail::read_u64(&each[2 * i])) first = i;
    const std::vector<double> one = detail::encode_parameter(params, first);
    const std::vector<double> named = detail::gather_over_ranks(d, one);
    std::string model_difference = detail::concat("the model: ", detail::per_rank(ranks, [&](std::size_t r) {
                                            return detail::concat(value_of(r, count), " parameters (", value_of(r, scalar), " values)");
                                          }));
    if (first < most)
      model_difference += detail::concat("; parameter ", first + 1, " in model order: ", detail::per_rank(ranks, [&](std::size_t r) {
                                   return detail::describe_parameter(&named[r * one.size()]);
                                 }));
    differences.insert(differences.begin(), model_difference);
  }
  if (differences.empty()) return;
  std::string given;
  for (const std::string& s : differences) given += (given.empty() ? "" : "; ") + s;
  throw argument_error(where,
                       "the same model, data and options on every rank (data-parallel ranks run in lock step: "
                       "build the same model, load the same data and pass the same options everywhere)",
                       given);
}

}  // namespace xq
