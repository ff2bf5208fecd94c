#pragma once
/// \file qdq_cases.hpp
/// Custom QDQ placement cases (NVIDIA's custom_qdq_cases.py) as passes a user enables
/// in `quantize_options::cases`. A case reads the traced layer graph and the user's
/// spec, and adds spec entries; `quantize_model` appends them to the user's spec (so,
/// as in NVIDIA's toolkit, cases with `full` mode act like a spec).
///
/// "The user's spec places a layer" below: an entry names its path, or an enclosing
/// composite's with `block_placement::every_layer` (quantization_spec::places); inside a
/// composite named `as_full_mode` the cases work as in full mode.
///
///  - `residual_connection()`: for each `add` the user's spec does not place, the first
///    input coming from a conv chain — conv, bn <- conv, activation <- bn <- conv, or
///    dropout <- activation <- bn <- conv, by the layers' roles (a function such as
///    `xq::ops::relu` in the chain counts) — whose head has no other consumer is left
///    unquantized and every other input gets a QDQ (TensorRT fuses the add into that
///    conv, so a QDQ there would only cost). An add written as `xq::ops::add` is refused.
///  - `batch_norm_inputs()`: quantizes the input of each batch norm (that the user's spec
///    does not place) whose producer is not a convolution (a conv's batch norm is folded at deployment).
///  - `max_pool_inputs()`: quantizes every max_pool2d input.
///  - `multiply_inputs(indices)`: quantizes the given inputs of every multiply
///    (EfficientNet's squeeze-excite).
/// Presets combine them as NVIDIA's model presets do: resnet_v1 (residual), resnet_v2
/// (residual, batch norm, max pool), efficientnet (residual, multiply [0, 1]),
/// mobilenet (residual), inception (max pool).

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "../config.hpp"
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
XQ_DECL bool is_conv_chain(const graph_trace& g, const traced_call* head);

}  // namespace detail

namespace qdq_cases {

/// NVIDIA's residual case (see the file comment).
XQ_DECL qdq_case residual_connection();
/// A QDQ on the input of each batch norm not fed by a convolution.
XQ_DECL qdq_case batch_norm_inputs();
/// A QDQ on every max_pool2d input.
XQ_DECL qdq_case max_pool_inputs();
/// A QDQ on the given inputs of every multiply.
XQ_DECL qdq_case multiply_inputs(std::vector<std::size_t> indices);

/// NVIDIA's model presets (see the file comment).
XQ_DECL std::vector<qdq_case> resnet_v1();
XQ_DECL std::vector<qdq_case> resnet_v2();
XQ_DECL std::vector<qdq_case> efficientnet();
XQ_DECL std::vector<qdq_case> mobilenet();
XQ_DECL std::vector<qdq_case> inception();

}  // namespace qdq_cases
}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/qdq_cases.ipp"
#endif
