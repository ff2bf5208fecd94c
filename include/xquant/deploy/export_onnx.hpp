#pragma once
/// \file export_onnx.hpp
/// `xq::deploy::export_onnx(model, shapes)`: a model as an ONNX QDQ file that a runtime
/// (onnxruntime, TensorRT) executes, computing what the simulation computed.
///
/// Two steps: the model's deploy graph (graph/build_graph.hpp: one traced inference pass,
/// every layer described by its deploy form, the decisions made once), then the graph as
/// ONNX (onnx/export_graph.hpp says how each op and each quantization point is written).
/// Any number of inputs and outputs, with shapes given as `xq::build` takes them:
///
/// \code
///   xq::deploy::export_onnx(qat, {28, 28, 1}, "model.onnx");           // one input, no batch axis
///   xq::deploy::export_options o;
///   o.input_names = {"frame_1", "frame_2"};
///   xq::deploy::export_onnx(flow, xq::input_shapes{{1, 28, 28, 1}, {1, 28, 28, 1}}, "flow.onnx", o);
/// \endcode
///
/// The model is read, not changed: it must be built, and every quantizer it deploys must
/// have seen data (`export_options::graph.allow_uncalibrated` deploys placeholder ranges).

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/model_call.hpp"
#include "graph/build_graph.hpp"
#include "onnx/export_graph.hpp"
#include "onnx/export_options.hpp"
#include "onnx/onnx_model.hpp"

namespace xq::deploy {

namespace detail {
/// The compiled part of export_onnx (export_onnx.ipp): the graph, then its ONNX form.
XQ_DECL onnx::model export_model(const model_handle& m, const std::vector<std::vector<std::size_t>>& shapes,
                                 const export_options& o);
}  // namespace detail

/// `model` as an ONNX model for one input of shape (N, sample_shape...) (see the file comment).
template <class Model>
onnx::model export_onnx(Model& model, const std::vector<std::size_t>& sample_shape, const export_options& o = {}) {
  return detail::export_model(detail::handle_of(model), detail::one_input(sample_shape), o);
}

/// `model` as an ONNX model for inputs of `shapes` (batch axis included, as `xq::build`
/// takes them; the batch axis is symbolic in the file).
template <class Model>
onnx::model export_onnx(Model& model, const input_shapes& shapes, const export_options& o = {}) {
  return detail::export_model(detail::handle_of(model), detail::checked_shapes(shapes, "xq::deploy::export_onnx"), o);
}

/// The same, written to `path` atomically (onnx::save).
template <class Model>
void export_onnx(Model& model, const std::vector<std::size_t>& sample_shape, const std::string& path,
                 const export_options& o = {}) {
  onnx::save(export_onnx(model, sample_shape, o), path);
}

template <class Model>
void export_onnx(Model& model, const input_shapes& shapes, const std::string& path, const export_options& o = {}) {
  onnx::save(export_onnx(model, shapes, o), path);
}

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/export_onnx.ipp"
#endif
