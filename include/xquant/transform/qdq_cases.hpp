#pragma once
/// \file qdq_cases.hpp
/// Custom QDQ placement cases (NVIDIA's custom_qdq_cases.py) as passes a user enables
/// in `quantize_options::cases`. A case reads the traced layer graph and the user's
/// spec, and adds spec entries; `quantize_model` appends them to the user's spec (so,
/// as in NVIDIA's toolkit, cases with `full` mode act like a spec).
///
///  - `residual_connection()`: for each `add` the user's spec does not name, the first
///    input coming from a conv chain — conv, bn <- conv, activation <- bn <- conv, or
///    dropout <- activation <- bn <- conv — whose head has no other consumer is left
///    unquantized and every other input gets a QDQ (TensorRT fuses the add into that
///    conv, so a QDQ there would only cost).
///  - `batch_norm_inputs()`: quantizes the input of each batch_norm whose producer is
///    not a convolution (a conv's batch norm is folded at deployment).
///  - `max_pool_inputs()`: quantizes every max_pool2d input.
///  - `multiply_inputs(indices)`: quantizes the given inputs of every multiply
///    (EfficientNet's squeeze-excite).
/// Presets combine them as NVIDIA's model presets do: resnet_v1 (residual), resnet_v2
/// (residual, batch norm, max pool), efficientnet (residual, multiply [0, 1]),
/// mobilenet (residual), inception (max pool).

#include <cstddef>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "../core/graph_trace.hpp"
#include "quantization_spec.hpp"

namespace xq {

/// A placement pass: (traced graph, the user's spec, the entries to add).
using qdq_case = std::function<void(const graph_trace&, const quantization_spec&, quantization_spec&)>;

namespace detail {

inline bool is_conv_type(const std::string& type) { return type.find("conv") != std::string::npos; }
inline bool is_activation_type(const std::string& type) {
  static const std::unordered_set<std::string> names{"relu", "relu6", "leaky_relu", "sigmoid", "tanh",
                                                     "swish", "softmax"};
  return names.count(type) > 0;
}

/// Whether `head` starts one of the chains of NVIDIA's residual case, walking back
/// through the expected layer types (dropout, activation, batch_norm) to a conv.
inline bool is_conv_chain(const graph_trace& g, const traced_call* head) {
  static const std::vector<std::vector<std::string>> patterns{
      {"conv"}, {"batch_norm", "conv"}, {"act", "batch_norm", "conv"}, {"dropout", "act", "batch_norm", "conv"}};
  for (const auto& pattern : patterns) {
    const traced_call* node = head;
    bool ok = true;
    for (std::size_t i = 0; i < pattern.size() && ok; ++i) {
      if (!node) {
        ok = false;
        break;
      }
      const std::string& want = pattern[i];
      ok = want == "conv" ? is_conv_type(node->type) : want == "act" ? is_activation_type(node->type)
                                                                      : node->type == want;
      if (ok && i + 1 < pattern.size())
        node = node->inputs.size() == 1 ? g.producer(node->inputs[0]) : nullptr;
    }
    if (ok) return true;
  }
  return false;
}

}  // namespace detail

namespace qdq_cases {

inline qdq_case residual_connection() {
  return [](const graph_trace& g, const quantization_spec& user, quantization_spec& extra) {
    std::unordered_set<std::string> done;
    for (const auto& call : g.calls()) {
      if (call.type != "add" || user.names(call.path) || !done.insert(call.path).second) continue;
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

inline qdq_case batch_norm_inputs() {
  return [](const graph_trace& g, const quantization_spec& user, quantization_spec& extra) {
    for (const auto& call : g.calls()) {
      if (call.type != "batch_norm" || user.names(call.path)) continue;
      const traced_call* parent = call.inputs.empty() ? nullptr : g.producer(call.inputs[0]);
      if (!parent || !detail::is_conv_type(parent->type)) extra.add(call.path, {true, false});
    }
  };
}

inline qdq_case max_pool_inputs() {
  return [](const graph_trace&, const quantization_spec&, quantization_spec& extra) {
    extra.add_type("max_pool2d", {true, false});
  };
}

inline qdq_case multiply_inputs(std::vector<std::size_t> indices) {
  return [indices](const graph_trace&, const quantization_spec&, quantization_spec& extra) {
    extra.add_type("multiply", {true, false, indices});
  };
}

inline std::vector<qdq_case> resnet_v1() { return {residual_connection()}; }
inline std::vector<qdq_case> resnet_v2() { return {residual_connection(), batch_norm_inputs(), max_pool_inputs()}; }
inline std::vector<qdq_case> efficientnet() { return {residual_connection(), multiply_inputs({0, 1})}; }
inline std::vector<qdq_case> mobilenet() { return {residual_connection()}; }
inline std::vector<qdq_case> inception() { return {max_pool_inputs()}; }

}  // namespace qdq_cases
}  // namespace xq
