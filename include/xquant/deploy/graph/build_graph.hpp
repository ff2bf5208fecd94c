#pragma once
/// \file build_graph.hpp
/// `xq::deploy::build_graph(model, shapes)`: a model as its deploy graph
/// (deploy_graph.hpp), from one traced inference pass on zeros of the input shapes.
///
/// How: a typed walk of the model collects every layer's deploy form by path
/// (deploy_form.hpp; the wrapper forms attach the twins' quantizers); one traced pass
/// (core/graph_trace.hpp) gives the calls in order and who feeds whom, for any number of
/// inputs and outputs; then each call is described by its layer's form (a function's by
/// its name), values the forward code made without the inputs become constants, and the
/// decisions both back-ends need are made (graph_decisions.hpp).
///
/// The model is read, not changed: it must be built (`xq::build`) and — unless
/// `allow_uncalibrated` — every quantizer it deploys must have seen data (a QAT step or a
/// calibration). Errors name the layer path and say what was expected.
///
/// `model_handle` is the model type-erased: lower, export_onnx and parity are thin
/// templates that make one and call compiled code, so a program pays for the walks once,
/// in the library (issue 12's rule).

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/graph_trace.hpp"
#include "../../core/layer_ref.hpp"
#include "../../core/layer_traits.hpp"
#include "../../core/model.hpp"
#include "../../core/model_call.hpp"
#include "../../core/var.hpp"
#include "deploy_form.hpp"
#include "deploy_graph.hpp"
#include "graph_options.hpp"
#include "layer_forms.hpp"
#include "wrapper_forms.hpp"

namespace xq::deploy {

namespace detail {

/// A model, type-erased (see the file comment).
struct model_handle {
  void* model = nullptr;
  layer_ref ref;
  var_list (*call)(void* model, const var_list& inputs) = nullptr;
  /// Every layer's form by path, and the paths of weighted layers never built.
  void (*collect_forms)(void* model, form_table& forms, std::vector<std::string>& unbuilt) = nullptr;
};

template <class L, class = void>
struct has_path : std::false_type {};
template <class L>
struct has_path<L, std::void_t<decltype(std::declval<const L&>().path())>> : std::true_type {};

template <class Model>
model_handle handle_of(Model& m) {
  static_assert(!std::is_const_v<Model>, "xquant: deployment runs the model once: pass a non-const model");
  model_handle a;
  a.model = &m;
  a.ref = as_layer_ref(m);
  a.call = [](void* p, const var_list& inputs) { return call_model(*static_cast<Model*>(p), inputs, "xq::deploy"); };
  a.collect_forms = [](void* p, form_table& forms, std::vector<std::string>& unbuilt) {
    for_each_layer(*static_cast<Model*>(p), [&](const auto& l) {
      using L = std::decay_t<decltype(l)>;
      if constexpr (has_path<L>::value && (has_deploy_form_v<L> || !has_children_v<L>)) forms[l.path()] = form_of(l);
      if constexpr (has_path<L>::value && has_kernel_v<L>)
        if (!l.kernel()) unbuilt.push_back(l.path());
    });
  };
  return a;
}

/// The input shapes (batch first) of a model taking one input of `sample_shape`.
XQ_DECL std::vector<std::vector<std::size_t>> one_input(const std::vector<std::size_t>& sample_shape);
/// `shapes` as vectors, each checked (rank >= 1, no zero extent); `where` names the caller.
XQ_DECL std::vector<std::vector<std::size_t>> checked_shapes(const input_shapes& shapes, const char* where);

/// The compiled build (build_graph.ipp).
XQ_DECL deploy_graph build_graph(const model_handle& m, const std::vector<std::vector<std::size_t>>& shapes,
                                 const graph_options& o);

}  // namespace detail

/// `model`'s deploy graph for inputs of `shapes` (batch axis included, as `xq::build` takes them).
template <class Model>
deploy_graph build_graph(Model& model, const input_shapes& shapes, const graph_options& o = {}) {
  return detail::build_graph(detail::handle_of(model), detail::checked_shapes(shapes, "xq::deploy::build_graph"), o);
}

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/build_graph.ipp"
#endif
