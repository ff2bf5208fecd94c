#pragma once
/// \file qdq_cases.ipp
/// The QDQ placement cases' code (transform/qdq_cases.hpp).

#include <cstddef>
#include <string>
#include <unordered_set>
#include <vector>

#include "../../core/error.hpp"
#include "../qdq_cases.hpp"

namespace xq {

namespace detail {

XQ_DECL bool is_conv_chain(const graph_trace& g, const traced_call* head) {
  const chain_step conv{layer_role::conv}, norm{layer_role::norm}, act{layer_role::activation},
      drop{layer_role::other, "dropout"};
  const std::vector<std::vector<chain_step>> patterns{{conv}, {norm, conv}, {act, norm, conv}, {drop, act, norm, conv}};
  for (const auto& pattern : patterns) {
    const traced_call* node = head;
    bool ok = true;
    for (std::size_t i = 0; i < pattern.size() && ok; ++i) {
      if (!node) {
        ok = false;
        break;
      }
      ok = pattern[i].matches(*node);
      if (ok && i + 1 < pattern.size())
        node = node->inputs.size() == 1 ? g.producer(node->inputs[0]) : nullptr;
    }
    if (ok) return true;
  }
  return false;
}

}  // namespace detail

namespace qdq_cases {

XQ_DECL qdq_case residual_connection() {
  return [](const graph_trace& g, const quantization_spec& user, quantization_spec& extra) {
    std::unordered_set<std::string> done;
    for (const auto& call : g.calls()) {
      if (call.type != "add") continue;
      if (call.function)
        throw argument_error("qdq_cases::residual_connection: " + call.describe(),
                             "an xq::add layer member listed in XQ_CHILDREN, where the case places QDQ on the "
                             "add's inputs",
                             "a function, which has nowhere to keep a quantizer");
      if (user.places(call.path) || !done.insert(call.path).second) continue;
      std::vector<std::size_t> quantized;
      bool skipped = false;
      for (std::size_t i = 0; i < call.inputs.size(); ++i) {
        const traced_call* head = g.producer(call.inputs[i]);
        if (!skipped && head && g.consumers(head->output).size() == 1 && detail::is_conv_chain(g, head)) {
          skipped = true;
          continue;
        }
        quantized.push_back(i);
      }
      extra.add(call.path, {true, false, quantized});
    }
  };
}

XQ_DECL qdq_case batch_norm_inputs() {
  return [](const graph_trace& g, const quantization_spec& user, quantization_spec& extra) {
    for (const auto& call : g.calls()) {
      if (call.role != layer_role::norm || call.function || user.places(call.path)) continue;
      const traced_call* parent = call.inputs.empty() ? nullptr : g.producer(call.inputs[0]);
      if (!parent || parent->role != layer_role::conv) extra.add(call.path, {true, false});
    }
  };
}

XQ_DECL qdq_case max_pool_inputs() {
  return [](const graph_trace&, const quantization_spec&, quantization_spec& extra) {
    extra.add_type("max_pool2d", {true, false});
  };
}

XQ_DECL qdq_case multiply_inputs(std::vector<std::size_t> indices) {
  return [indices](const graph_trace&, const quantization_spec&, quantization_spec& extra) {
    extra.add_type("multiply", {true, false, indices});
  };
}

XQ_DECL std::vector<qdq_case> resnet_v1() { return {residual_connection()}; }
XQ_DECL std::vector<qdq_case> resnet_v2() { return {residual_connection(), batch_norm_inputs(), max_pool_inputs()}; }
XQ_DECL std::vector<qdq_case> efficientnet() { return {residual_connection(), multiply_inputs({0, 1})}; }
XQ_DECL std::vector<qdq_case> mobilenet() { return {residual_connection()}; }
XQ_DECL std::vector<qdq_case> inception() { return {max_pool_inputs()}; }

}  // namespace qdq_cases
}  // namespace xq
