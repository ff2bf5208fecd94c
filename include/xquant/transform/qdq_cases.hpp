#pragma once
/// \file qdq_cases.hpp
/// Custom QDQ placement cases (NVIDIA's custom_qdq_cases.py) as passes a user enables
/// in `quantize_options::cases`. A case reads the traced layer graph and the user's
/// spec, and adds spec entries; `quantize_model` appends them to the user's spec (so,
/// as in NVIDIA's toolkit, cases with `full` mode act like a spec).
///
///  - `residual_connection()`: for each `add` the user's spec does not name, the first
///    input coming from a conv chain — conv, bn <- conv, activation <- bn <- conv, or
///    dropout <- activation <- bn <- conv, by the layers' roles (a function such as
///    `xq::ops::relu` in the chain counts) — whose head has no other consumer is left
///    unquantized and every other input gets a QDQ (TensorRT fuses the add into that
///    conv, so a QDQ there would only cost). An add written as `xq::ops::add` is refused.
///  - `batch_norm_inputs()`: quantizes the input of each batch norm whose producer is
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

#include "../core/error.hpp"
#include "../core/graph_trace.hpp"
#include "../core/layer_traits.hpp"
#include "quantization_spec.hpp"

namespace xq {

/// A placement pass: (traced graph, the user's spec, the entries to add).
using qdq_case = std::function<void(const graph_trace&, const quantization_spec&, quantization_spec&)>;

namespace detail {

/// One step of a chain pattern: a layer role, or dropout (matched by its type: NVIDIA's
/// case names Keras's Dropout).
struct chain_step {
  layer_role role;
  const char* type = nullptr;  ///< when set, the type that must match instead of the role
  bool matches(const traced_call& c) const { return type ? c.type == type : c.role == role; }
};

/// Whether `head` starts one of the chains of NVIDIA's residual case, walking back
/// through dropout, an activation and a batch norm to a convolution (roles, so a user's
/// conv or activation counts when it declares its role; core/layer_traits.hpp).
inline bool is_conv_chain(const graph_trace& g, const traced_call* head) {
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

inline qdq_case residual_connection() {
  return [](const graph_trace& g, const quantization_spec& user, quantization_spec& extra) {
    std::unordered_set<std::string> done;
    for (const auto& call : g.calls()) {
      if (call.type != "add") continue;
      if (call.function)
        throw argument_error("qdq_cases::residual_connection: " + call.describe(),
                             "an xq::add layer member listed in XQ_CHILDREN, where the case places QDQ on the "
                             "add's inputs",
                             "a function, which has nowhere to keep a quantizer");
      if (user.names(call.path) || !done.insert(call.path).second) continue;
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
      if (call.role != layer_role::norm || call.function || user.names(call.path)) continue;
      const traced_call* parent = call.inputs.empty() ? nullptr : g.producer(call.inputs[0]);
      if (!parent || parent->role != layer_role::conv) extra.add(call.path, {true, false});
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
