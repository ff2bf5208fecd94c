#pragma once
/// \file onnx_writer.hpp
/// The state of one ONNX export (export_graph.hpp): private to deploy/onnx. The writer
/// holds the graph being read and the ONNX graph being written; `translate` has one
/// overload per graph op (impl/export_graph.ipp; the ops with weights in
/// impl/onnx_weights.ipp), which `run` reaches through a `std::visit` over `deploy_op`, so
/// an op without a translation fails to compile.

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../../../config.hpp"
#include "../../graph/deploy_graph.hpp"
#include "../export_options.hpp"
#include "../onnx_model.hpp"

namespace xq::deploy::detail {

/// A value of the deploy graph as the ONNX graph holds it: its name there and, for rank 4,
/// whether it is laid out NCHW (ONNX's spatial ops) or NHWC (xquant's).
struct onnx_value {
  std::string name;
  std::size_t rank = 0;
  bool nchw = false;
};

/// Where the elements of a weight go in its ONNX tensor, and where a per-channel grid's
/// scales run along it.
struct onnx_layout {
  enum class kind {
    as_is,           ///< dense kernel (K, F), table (V, D), any weight kept in its own layout
    conv2d,          ///< HWIO -> OIHW
    depthwise,       ///< (KH, KW, C, M) -> (C·M, 1, KH, KW), output channel c·M + m
    conv_transpose,  ///< (KH, KW, F, C) -> (C, F, KH, KW)
    lstm_recurrent,  ///< (u, 4u) -> (1, 4u, u), Keras's gate columns i, f, c, o as ONNX's rows i, o, f, c
    gru_recurrent    ///< (u, 3u) -> (1, 3u, u), the gate columns z, r, h as rows
  };
  kind what = kind::as_is;
  std::vector<std::int64_t> dims;  ///< the ONNX tensor's
  std::vector<std::size_t> from;   ///< ONNX element e is the weight's element from[e] (empty: same order)
  /// The ONNX axis of a per-channel grid's scales (-1: one scale), and per index along it the
  /// grid's channel.
  std::int64_t axis = -1;
  std::vector<std::size_t> channel;
};

/// Whether `g` is a binary grid (±1 times its scale: Larq's signs).
inline bool binary_grid(const quantization_grid& g) noexcept { return g.num_bits == 1 && g.qmin == -1 && g.qmax == 1; }


class onnx_writer {
 public:
  /// `o.opset` resolved (13, or 19 and later).
  XQ_DECL onnx_writer(const deploy_graph& g, const export_options& o);
  XQ_DECL onnx::model run();

  // ---- one translation per op --------------------------------------------------------------
  XQ_DECL void translate(std::size_t i, const op::quantize& o);
  XQ_DECL void translate(std::size_t i, const op::linear& o);
  XQ_DECL void translate(std::size_t i, const op::pool& o);
  XQ_DECL void translate(std::size_t i, const op::batch_norm& o);
  XQ_DECL void translate(std::size_t i, const op::activation& o);
  XQ_DECL void translate(std::size_t i, const op::merge& o);
  XQ_DECL void translate(std::size_t i, const op::reshape& o);
  XQ_DECL void translate(std::size_t i, const op::pad& o);
  XQ_DECL void translate(std::size_t i, const op::slice& o);
  XQ_DECL void translate(std::size_t i, const op::upsample& o);
  XQ_DECL void translate(std::size_t i, const op::transpose& o);
  XQ_DECL void translate(std::size_t i, const op::gather& o);
  XQ_DECL void translate(std::size_t i, const op::layer_norm& o);
  XQ_DECL void translate(std::size_t i, const op::matmul& o);
  XQ_DECL void translate(std::size_t i, const op::attention_probabilities& o);
  XQ_DECL void translate(std::size_t i, const op::attend& o);
  XQ_DECL void translate(std::size_t i, const op::conv_transpose& o);
  XQ_DECL void translate(std::size_t i, const op::recurrence& o);
  XQ_DECL void translate(std::size_t i, const op::correlation& o);
  XQ_DECL void translate(std::size_t i, const op::constant& o);

