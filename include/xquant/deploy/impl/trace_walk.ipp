#pragma once
/// \file trace_walk.ipp
/// The shared walk (deploy/trace_walk.hpp).

#include <array>
#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/tape.hpp"
#include "../../kernels/padding.hpp"
#include "../../wrappers/batch_norm_folding.hpp"
#include "../trace_walk.hpp"

namespace xq::deploy::detail {

XQ_DECL norm_affine affine_of(const batch_norm& bn, const std::string& where) {
  if (!bn.moving_mean()) throw argument_error(where, "a built batch_norm", "one never called");
  const std::size_t c = bn.moving_mean()->value.size();
  norm_affine a;
  for (std::size_t i = 0; i < c; ++i) {
    const float inv_std = static_cast<float>(1.0 / std::sqrt(static_cast<double>(bn.moving_variance()->value.data()[i]) +
                                                             static_cast<double>(bn.epsilon())));
    a.mean.push_back(bn.moving_mean()->value.data()[i]);
    a.scale.push_back((bn.gamma() ? bn.gamma()->value.data()[i] : 1.0f) * inv_std);
    a.offset.push_back(bn.beta() ? bn.beta()->value.data()[i] : 0.0f);
  }
  return a;
}

XQ_DECL tensor quantized_kernel_input(const layer_info& info, std::vector<float>* fold_scale) {
  if (!info.fold) return info.kernel;
  const xq::no_grad nothing_recorded;
  const var s = ops::fold_scale(*info.fold);
  if (fold_scale) fold_scale->assign(s.value().begin(), s.value().end());
  return ops::scale_channels(var(info.kernel), s, info.path).value();
}

XQ_DECL std::size_t weight_channel(const layer_info& info, const quantization_grid& g, std::size_t rank,
                                   std::size_t o, const std::string& where) {
  if (!g.per_channel) return 0;
  const long r = long(rank);
  const long axis = g.channel_axis < 0 ? g.channel_axis + r : g.channel_axis;
  if (info.linear_form == layer_info::form::depthwise_conv2d) {
    if (axis == 2) return o / info.depth_multiplier;
    if (axis == 3) return o % info.depth_multiplier;
  } else if (axis == r - 1) {
    return o;
  }
  throw argument_error(where, "a per-channel kernel grid on the output-channel axis",
                       xq::detail::concat("axis ", g.channel_axis, " of a rank-", rank, " kernel"));
}

XQ_DECL std::array<std::size_t, 4> window_pads(const tensor::shape_type& s, std::array<std::size_t, 2> window,
                                               std::array<std::size_t, 2> strides, std::array<std::size_t, 2> dilation,
                                               xq::padding p) {
  const window_axis a = resolve_axis(s[1], window[0], strides[0], dilation[0], p);
  const window_axis b = resolve_axis(s[2], window[1], strides[1], dilation[1], p);
  return {a.pad_before, b.pad_before, a.pad_after, b.pad_after};
}

XQ_DECL std::vector<std::int64_t> function_arguments(const layer_info& info, const traced_call& c) {
  std::vector<std::int64_t> a = info.ints;
  const std::int64_t rank = std::int64_t(c.inputs.at(0)->value.dimension());
  auto axis = [&](std::int64_t x) {
    const std::int64_t r = x < 0 ? x + rank : x;
    if (r < 0 || r >= rank)
      throw argument_error(c.path, xq::detail::concat("an axis of a rank-", rank, " input"), xq::detail::concat(x));
    return r;
  };
  if (info.function == "slice") {
    a[0] = axis(a[0]);
    if (a[2] < 0) a[2] = std::int64_t(c.inputs[0]->value.shape()[std::size_t(a[0])]);
  } else if (info.function == "layer_norm") {
    for (std::int64_t& x : a) x = axis(x);
  }
  return a;
}

XQ_DECL trace_walk::trace_walk(const graph_trace& g, const layer_table& t, std::set<const variable_state*> constants)
    : g_(g), t_(t), fixed_values_(std::move(constants)) {
  std::unordered_map<std::string, std::size_t> seen;
  for (const traced_call& c : g.calls()) occurrence_.push_back(c.function ? 0 : seen[c.path]++);
}

XQ_DECL const layer_info* trace_walk::info_of(const traced_call& c) const {
  if (c.function) return nullptr;
  const auto it = t_.find(c.path);
  return it == t_.end() ? nullptr : &it->second;
}

XQ_DECL const fake_quantizer* trace_walk::site_quantizer(const site_quantizers* sites, std::size_t i) const {
  if (!sites || !sites->enabled()) return nullptr;
  const std::size_t k = sites->call_sites() > 1 ? occurrence_[i] : 0;
  const fake_quantizer& q = sites->site(k);
  return q.enabled() ? &q : nullptr;
}

XQ_DECL std::string trace_walk::input_label(std::size_t i, std::size_t input) const {
  std::string label = g_.calls()[i].path + " input";
  if (input) label += " " + std::to_string(input);
  if (occurrence_[i]) label += " (call " + std::to_string(occurrence_[i] + 1) + ")";
  return label;
}

XQ_DECL std::vector<const traced_call*> trace_walk::uses_of(const variable_state* s) const {
  std::vector<const traced_call*> uses;
  for (const traced_call* u : g_.consumers(s))
    if (u->output != s) uses.push_back(u);
  return uses;
}

}  // namespace xq::deploy::detail
