#pragma once
/// \file trace_walk.hpp
/// What lowering (lower.ipp) and export (export_onnx.ipp) share when they walk a traced
/// pass: which call site of a layer a call is, the quantizer on at that site, the uses of
/// a value (dropout at inference gives its input back: its users take that value too), a
/// batch norm's inference arithmetic, and the kernel the simulation fake-quantizes (the
/// folded one when a batch norm is folded in).

#include <array>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/graph_trace.hpp"
#include "../core/tensor.hpp"
#include "../quantizers/quantization_grid.hpp"
#include "layer_info.hpp"

namespace xq::deploy::detail {

/// A batch norm at inference as xq::ops::batch_norm computes it: y = (x - mean) * scale +
/// offset, scale = gamma * float(1 / sqrt(double(variance) + epsilon)).
struct norm_affine {
  std::vector<float> mean, scale, offset;
};
XQ_DECL norm_affine affine_of(const batch_norm& bn, const std::string& where);

/// The kernel a linear layer's kernel quantizer sees: the float kernel, or kernel * s with
/// s = gamma / sqrt(moving_variance + epsilon) (`fold_scale` gets s) when a batch norm is
/// folded, with the simulation's own operations.
XQ_DECL tensor quantized_kernel_input(const layer_info& info, std::vector<float>* fold_scale);

/// For output channel `o` of a linear layer whose kernel grid is `g`: the index of the grid
/// channel that scales it (the output axis; a depthwise kernel (KH, KW, C, M): C or M).
/// argument_error naming `where` for a grid on another axis.
XQ_DECL std::size_t weight_channel(const layer_info& info, const quantization_grid& g, std::size_t rank,
                                   std::size_t o, const std::string& where);

/// The zeros a Keras-padded window adds around an NHWC input of shape `s`: {top, left,
/// bottom, right} (kernels/padding.hpp's rules; ONNX's `pads` order too).
XQ_DECL std::array<std::size_t, 4> window_pads(const tensor::shape_type& s, std::array<std::size_t, 2> window,
                                               std::array<std::size_t, 2> strides, std::array<std::size_t, 2> dilation,
                                               xq::padding p);

/// The QDQ sites of input `k` of a layer (a merge, or a twin with a site per input, has
/// one per input).
inline const site_quantizers* input_sites(const layer_info& i, std::size_t k) {
  if (i.what == layer_info::kind::merge || !i.inputs.empty()) return k < i.inputs.size() ? i.inputs[k] : nullptr;
  return k == 0 ? i.input : nullptr;
}

/// A function layer's integer arguments as function_op (function_op.hpp) takes them: axes
/// non-negative (of the traced input's rank), a slice's end where the layer says "to the
/// end". argument_error naming the layer for an axis outside the input.
XQ_DECL std::vector<std::int64_t> function_arguments(const layer_info& info, const traced_call& c);

class trace_walk {
 public:
  /// `constants`: the values the forward code made without the input (model_access.hpp's
  /// constant_values), which lowering and export fix.
  XQ_DECL trace_walk(const graph_trace& g, const layer_table& t, std::set<const variable_state*> constants = {});

 protected:
  /// The layer's info (null for a function or a layer the table does not know).
  XQ_DECL const layer_info* info_of(const traced_call& c) const;
  std::size_t call_number(const traced_call* c) const { return std::size_t(c - g_.calls().data()); }
  /// The quantizer of `sites` at the call site of call number `i`, if on.
  XQ_DECL const fake_quantizer* site_quantizer(const site_quantizers* sites, std::size_t i) const;
  /// "block/conv input", "shared input 1 (call 2)": the name of input `input` of call
  /// number `i` in parity reports and exposed ONNX outputs.
  XQ_DECL std::string input_label(std::size_t i, std::size_t input) const;
  /// The calls that take `s`, without those that give it back unchanged.
  XQ_DECL std::vector<const traced_call*> uses_of(const variable_state* s) const;

  const graph_trace& g_;
  const layer_table& t_;
  std::set<const variable_state*> fixed_values_;  ///< values made without the input (constant_values)
  std::vector<std::size_t> occurrence_;  ///< per call: how many calls of its path came before
};

}  // namespace xq::deploy::detail

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/trace_walk.ipp"
#endif