 private:
  // ---- values and names ---------------------------------------------------------------------
  /// Input `k` of node `i` (made by an earlier node or a graph input).
  XQ_DECL onnx_value input(std::size_t i, std::size_t k) const;
  XQ_DECL void set_output(std::size_t i, onnx_value v);
  const std::vector<std::size_t>& shape_of(value_id v) const { return g_.values[v].shape; }
  /// `base`, or base_1, base_2, ... : a name no node output or initializer has yet.
  XQ_DECL std::string fresh(const std::string& base);
  XQ_DECL std::string add_initializer(onnx::tensor_data t);
  /// A node of `op` on `in`; returns its (fresh) output's name.
  XQ_DECL std::string node(const std::string& op, std::vector<std::string> in, const std::string& out_base,
                           std::vector<onnx::attribute> attrs = {});
  /// A float scalar initializer (one per value).
  XQ_DECL std::string constant(float v);
  /// A 1-D int64 initializer (axes, shapes, pads).
  XQ_DECL std::string int64s(const std::string& name, const std::vector<std::int64_t>& v);
  /// A rank-4 value in ONNX's NCHW / xquant's NHWC (a Transpose, made once per value).
  XQ_DECL onnx_value to_nchw(onnx_value v);
  XQ_DECL onnx_value to_nhwc(onnx_value v);
  /// ReduceMean over `axes`, keeping them: an attribute to opset 17, an input from 18.
  XQ_DECL std::string reduce_mean(const std::string& x, const std::vector<std::int64_t>& axes, const std::string& name);
  /// (B, T, H·d) -> (B, H, T, d), or (B, H, d, T) with `keys_last`: one head per slice.
  XQ_DECL std::string split_heads(const std::string& x, const std::vector<std::size_t>& s, std::size_t heads,
                                  bool keys_last, const std::string& name);

  // ---- quantization -------------------------------------------------------------------------
  /// The integer type of an activation grid's QuantizeLinear: 8 bits where they hold it,
  /// else 16 (opset 21).
  XQ_DECL onnx::data_type storage(const quantization_grid& g, const std::string& where) const;
  /// Records a quantizer's numerics and grid in the metadata.
  XQ_DECL void note(const std::string& quantizer, const std::string& description, const quantization_grid& g);
  /// x (float) through Q → [Clip] → DQ on the per-tensor grid of quantization point `q`.
  XQ_DECL std::string qdq(const std::string& x, const op::quantize& q, const std::vector<std::size_t>& shape);

  // ---- weights (onnx_weights.ipp) -----------------------------------------------------------
  /// The layout of weight `w` of shape `s` in ONNX, and where grid `g` (null: none)'s scales
  /// run; `where` names the quantizer in errors.
  XQ_DECL onnx_layout layout_of(onnx_layout::kind k, const tensor::shape_type& s, const quantization_grid* g,
                                const std::string& where) const;
  /// The float values of a weight use (the simulation's dequantized ones when quantized).
  XQ_DECL const tensor& weight_value(const weight_use& u, const std::string& where) const;
  /// Node `i`'s weight use `u` as an ONNX value in layout `k`: a float initializer, or the
  /// simulation's integers + DequantizeLinear (int4 where `int4_ok` and the opset allow it),
  /// or float + QuantizeLinear + DequantizeLinear (the float_qdq layout, a tied weight).
  /// Initializers once per weight (per call site without share_reused_weights), nodes per
  /// use. `layout` gets the layout used.
  XQ_DECL std::string weight(std::size_t i, const weight_use& u, onnx_layout::kind k, const std::string& name,
                             bool int4_ok, onnx_layout* layout = nullptr);
  /// A tied weight's quantized use: QuantizeLinear → [Clip] → DequantizeLinear on the one
  /// float initializer `stored`; metadata counts where Q's integers differ from the
  /// simulation's.
  XQ_DECL std::string tied_use(const std::string& stored, const weight_use& u, const onnx_layout& l,
                               const tensor& value);

