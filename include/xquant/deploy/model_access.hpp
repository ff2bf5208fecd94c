#pragma once
/// \file model_access.hpp
/// A model as the compiled deployment code sees it: its address (`layer_ref`, for the
/// compiled walks), its forward call and its typed description walk (layer_info.hpp), each
/// a function pointer instantiated once per model type. `lower`, `export_onnx` and
/// `parity` are thin templates that make one and call compiled code, so a program pays
/// for their walks once, in the library, not in every translation unit (issue 12's rule).

#include <cstddef>
#include <set>
#include <vector>

#include "../config.hpp"
#include "../core/graph_trace.hpp"
#include "../core/layer_ref.hpp"
#include "../core/model.hpp"
#include "../core/var.hpp"
#include "layer_info.hpp"

namespace xq::deploy::detail {

struct model_access {
  void* model;
  layer_ref ref;
  var (*call)(void* model, const var& x);
  void (*describe)(void* model, layer_table& table);
};

template <class Model>
model_access access(Model& m) {
  static_assert(!std::is_const_v<Model>, "xquant: deployment runs the model once: pass a non-const model");
  return {&m, as_layer_ref(m), [](void* p, const var& x) -> var { return (*static_cast<Model*>(p))(x); },
          [](void* p, layer_table& t) {
            for_each_layer(*static_cast<Model*>(p), [&](const auto& l) { describe_layer(t, l); });
          }};
}

/// One inference pass on zeros of shape (1, sample_shape...) (lazy layers build), paths
/// set, every layer described (a Larq kernel quantizer runs here: no trace may be active).
XQ_DECL void build_and_describe(const model_access& m, const std::vector<std::size_t>& sample_shape,
                                layer_table& table);

/// The same inference pass while the caller's trace is active.
XQ_DECL void traced_pass(const model_access& m, const std::vector<std::size_t>& sample_shape, var& input,
                         var& output);

/// The values `trace` (a traced pass with input `input`) sees used but not made, that the
/// model's forward code makes without its input: the position indices a transformer builds
/// from the sample shape, say. Lowering and export fix them as constants. Found by a second
/// pass on ones that records gradients from its input: such a value needs no gradient there
/// and has the first pass's value. Anything else no traced call made stays an error.
XQ_DECL std::set<const variable_state*> constant_values(const model_access& m,
                                                        const std::vector<std::size_t>& sample_shape,
                                                        const graph_trace& trace, const variable_state* input);

}  // namespace xq::deploy::detail

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/model_access.ipp"
#endif
