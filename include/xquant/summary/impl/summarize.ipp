#pragma once
/// \file summarize.ipp
/// summarize's code that does not depend on the model's type: MAC counts, the weights
/// of a row (summary/summarize.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../summarize.hpp"

namespace xq::detail {

XQ_DECL std::uint64_t output_pixels(const tensor::shape_type& shape) {
  std::uint64_t n = 1;
  for (std::size_t i = 1; i + 1 < shape.size(); ++i) n *= shape[i];
  return n;
}

XQ_DECL std::vector<std::ptrdiff_t> batch_free_shape(const tensor::shape_type& shape) {
  std::vector<std::ptrdiff_t> out(shape.begin(), shape.end());
  if (!out.empty()) out[0] = -1;  // Keras prints the unknown batch axis as None; Larq as -1
  return out;
}

XQ_DECL std::size_t element_count(const tensor::shape_type& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

XQ_DECL traced_shapes traced_row_shapes(const graph_trace& g, const std::string& path) {
  const std::vector<traced_call>& calls = g.calls();
  // A leaf's own calls (a call of a layer is recorded at its path; a wrapper's inner layer
  // and quantizers are part of it), else the calls of the leaves inside a composite.
  const bool leaf = std::any_of(calls.begin(), calls.end(), [&](const traced_call& c) {
    return !c.function && c.path == path;
  });
  auto inside = [&](const traced_call& c) {
    if (c.function) return false;
    if (leaf) return c.path == path;
    return c.path.size() > path.size() && c.path.compare(0, path.size(), path) == 0 && c.path[path.size()] == '/';
  };
  std::size_t first = calls.size(), last = 0;
  for (std::size_t i = 0; i < calls.size(); ++i)
    if (inside(calls[i])) {
      if (first == calls.size()) first = i;
      last = i;
    }
  if (first == calls.size()) return {};
  auto index_of = [&](const traced_call* c) { return std::size_t(c - calls.data()); };
  if (!leaf) {
    // A composite: the values its calls made, and the functions only they feed at its end
    // (its forward's `xq::ops::relu(norm(conv(x)))`), then those feeding only it at its start.
    std::unordered_set<const variable_state*> made;
    for (std::size_t i = first; i <= last; ++i)
      if (inside(calls[i])) made.insert(calls[i].output);
    for (std::size_t i = last + 1; i < calls.size() && calls[i].function; ++i) {
      const auto& in = calls[i].inputs;
      if (in.empty() || !std::all_of(in.begin(), in.end(), [&](const variable_state* v) { return made.count(v) != 0; }))
        break;
      made.insert(calls[i].output);
      last = i;
    }
    while (first > 0 && calls[first - 1].function) {
      const auto users = g.consumers(calls[first - 1].output);
      if (users.empty() || !std::all_of(users.begin(), users.end(), [&](const traced_call* u) {
            return index_of(u) >= first && index_of(u) <= last;
          }))
        break;
      --first;
    }
  }
  traced_shapes out;
  if (!calls[first].inputs.empty() && calls[first].inputs[0]) out.input = calls[first].inputs[0]->value.shape();
  if (calls[last].output) out.output = calls[last].output->value.shape();
  return out;
}

XQ_DECL void summary_builder::apply_batch_norm_rule(std::vector<std::pair<parameter_ptr, int>>& weights) {
  for (const auto& [drop, keep] : {std::pair<const char*, const char*>{"beta", "moving_mean"},
                                   std::pair<const char*, const char*>{"gamma", "moving_variance"}}) {
    auto named = [&](const char* n) {
      for (std::size_t i = 0; i < weights.size(); ++i)
        if (weights[i].first->short_name() == n) return std::ptrdiff_t(i);
      return std::ptrdiff_t(-1);
    };
    const std::ptrdiff_t d = named(drop);
    if (d >= 0 && named(keep) >= 0) weights.erase(weights.begin() + d);
  }
}

XQ_DECL void summary_builder::add_counted_weights(layer_profile& row,
                                                  const std::vector<std::pair<parameter_ptr, int>>& all,
                                                  const std::vector<std::pair<parameter_ptr, int>>& counted) {
  for (const auto& [p, bits] : all) {
    // A weight dropped by the batch-norm rule is still "seen": counted nowhere else.
    if (!seen_.insert(p.get()).second) continue;
    bool kept = false;
    for (const auto& c : counted) kept = kept || c.first == p;
    if (kept) row.weights.push_back({p->name(), p->value.size(), bits, p->trainable()});
  }
}

XQ_DECL void summary_builder::count_macs(layer_profile& row, const std::vector<std::pair<parameter_ptr, int>>& kernels,
                                         int in_bits, const std::string& path, bool is_row,
                                         const std::optional<tensor::shape_type>& shape) const {
  auto found = events.find(path);
  if (found == events.end() || found->second.empty()) {
    if (!is_row) return;  // inside a composite and never called: no MACs
    if (!shape) {
      row.macs_known = false;
      return;
    }
    for (const auto& [p, bits] : kernels)  // Larq's rule on the row's output shape
      row.macs[std::max(in_bits, bits)] += std::uint64_t(p->value.size()) * output_pixels(*shape);
    return;
  }
  // Weights of equal shape (a separable conv's 1x1 depthwise and pointwise kernels,
  // say) take that shape's ops in turn: the ops run in parameter order.
  std::unordered_map<std::size_t, std::size_t> turn;
  for (const op_event& e : found->second) {
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < kernels.size(); ++i)
      if (kernels[i].first->value.shape() == e.weight_shape) candidates.push_back(i);
    const std::uint64_t pixels = output_pixels(e.output_shape);
    if (candidates.empty()) {
      row.macs[std::max(in_bits, 32)] += std::uint64_t(element_count(e.weight_shape)) * pixels;
      continue;
    }
    const std::size_t key = candidates.front();
    const auto& [p, bits] = kernels[candidates[turn[key]++ % candidates.size()]];
    row.macs[std::max(in_bits, bits)] += std::uint64_t(p->value.size()) * pixels;
  }
}

}  // namespace xq::detail