  // ---- low-bit formats (onnx_low_bit.ipp) ------------------------------------------------
  /// A low-bit kernel (is_low_bit_grid): its elements (int4 / int2 / int8, FLOAT8E4M3FN or, in
  /// the spec form, FLOAT4E2M1) and scales (float32; FLOAT8E8M0 in the spec form; NVFP4's
  /// FLOAT8E4M3FN block scales dequantized by the tensor scale) through a blocked
  /// DequantizeLinear along the layout's image of the grid's axis. Checks that the file
  /// dequantizes to the simulation's values, element for element.
  XQ_DECL std::string low_bit_kernel(std::size_t i, const weight_use& u, onnx_layout& l, const std::string& name);
  /// A dynamic quantization point (op::quantize with a format): the operators that compute
  /// each tensor's scales and values in the simulation's order of float operations.
  XQ_DECL onnx_value dynamic_quantize(std::size_t i, const op::quantize& q);
  /// ReduceMax / ReduceMin / ReduceSum over `axes`: an attribute to opset 17 (ReduceSum: 12),
  /// an input from 18 (13).
  XQ_DECL std::string reduce(const std::string& op, const std::string& x, const std::vector<std::int64_t>& axes,
                             bool keepdims, const std::string& name);
  /// A float32 initializer of `values` along one axis (a lookup table, thresholds).
  XQ_DECL std::string floats(const std::string& name, const std::vector<float>& values);
  /// Exposes `value` (of type `t`, dims `dims`) as graph output `name` once.
  XQ_DECL void expose(const std::string& value, const std::string& name, onnx::data_type t,
                      std::vector<onnx::dimension> dims);

  const deploy_graph& g_;
  export_options o_;
  onnx::graph out_;
  std::vector<onnx_value> values_;  ///< per graph value (empty name: not made yet)
  std::set<std::string> used_;
  std::map<std::string, std::string> nchw_, nhwc_;  ///< a value's transposed twin, by name
  std::map<float, std::string> constants_;
  /// An activation grid's initializers, made once per quantizer and grid: its scale and zero
  /// point, the integer Clip bounds of a grid narrower than its 8-bit type, or the float
  /// bounds that clip before a 16-bit Q (empty where not needed).
  struct activation_initializers {
    std::string scale, zero_point, qmin, qmax, float_min, float_max;
  };
  std::map<std::string, activation_initializers> activation_params_;
  /// A weight's initializers: the stored tensor, its grid's scale and zero point, and what
  /// each use does with them.
  struct stored_weight {
    std::string stored, scale, zero_point;
    onnx_layout layout;
    bool quantize = false, dequantize = false;
    /// A low-bit kernel: its blocked DequantizeLinear's block size (0: per tensor or axis),
    /// and the second level of a two-level scale (NVFP4: `scale` holds the FLOAT8E4M3FN block
    /// scales, dequantized by `tensor_scale`); `e8m0`: `scale` is FLOAT8E8M0 (spec form).
    std::int64_t block_size = 0;
    std::string tensor_scale;
    bool e8m0 = false;
    /// torchao's int4 weight-only: the float offsets added after DequantizeLinear, shaped to
    /// broadcast over each block (`offset_split`: the kernel's dims with the block axis split
    /// into (blocks, block); empty: one offset for the tensor).
    std::string offset;
    std::vector<std::int64_t> offset_split;
  };
  std::map<std::string, stored_weight> weights_;
  std::map<std::string, std::vector<std::string>> biases_;  ///< a bias's initializers, by layer and input scale
  std::map<std::string, std::string> numerics_, quantizer_notes_;
};

}  // namespace xq::deploy::detail
