#pragma once
/// \file export_onnx.ipp
/// export_onnx's compiled part (deploy/export_onnx.hpp): the deploy graph, then its ONNX form.

#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../export_onnx.hpp"

namespace xq::deploy::detail {

XQ_DECL onnx::model export_model(const model_handle& m, const std::vector<std::vector<std::size_t>>& shapes,
                                 const export_options& o) {
  const char* where = "xq::deploy::export_onnx";
  if (!o.input_names.empty() && o.input_names.size() != shapes.size())
    throw argument_error(where, xq::detail::concat("export_options::input_names with one name per input (", shapes.size(), ")"),
                         xq::detail::concat(o.input_names.size(), " names"));
  graph_options go = o.graph;
  go.input_names = o.input_names.empty() ? std::vector<std::string>{o.input_name} : o.input_names;
  go.output_names = o.output_names.empty() ? std::vector<std::string>{o.output_name} : o.output_names;
  const deploy_graph g = build_graph(m, shapes, go);
  if (!o.output_names.empty() && o.output_names.size() != g.outputs.size())
    throw argument_error(where, xq::detail::concat("export_options::output_names with one name per output (", g.outputs.size(), ")"),
                         xq::detail::concat(o.output_names.size(), " names"));
  return export_graph(g, o);
}

}  // namespace xq::deploy::detail
