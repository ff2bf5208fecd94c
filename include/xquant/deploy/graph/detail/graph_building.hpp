#pragma once
/// \file graph_building.hpp
/// The state of one deploy-graph build (build_graph.ipp), which a layer_builder writes
/// into: private to deploy/graph.

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../../core/graph_trace.hpp"
#include "../../../quantizers/quantizer_layer.hpp"
#include "../../../wrappers/batch_norm_folding.hpp"
#include "../graph_options.hpp"
#include "../deploy_graph.hpp"

namespace xq::deploy::detail {

/// What a quantized twin attached to the call being described (wrapper_forms.hpp).
struct attached_quantizers {
  std::vector<const quantizer_base*> inputs;  ///< by input index (null: none)
  const quantizer_base* output = nullptr;
  const quantizer_base* kernel = nullptr;
  std::shared_ptr<batch_norm_fold> fold;
  bool folded_norm = false;
  float pad_value = 0.0f;
};

/// argument_error naming `name` unless every element of `t` is finite.
XQ_DECL void check_finite(const tensor& t, const std::string& name);

struct graph_building {
  deploy_graph graph;
  graph_options options;
  const graph_trace* trace = nullptr;
  std::unordered_map<const variable_state*, value_id> value_of;
  std::set<const variable_state*> constants;  ///< values made without the inputs
  std::vector<std::size_t> occurrence;        ///< per call: how many calls of its path came before
  std::map<const void*, std::size_t> weight_of;  ///< parameter -> graph weight

  // The call being described.
  attached_quantizers attached;
  std::vector<value_id> raw_inputs;        ///< its inputs' values
  std::vector<value_id> quantized_inputs;  ///< through their quantizers, once asked (no_index: not yet)

  /// The value of a traced state: made by an earlier call, a model input, or a constant.
  XQ_DECL value_id value(const variable_state* s, const std::string& who);
  /// A quantization point on `v` (traced as `traced`) with quantizer `q`, or `v` itself when
  /// `q` is off; `call_index` and `input`/`output` say where.
  XQ_DECL value_id quantize(value_id v, const quantizer_base& q, const tensor& traced, std::size_t call_index,
                    std::size_t input, bool output);
  /// "block/conv input", "mix input 1 (call 2)", "block/conv output".
  XQ_DECL std::string label(std::size_t call_index, std::size_t input, bool output) const;
  /// The graph weight of parameter `p` (added once), noting `layer` as a user.
  XQ_DECL std::size_t weight_index(const parameter_ptr& p, const std::string& layer);
};

}  // namespace xq::deploy::detail
