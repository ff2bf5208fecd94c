#pragma once
/// \file layer_builder.hpp
/// `xq::deploy::layer_builder`: what a layer's deploy form writes into — the deploy graph
/// (deploy_graph.hpp) being built, positioned at one traced call of the layer.
///
/// The deploy protocol (docs/layer_contract.md, "Deploying"): a leaf layer type `L`, a
/// built-in or a user's, deploys through a function found by argument-dependent lookup,
///
///     xq::deploy::value_id describe_deployment(const L& layer, xq::deploy::layer_builder& b);
///
/// which describes one call of the layer — as an existing op (graph_ops.hpp), as a
/// composition of ops, or as "not deployable, because ..." (`b.refuse(...)`) — and returns
/// the value that is the call's output. Composites need none (their children's calls are
/// traced); a quantized twin's wrapper forms (wrapper_forms.hpp) attach its quantizers and
/// then call its float layer's form, so a user's layer deploys quantized as soon as it
/// deploys in float.
///
/// \code
///   namespace my {
///   // a leaf layer with its own forward and backward: its deploy form
///   xq::deploy::value_id describe_deployment(const channel_max& l, xq::deploy::layer_builder& b) {
///     xq::deploy::op::pool p;
///     p.what = xq::deploy::op::pool::kind::max;
///     p.global = true;
///     return b.add(p, {b.input(0)});
///   }
///   }
/// \endcode
///
/// Inputs come through the call's input quantizers (`input(k)` adds the quantization point
/// once); kernels through its kernel quantizer (`kernel(p)`); the output quantizer is
/// applied after the form returns. Each op's output shape is the call's traced output
/// shape unless given (an elementwise op takes its first input's): a composition gives the
/// shapes of its intermediate values. The value a form returns must have the traced
/// output's shape.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../config.hpp"
#include "../../core/parameter.hpp"
#include "../../core/tensor.hpp"
#include "../../kernels/padding.hpp"
#include "graph_ops.hpp"

namespace xq {
class quantizer_base;
class site_quantizers;
struct batch_norm_fold;
}  // namespace xq

namespace xq::deploy {

class deploy_graph;

namespace detail {
struct graph_building;  // the state of one build (build_graph.ipp)
}  // namespace detail

class layer_builder {
 public:
  /// Positioned at call `call_index` of the trace being built (build_graph.ipp makes these).
  layer_builder(detail::graph_building& state, std::size_t call_index) : state_(state), call_(call_index) {}
  layer_builder(const layer_builder&) = delete;
  layer_builder& operator=(const layer_builder&) = delete;

  // ---- the call -------------------------------------------------------------------------

  /// The layer's path ("block/conv"), or "xq::ops::<function>" for a function.
  XQ_DECL const std::string& path() const;
  /// The layer's type as traced ("conv2d"; a wrapper reports the type it wraps).
  XQ_DECL const std::string& type() const;
  /// Which call of the layer this is (0: its first in the pass).
  XQ_DECL std::size_t call() const;
  /// How many inputs the call has.
  XQ_DECL std::size_t input_count() const;
  /// Input `k`, through the call's input quantizer for it if one is on (the quantization
  /// point is added on the first request). argument_error for k past the inputs.
  XQ_DECL value_id input(std::size_t k = 0);
  /// Input `k` as it reaches the layer, without its input quantizer.
  XQ_DECL value_id raw_input(std::size_t k = 0) const;
  /// The traced shape of a value (batch first).
  XQ_DECL const std::vector<std::size_t>& shape(value_id v) const;
  /// The traced shape of the call's output.
  XQ_DECL const std::vector<std::size_t>& output_shape() const;
  /// A traced function's arguments other than its inputs (graph_trace.hpp).
  XQ_DECL const std::vector<std::int64_t>& attributes() const;

  // ---- ops -------------------------------------------------------------------------------

  /// A node computing `op` on `inputs`; returns its output. `shape`: the output's (empty:
  /// the first input's for quantize, activation and batch norm ops, else the call's output).
  XQ_DECL value_id add(deploy_op op, std::vector<value_id> inputs, std::vector<std::size_t> shape = {});
  /// A weight as it is (a bias, a table the use does not quantize): one graph weight per
  /// parameter. An empty pointer: none.
  XQ_DECL weight_use weight(const parameter_ptr& p);
  /// The layer's kernel as the simulation multiplies by it: through the kernel quantizer a
  /// wrapper attached (quantize_kernel), folded (fold) when a batch norm is folded in.
  XQ_DECL weight_use kernel(const parameter_ptr& p);
  /// A window over input 0's traced shape.
  XQ_DECL op::window window(std::array<std::size_t, 2> size, std::array<std::size_t, 2> strides,
                            std::array<std::size_t, 2> dilation, xq::padding p) const;
  /// The value a same-padded window's border holds (Larq's pad_values), for linear ops
  /// made in this call; 0 unless a wrapper set it.
  XQ_DECL float pad_value() const;
  /// Stops the build: the layer has no deployed form, for the reason given (the error
  /// names the layer's path and type).
  [[noreturn]] XQ_DECL void refuse(const std::string& because) const;

  // ---- what a quantized twin attaches before its float layer's form runs --------------

  /// Input `k` through this call's site of `sites` (an NVIDIA-style QDQ site; off: nothing).
  XQ_DECL void quantize_input(std::size_t k, const site_quantizers& sites);
  /// Input `k` through `q` (a Larq quant layer's input quantizer; off: nothing).
  XQ_DECL void quantize_input(std::size_t k, const quantizer_base& q);
  /// The output through this call's site of `sites`.
  XQ_DECL void quantize_output(const site_quantizers& sites);
  /// The kernel through `q`.
  XQ_DECL void quantize_kernel(const quantizer_base& q);
  /// A batch norm folded into the kernel (weight_quantized::folded()).
  XQ_DECL void fold(const std::shared_ptr<batch_norm_fold>& link);
  /// This call is of a batch norm folded into the linear layer before it.
  XQ_DECL void mark_folded();
  /// Larq's pad_values.
  XQ_DECL void set_pad_value(float v);

 private:
  detail::graph_building& state_;
  std::size_t call_;
};

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/layer_builder.ipp"
#endif
