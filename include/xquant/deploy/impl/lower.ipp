#pragma once
/// \file lower.ipp
/// Lowering a traced model to the integer engine's ops (deploy/lower.hpp).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/tape.hpp"
#include "../../kernels/channel_layout.hpp"
#include "../../kernels/padding.hpp"
#include "../../wrappers/batch_norm_folding.hpp"
#include "../function_op.hpp"
#include "../lower.hpp"
#include "../trace_walk.hpp"

namespace xq::deploy::detail {

inline bool same_grid(const engine_tensor& meta, const quantization_grid& g) {
  return meta.kind == value_kind::integer && meta.scale == g.scale[0] && meta.zero_point == g.zero_point[0] &&
         meta.qmin == g.qmin && meta.qmax == g.qmax;
}

class lowering : trace_walk {
 public:
  lowering(const graph_trace& g, const layer_table& t, const lower_options& o,
           const std::set<const variable_state*>& constants)
      : trace_walk(g, t, constants), o_(o) {
    model_.scheme = o.requant;
  }

  integer_model run(const variable_state* input, const variable_state* output, const std::vector<std::size_t>& shape) {
    model_.input_shape = shape;
    engine_tensor in;
    in.kind = value_kind::real;
    model_.input_value = add_value(in);
    value_of_[input] = model_.input_value;
    const auto& calls = g_.calls();
    for (std::size_t i = 0; i < calls.size(); ++i) {
      if (skipped_.count(i)) continue;
      lower_call(i);
    }
    model_.output_value = value(output, "the model's output");
    model_.value_count = meta_.size();
    fuse_unit_conv_pools();
    return std::move(model_);
  }

  /// A float conv with a ±1 kernel (a BNN's stem) whose output only a max pool reads takes
  /// the pool in (real_linear_op::pooled): its full-size output is then never written.
  void fuse_unit_conv_pools() {
    auto& ops = model_.ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto* conv = dynamic_cast<real_linear_op*>(ops[i].get());
      if (!conv || conv->pooled || !conv->unit_kernel() || conv->output == model_.output_value) continue;
      std::size_t readers = 0, reader = 0;
      for (std::size_t j = i + 1; j < ops.size(); ++j)
        for (std::size_t in : ops[j]->inputs)
          if (in == conv->output) ++readers, reader = j;
      bool observed = false;  // a parity point reads it
      for (const parity_point& p : model_.parity_points) observed = observed || p.value == conv->output;
      const auto* pool = readers == 1 ? dynamic_cast<const max_pool_op*>(ops[reader].get()) : nullptr;
      if (!pool || observed) continue;
      conv->pooled = true;
      conv->pool = pool->geometry;
      conv->output = pool->output;
      conv->path += " + " + pool->path;
      ops.erase(ops.begin() + std::ptrdiff_t(reader));
    }
  }

 private:
  // --- values ----------------------------------------------------------------------

  std::size_t add_value(const engine_tensor& meta) {
    meta_.push_back(meta);
    return meta_.size() - 1;
  }

  std::size_t value(const variable_state* s, const std::string& who) {
    const auto it = value_of_.find(s);
    if (it != value_of_.end()) return it->second;
    if (!fixed_values_.count(s))
      throw argument_error(who, "an input made by a layer or an xq::ops function with a layer form",
                           "a value computed by code the trace does not see (write it as a layer)");
    auto op = std::make_unique<constant_op>();  // made without the input: fixed now
    op->value = s->value;
    return value_of_[s] = emit(std::move(op), who + " (constant)", {}, real_meta());
  }

  template <class Op>
  std::size_t emit(std::unique_ptr<Op> op, std::string path, std::vector<std::size_t> inputs, engine_tensor meta) {
    op->path = std::move(path);
    op->inputs = std::move(inputs);
    op->output = add_value(meta);
    const std::size_t out = op->output;
    model_.ops.push_back(std::move(op));
    return out;
  }

  static engine_tensor real_meta() { return engine_tensor{}; }
  static engine_tensor kind_meta(value_kind k) {
    engine_tensor m;
    m.kind = k;
    return m;
  }

  std::size_t to_real(std::size_t v, const std::string& path) {
    switch (meta_[v].kind) {
      case value_kind::real: return v;
      case value_kind::integer: return emit(std::make_unique<dequantize_op>(), path, {v}, real_meta());
      case value_kind::accumulator: {
        auto bn = std::make_unique<batch_norm_op>();  // identity affine: the accumulator as floats
        const std::size_t c = meta_[v].shape.empty() ? 0 : meta_[v].shape.back();
        bn->mean.assign(c, 0.0f);
        bn->scale.assign(c, 1.0f);
        bn->offset.assign(c, 0.0f);
        return emit(std::move(bn), path, {v}, real_meta());
      }
      case value_kind::bits: break;
    }
    throw argument_error(path, "a real, integer or accumulator input", "bit-packed ±1 values");
  }

  /// `v` on the grid of `q`, quantizing (and recording a parity point) if needed.
  std::size_t to_integer(std::size_t v, const fake_quantizer& q, std::size_t call, std::size_t input,
                         bool output = false) {
    const traced_call& c = g_.calls()[call];
    if (q.config().per_channel)
      throw argument_error(q.path(), "a per-tensor activation quantizer (the integer engine's activations have one grid)",
                           "a per-channel one");
    const quantization_grid grid = q.grid(1);
    grid_owners_.push_back(&q);
    if (grid.qmax - grid.qmin > 255 + 255 || grid.qmin - grid.zero_point[0] < -32768 ||
        grid.qmax - grid.zero_point[0] > 32767)
      throw argument_error(q.path(), "an activation grid of at most 9 bits", describe(grid));
    if (!same_grid(meta_[v], grid)) {
      v = to_real(v, c.path);
      auto op = std::make_unique<quantize_op>();
      op->grid = q.grid_of(tensor::from_shape({1})).value_or(grid);  // per tensor (checked above): any shape
      engine_tensor m = kind_meta(value_kind::integer);
      m.scale = grid.scale[0];
      m.zero_point = grid.zero_point[0];
      m.qmin = grid.qmin;
      m.qmax = grid.qmax;
      v = emit(std::move(op), c.path, {v}, m);
    }
    model_.parity_points.push_back(parity_point{output ? c.path + " output" : input_label(call, input), c.path,
                                                occurrence_[call], input, q.path(), v, false, output});
    return v;
  }

  /// `v` as bits: Larq's sign of it (a parity point: the simulation's ±1 input).
  std::size_t to_bits(std::size_t v, std::size_t call) {
    const traced_call& c = g_.calls()[call];
    if (meta_[v].kind != value_kind::bits) {
      if (meta_[v].kind == value_kind::integer) v = to_real(v, c.path);
      v = emit(std::make_unique<sign_op>(), c.path, {v}, kind_meta(value_kind::bits));
    }
    model_.parity_points.push_back(parity_point{input_label(call, 0) + " (±1)", c.path, occurrence_[call], 0, "", v, true});
    return v;
  }

  // --- the trace -------------------------------------------------------------------

  /// Whether an op passes a monotone rounding through unchanged and has no quantizer of its own
  /// (relu6 too: q(min(max(x, 0), 6)) = min(max(q(x), q(0)), q(6)), a clamp of the integers).
  bool commutes(const traced_call* c) const {
    if (c->function) return c->type == "relu" || c->type == "relu6" || moves_elements(c->type, c->attributes);
    const layer_info* i = info_of(*c);
    return i && !site_quantizer(i->output, call_number(c)) && commutes_up_to_output(c);
  }

  /// commutes, but for a quantizer on the op's own output (tfmot's and PyTorch's
  /// placement: a relu whose output is rounded), which is then the grid to land on.
  bool commutes_up_to_output(const traced_call* c) const {
    if (c->function) return false;
    const layer_info* i = info_of(*c);
    if (!i || site_quantizer(i->input, call_number(c))) return false;
    return i->what == layer_info::kind::relu || i->what == layer_info::kind::identity ||
           i->what == layer_info::kind::flatten || i->what == layer_info::kind::reshape ||
           i->what == layer_info::kind::max_pool || i->what == layer_info::kind::global_max_pool ||
           (i->what == layer_info::kind::activation && i->function == "relu6") ||
           (i->what == layer_info::kind::function && moves_elements(i->function, i->ints));
  }

  /// The quantizer (met in this lowering) whose grid `meta` is on, or null.
  const fake_quantizer* owner_of(const engine_tensor& meta) const {
    for (auto it = grid_owners_.rbegin(); it != grid_owners_.rend(); ++it)
      if (same_grid(meta, (*it)->grid(1))) return *it;
    return nullptr;
  }

  /// The quantizer every use of `s` meets first, through commuting ops; null if a use
  /// meets none (a model output, a float layer) or two uses meet different grids.
  const fake_quantizer* next_quantizer(const variable_state* s) const {
    std::vector<const traced_call*> uses = uses_of(s);
    while (uses.size() == 1 && commutes(uses[0])) {
      s = uses[0]->output;
      uses = uses_of(s);
    }
    if (uses.size() == 1 && s != model_output_ && commutes_up_to_output(uses[0])) {
      const fake_quantizer* q = site_quantizer(info_of(*uses[0])->output, call_number(uses[0]));
      return q && !q->config().per_channel ? q : nullptr;
    }
    if (uses.empty() || s == model_output_) return nullptr;
    const fake_quantizer* found = nullptr;
    for (const traced_call* u : uses) {
      const layer_info* i = info_of(*u);
      if (!i) return nullptr;
      for (std::size_t k = 0; k < u->inputs.size(); ++k) {  // a merge may take `s` as any input
        if (u->inputs[k] != s) continue;
        const fake_quantizer* q = site_quantizer(input_sites(*i, k), call_number(u));
        if (!q || q->config().per_channel) return nullptr;
        if (found) {
          const quantization_grid a = found->grid(1), b = q->grid(1);
          if (a.scale != b.scale || a.zero_point != b.zero_point || a.qmin != b.qmin || a.qmax != b.qmax) return nullptr;
        }
        found = q;
      }
    }
    return found;
  }

 public:
  const variable_state* model_output_ = nullptr;

 private:
  /// A call, then the quantizer on its output if it has one (tfmot's and PyTorch's
  /// placement; a conv or dense lands on it itself).
  void lower_call(std::size_t i) {
    lower_call_body(i);
    const traced_call& c = g_.calls()[i];
    const layer_info* info = c.function ? nullptr : info_of(c);
    if (!info || info->what == layer_info::kind::linear) return;
    if (const fake_quantizer* q = site_quantizer(info->output, i)) {
      std::size_t v = value(c.output, c.describe());
      if (meta_[v].kind == value_kind::bits) v = to_real(v, c.path);
      value_of_[c.output] = to_integer(v, *q, i, 0, true);
    }
  }

  void lower_call_body(std::size_t i) {
    const traced_call& c = g_.calls()[i];
    if (c.function) {
      const std::string where = "xq::ops::" + c.type;
      if (c.type == "relu") {
        std::size_t v = value(c.inputs.at(0), c.describe());
        if (meta_[v].kind == value_kind::bits) v = to_real(v, where);
        const engine_tensor m = meta_[v];  // a relu keeps the grid
        value_of_[c.output] = emit(std::make_unique<relu_op>(), where, {v}, m);
        return;
      }
      if (c.type == "relu6" || c.type == "sigmoid" || c.type == "tanh" || c.type == "swish" || c.type == "softmax")
        return lower_activation(i, where, c.type, 0.0f, value(c.inputs.at(0), c.describe()));
      if (c.type == "add" || c.type == "multiply" || c.type == "concatenate")
        return lower_merge(i, where, c.type, concat_axis_of(c), {});
      if (function_op::known(c.type)) return lower_function(i, where, c.type, c.attributes, nullptr);
      throw argument_error(where,
                           "a function the integer engine has (relu, relu6, sigmoid, tanh, swish, softmax, gelu, add, "
                           "multiply, concatenate, broadcast_add, subtract, broadcast_multiply, matmul, slice, split, "
                           "transpose, attend; leaky_relu as the xq::leaky_relu layer, whose alpha it can read)",
                           "a call of xq::ops::" + c.type + " in the forward code");
    }
    const layer_info* info = info_of(c);
    if (!info || info->what == layer_info::kind::none)
      throw argument_error(c.path, "a layer the integer engine has (conv2d, depthwise_conv2d, dense, max_pool2d, "
                                   "average_pool2d, global_average_pool2d, global_max_pool2d, batch_norm, relu, "
                                   "relu6, leaky_relu, sigmoid, tanh, swish, softmax, add, concatenate, multiply, "
                                   "embedding, tied_projection, tied_dense, flatten, reshape, dropout, Larq sign layers)",
                           "a " + c.type + " layer" + why_no_integer_form(c.type));
    if (info->what == layer_info::kind::merge) return lower_merge(i, c.path, info->function, info->axis, info->inputs);
    if (info->what == layer_info::kind::embedding) return lower_embedding(i, *info);
    if (info->what == layer_info::kind::function)
      return lower_function(i, c.path, info->function, function_arguments(*info, c), info);
    std::size_t v = value(c.inputs.at(0), c.describe());
    // An opt-in input QDQ on a layer without weights (max pooling, a batch norm): round first.
    if (info->what != layer_info::kind::linear)
      if (const fake_quantizer* q = site_quantizer(info->input, i)) v = to_integer(v, *q, i, 0);
    switch (info->what) {
      case layer_info::kind::identity: value_of_[c.output] = v; return;
      case layer_info::kind::relu: {
        if (meta_[v].kind == value_kind::bits) v = to_real(v, c.path);
        engine_tensor m = meta_[v];
        value_of_[c.output] = emit(std::make_unique<relu_op>(), c.path, {v}, m);
        return;
      }
      case layer_info::kind::flatten:
      case layer_info::kind::reshape: {
        auto op = std::make_unique<reshape_op>();
        const auto& s = c.output->value.shape();
        op->target.assign(s.begin() + 1, s.end());
        engine_tensor m = meta_[v];
        if (m.kind == value_kind::bits) v = to_real(v, c.path), m = real_meta();
        value_of_[c.output] = emit(std::move(op), c.path, {v}, m);
        return;
      }
      case layer_info::kind::max_pool: {
        auto op = std::make_unique<max_pool_op>();
        const auto& s = c.inputs[0]->value.shape();
        op->geometry = window(info->pool, info->pool_strides, {1, 1}, info->pool_padding, s[1], s[2]);
        engine_tensor m = meta_[v];
        if (m.kind == value_kind::bits) v = to_real(v, c.path), m = real_meta();
        value_of_[c.output] = emit(std::move(op), c.path, {v}, m);
        return;
      }
      case layer_info::kind::batch_norm: {
        if (meta_[v].kind != value_kind::accumulator) v = to_real(v, c.path);
        auto op = std::make_unique<batch_norm_op>();
        norm_affine a = affine_of(*info->norm, c.path);
        op->mean = std::move(a.mean);
        op->scale = std::move(a.scale);
        op->offset = std::move(a.offset);
        value_of_[c.output] = emit(std::move(op), c.path, {v}, real_meta());
        return;
      }
      case layer_info::kind::global_max_pool: {  // a max pool over the whole image: integers stay integers
        auto op = std::make_unique<max_pool_op>();
        const auto& s = c.inputs[0]->value.shape();
        op->geometry = window({s[1], s[2]}, {1, 1}, {1, 1}, xq::padding::valid, s[1], s[2]);
        engine_tensor m = meta_[v];
        if (m.kind == value_kind::bits) v = to_real(v, c.path), m = real_meta();
        std::size_t out = emit(std::move(op), c.path, {v}, m);
        if (!info->keepdims) {
          auto r = std::make_unique<reshape_op>();
          r->target = {s[3]};
          out = emit(std::move(r), c.path, {out}, m);
        }
        value_of_[c.output] = out;
        return;
      }
      case layer_info::kind::average_pool:
      case layer_info::kind::global_average_pool: {
        if (o_.average_pool == average_pooling::integer && meta_[v].kind == value_kind::integer) {
          auto op = std::make_unique<integer_average_pool_op>();
          const auto& s = c.inputs[0]->value.shape();
          if (info->what == layer_info::kind::average_pool)
            op->geometry = window(info->pool, info->pool_strides, {1, 1}, info->pool_padding, s[1], s[2]);
          else
            op->geometry = window({s[1], s[2]}, {1, 1}, {1, 1}, xq::padding::valid, s[1], s[2]);
          const engine_tensor m = meta_[v];
          std::size_t out = emit(std::move(op), c.path, {v}, m);
          if (info->what == layer_info::kind::global_average_pool && !info->keepdims) {
            auto r = std::make_unique<reshape_op>();
            r->target = {s[3]};
            out = emit(std::move(r), c.path, {out}, m);
          }
          value_of_[c.output] = out;
          return;
        }
        // The simulation averages the dequantized floats (sum in window order, then divide
        // by the count): xquant's own pooling on the same floats gives its floats exactly,
        // and the next quantizer rounds them as the simulation does.
        v = to_real(v, c.path);
        auto op = std::make_unique<real_function_op>();
        if (info->what == layer_info::kind::average_pool) {
          op->function = "average_pool2d";
          op->pool = info->pool;
          op->strides = info->pool_strides;
          op->padding = info->pool_padding == xq::padding::same ? 1 : 0;
        } else {
          op->function = "global_average_pool2d";
          op->keepdims = info->keepdims;
        }
        value_of_[c.output] = emit(std::move(op), c.path, {v}, real_meta());
        return;
      }
      case layer_info::kind::activation: return lower_activation(i, c.path, info->function, info->alpha, v);
      case layer_info::kind::linear: lower_linear(i, *info, v); return;
      case layer_info::kind::merge:
      case layer_info::kind::embedding:
      case layer_info::kind::function:
      case layer_info::kind::none: break;
    }
  }

  /// A layer or function the engine computes with xquant's own function (function_op):
  /// each input first on its own QDQ site's grid (if it has one); a layout function moves
  /// integers and keeps their grid, any other computes on the dequantized floats, as the
  /// simulation does, and the next quantizer rounds. A kernel quantizer (conv2d_transpose)
  /// gives the kernel the simulation multiplies by.
  void lower_function(std::size_t i, const std::string& where, const std::string& function, std::vector<std::int64_t> ints,
                      const layer_info* info) {
    const traced_call& c = g_.calls()[i];
    auto op = std::make_unique<function_op>();
    op->function = function;
    op->ints = std::move(ints);
    const bool moves = op->moves_only();
    std::vector<std::size_t> vs;
    for (std::size_t k = 0; k < c.inputs.size(); ++k) {
      std::size_t v = value(c.inputs[k], c.describe());
      if (info)
        if (const fake_quantizer* q = site_quantizer(input_sites(*info, k), i)) v = to_integer(v, *q, i, k);
      if (!moves || meta_[v].kind != value_kind::integer) v = to_real(v, where);
      vs.push_back(v);
    }
    if (info) {
      op->floats = info->floats;
      op->tensors = info->tensors;
      const fake_quantizer* wq = info->weight && info->weight->enabled() ? info->weight : nullptr;
      if (wq && !op->tensors.empty()) {
        const xq::no_grad nothing_recorded;
        op->tensors[0] = wq->fake_quantize(op->tensors[0]);
      }
    }
    op->inputs = vs;
    op->validate();
    const engine_tensor m = moves ? meta_[vs.at(0)] : real_meta();
    value_of_[c.output] = emit(std::move(op), where, vs, m);
  }

  /// concatenate's axis from the traced shapes (a function call does not record it): the
  /// axis along which the output is longer than input 0.
  static int concat_axis_of(const traced_call& c) {
    const auto& in = c.inputs.at(0)->value.shape();
    const auto& out = c.output->value.shape();
    for (std::size_t d = 0; d < out.size() && d < in.size(); ++d)
      if (out[d] != in[d]) return int(d);
    return -1;
  }

  /// An activation with no integer form computes in float with xquant's own function;
  /// relu6 on integers already on the next quantizer's grid is an integer clamp.
  void lower_activation(std::size_t i, const std::string& path, const std::string& function, float alpha,
                        std::size_t v) {
    const traced_call& c = g_.calls()[i];
    if (function == "relu6" && meta_[v].kind == value_kind::integer) {
      if (const fake_quantizer* q = owner_of(meta_[v])) {
        tensor bounds = tensor::from_shape({2});
        bounds.data()[0] = 0.0f;
        bounds.data()[1] = 6.0f;
        const std::vector<std::int32_t> b = q->integers(bounds);
        auto op = std::make_unique<clamp_op>();
        op->lo = b[0] - meta_[v].zero_point;
        op->hi = b[1] - meta_[v].zero_point;
        const engine_tensor m = meta_[v];
        value_of_[c.output] = emit(std::move(op), path, {v}, m);
        return;
      }
    }
    v = to_real(v, path);
    auto op = std::make_unique<real_function_op>();
    op->function = function;
    op->alpha = alpha;
    value_of_[c.output] = emit(std::move(op), path, {v}, real_meta());
  }

  /// add / multiply: each input on its own quantizer's grid (if it has one), then the
  /// simulation's float arithmetic on the dequantized values; concatenate: integers when
  /// every input is on one grid, else floats (rounding commutes with concatenation).
  void lower_merge(std::size_t i, const std::string& path, const std::string& function, int axis,
                   const std::vector<const site_quantizers*>& sites) {
    const traced_call& c = g_.calls()[i];
    std::vector<std::size_t> vs;
    for (std::size_t k = 0; k < c.inputs.size(); ++k) {
      std::size_t v = value(c.inputs[k], c.describe());
      if (const fake_quantizer* q = k < sites.size() ? site_quantizer(sites[k], i) : nullptr) v = to_integer(v, *q, i, k);
      if (meta_[v].kind == value_kind::bits || meta_[v].kind == value_kind::accumulator) v = to_real(v, path);
      vs.push_back(v);
    }
    if (o_.merge == merge_arithmetic::integer && lower_integer_merge(i, path, function, axis, vs)) return;
    if (function == "concatenate") {
      const long rank = long(c.output->value.dimension());
      const long ax = axis < 0 ? axis + rank : axis;
      if (ax < 0 || ax >= rank)
        throw argument_error(path, xq::detail::concat("a concatenation axis of a rank-", rank, " tensor"),
                             xq::detail::concat(axis));
      bool one_grid = true;
      for (std::size_t v : vs) {
        const engine_tensor& a = meta_[v];
        const engine_tensor& b = meta_[vs[0]];
        one_grid = one_grid && a.kind == value_kind::integer && b.kind == value_kind::integer && a.scale == b.scale &&
                   a.zero_point == b.zero_point && a.qmin == b.qmin && a.qmax == b.qmax;
      }
      if (!one_grid)
        for (std::size_t& v : vs) v = to_real(v, path);
      auto op = std::make_unique<concatenate_op>();
      op->axis = std::size_t(ax);
      const engine_tensor m = one_grid ? meta_[vs[0]] : real_meta();
      value_of_[c.output] = emit(std::move(op), path, vs, m);
      return;
    }
    for (std::size_t& v : vs) v = to_real(v, path);
    auto op = std::make_unique<real_function_op>();
    op->function = function;
    value_of_[c.output] = emit(std::move(op), path, vs, real_meta());
  }

  /// merge_arithmetic::integer: the merge as integer ops onto the grid of the quantizer
  /// that follows it; false (nothing emitted) where an input is not on an integer grid, no
  /// one quantizer follows, or the shapes or input count have no integer form.
  bool lower_integer_merge(std::size_t i, const std::string& path, const std::string& function, int axis,
                           std::vector<std::size_t>& vs) {
    const traced_call& c = g_.calls()[i];
    for (std::size_t v : vs)
      if (meta_[v].kind != value_kind::integer) return false;
    const layer_info* info = c.function ? nullptr : info_of(c);
    const fake_quantizer* own = info ? site_quantizer(info->output, i) : nullptr;
    const fake_quantizer* target = own ? (own->config().per_channel ? nullptr : own) : next_quantizer(c.output);
    if (!target) return false;
    const quantization_grid tg = target->grid(1);
    const integer_grid out{tg.scale[0], tg.zero_point[0], tg.qmin, tg.qmax};
    engine_tensor out_meta = kind_meta(value_kind::integer);
    out_meta.scale = out.scale;
    out_meta.zero_point = out.zero_point;
    out_meta.qmin = out.qmin;
    out_meta.qmax = out.qmax;
    const auto& shape0 = c.inputs.at(0)->value.shape();
    bool same_shapes = true;
    for (const variable_state* in : c.inputs) same_shapes = same_shapes && in->value.shape() == shape0;
    if (function == "add" && same_shapes) {
      auto op = std::make_unique<integer_add_op>();
      op->path = path;
      op->scheme = o_.requant;
      op->out = out;
      // TFLite's 20 bits unless the inputs' integers could overflow the int32 sum: each
      // term is at most |q - zp| * 2^(left_shift - 1).
      std::int64_t widest = 1;
      for (std::size_t v : vs) {
        op->input_scales.push_back(meta_[v].scale);
        widest = std::max<std::int64_t>(widest, std::max(meta_[v].qmax - meta_[v].zero_point, meta_[v].zero_point - meta_[v].qmin));
      }
      while (op->left_shift > 0 &&
             std::int64_t(vs.size()) * widest * (std::int64_t(1) << (op->left_shift - 1)) >= (std::int64_t(1) << 31))
        --op->left_shift;
      op->prepare();
      grid_owners_.push_back(target);
      value_of_[c.output] = emit(std::move(op), path, vs, out_meta);
      return true;
    }
    if (function == "multiply" && same_shapes && vs.size() == 2) {
      auto op = std::make_unique<integer_multiply_op>();
      op->path = path;
      op->scheme = o_.requant;
      op->input_scales = {meta_[vs[0]].scale, meta_[vs[1]].scale};
      op->out = out;
      op->prepare();
      grid_owners_.push_back(target);
      value_of_[c.output] = emit(std::move(op), path, vs, out_meta);
      return true;
    }
    if (function != "concatenate") return false;
    const long rank = long(c.output->value.dimension());
    const long ax = axis < 0 ? axis + rank : axis;
    if (ax < 0 || ax >= rank) return false;  // the float path names the error
    for (std::size_t& v : vs) {
      if (same_grid(meta_[v], tg)) continue;
      auto r = std::make_unique<rescale_op>();
      r->path = path;
      r->scheme = o_.requant;
      r->in_scale = meta_[v].scale;
      r->out = out;
      r->prepare();
      v = emit(std::move(r), path, {v}, out_meta);
    }
    auto op = std::make_unique<concatenate_op>();
    op->axis = std::size_t(ax);
    grid_owners_.push_back(target);
    value_of_[c.output] = emit(std::move(op), path, vs, out_meta);
    return true;
  }

  /// An embedding: a gather of the table the simulation looks up in (its kernel
  /// quantizer's integers with a scale per row, or floats).
  void lower_embedding(std::size_t i, const layer_info& info) {
    const traced_call& c = g_.calls()[i];
    const std::size_t v = to_real(value(c.inputs.at(0), c.describe()), c.path);
    auto op = std::make_unique<gather_op>();
    const tensor& table = info.kernel;
    if (table.dimension() != 2) throw argument_error(c.path, "a built embedding table of rank 2", xq::detail::shape_string(table.shape()));
    op->rows = table.shape()[0];
    op->dim = table.shape()[1];
    const fake_quantizer* wq = info.weight && info.weight->enabled() ? info.weight : nullptr;
    bool stored = false;
    if (wq) {
      const xq::no_grad nothing_recorded;
      const tensor fq = wq->fake_quantize(table);
      const bool per_row = !wq->config().per_channel || wq->config().channel_axis == 0 || wq->config().channel_axis == -2;
      if (per_row) {
        const quantization_grid g = wq->grid(wq->config().per_channel ? op->rows : 1);
        const std::vector<std::int32_t> q = wq->integers(table);
        op->integers.resize(q.size());
        op->row_scale.resize(op->rows);
        bool exact = true;
        for (std::size_t r = 0; r < op->rows; ++r) {
          const std::size_t ch = g.per_channel ? r : 0;
          op->row_scale[r] = g.scale[ch];
          for (std::size_t d = 0; d < op->dim; ++d) {
            const std::size_t e = r * op->dim + d;
            const std::int32_t centred = q[e] - g.zero_point[ch];
            op->integers[e] = static_cast<std::int16_t>(centred);
            exact = exact && float(centred) * g.scale[ch] == fq.data()[e];
          }
        }
        // The rows must be the simulation's floats; otherwise keep those floats.
        stored = op->quantized = exact;
      }
      if (!stored) {
        op->integers.clear();
        op->row_scale.clear();
        op->table.assign(fq.begin(), fq.end());
        stored = true;
      }
    }
    if (!stored) op->table.assign(table.begin(), table.end());
    value_of_[c.output] = emit(std::move(op), c.path, {v}, real_meta());
  }

  static window_geometry window(std::array<std::size_t, 2> k, std::array<std::size_t, 2> strides,
                                std::array<std::size_t, 2> dilation, xq::padding p, std::size_t h, std::size_t w) {
    window_geometry g;
    g.window = k;
    g.strides = strides;
    g.dilation = dilation;
    g.pads = window_pads({1, h, w, 1}, k, strides, dilation, p);
    return g;
  }

  // --- linear layers ---------------------------------------------------------------

  void lower_linear(std::size_t i, const layer_info& info, std::size_t v) {
    const traced_call& c = g_.calls()[i];
    if (info.larq) return lower_larq(i, info, v);
    const fake_quantizer* iq = site_quantizer(info.input, i);
    const fake_quantizer* wq = info.weight && info.weight->enabled() ? info.weight : nullptr;
    // An input already on a grid (the quantizer on the previous layer's output, tfmot's and
    // PyTorch's placement) is the simulation's input as it is.
    const bool on_grid = !iq && meta_[v].kind == value_kind::integer;
    if ((!iq && !on_grid) || !wq) return lower_real_linear(i, info, v, wq);

    if (iq) v = to_integer(v, *iq, i, 0);
    const double s_in = meta_[v].scale;

    // The kernel the simulation fake-quantizes (folded: kernel * s, with its arithmetic).
    std::vector<float> fold_scale;
    const tensor kernel = quantized_kernel_input(info, &fold_scale);
    const std::size_t f = info.transposed ? kernel.shape()[0]
                          : info.linear_form == layer_info::form::depthwise_conv2d
                              ? kernel.shape()[2] * kernel.shape()[3]
                              : kernel.shape().back();
    const kernels::channel_layout wl =
        wq->config().per_channel ? kernels::channel_layout::of(kernel.shape(), wq->config().channel_axis, wq->path().c_str())
                                 : kernels::channel_layout{1, 1, kernel.size()};
    const quantization_grid wg = wq->grid(wl.channels);
    const std::vector<std::int32_t> wq_int = wq->integers(kernel);

    auto weight_channel = [&](std::size_t o) -> std::size_t {
      if (info.transposed) {  // a tied projection's table (V, D): output channel V, axis 0
        if (!wg.per_channel) return 0;
        if (wq->config().channel_axis == 0 || wq->config().channel_axis == -2) return o;
        throw argument_error(wq->path(), "a per-channel kernel grid on the table's rows (axis 0)",
                             xq::detail::concat("axis ", wq->config().channel_axis));
      }
      return detail::weight_channel(info, wg, kernel.dimension(), o, wq->path());
    };

    // A batch norm fed by this layer alone is absorbed when the output is requantized.
    const traced_call* norm_call = nullptr;
    const fake_quantizer* norm_output = nullptr;
    norm_affine norm;
    const fake_quantizer* oq = site_quantizer(info.output, i);
    const fake_quantizer* target = oq;
    if (!oq) {
      const auto uses = uses_of(c.output);
      const layer_info* ni = uses.size() == 1 ? info_of(*uses[0]) : nullptr;
      if (ni && ni->what == layer_info::kind::batch_norm && !site_quantizer(ni->input, call_number(uses[0])) &&
          c.output != model_output_) {
        // The batch norm's own output quantizer if it has one, else the next one downstream.
        norm_output = site_quantizer(ni->output, call_number(uses[0]));
        const fake_quantizer* t = norm_output ? (norm_output->config().per_channel ? nullptr : norm_output)
                                              : next_quantizer(uses[0]->output);
        if (t) {
          norm_call = uses[0];
          norm = affine_of(*ni->norm, ni->path);
          target = t;
        }
      }
      if (!norm_call) target = next_quantizer(c.output);
    }

    // Per output channel: y = a[o] * acc + b[o] in the simulation's real units.
    std::vector<double> a(f), b(f);
    for (std::size_t o = 0; o < f; ++o) {
      a[o] = s_in * double(wg.scale[weight_channel(o)]);
      if (info.fold) a[o] /= double(fold_scale[o]);
      b[o] = info.bias.size() ? double(info.bias.data()[o]) : 0.0;
      if (norm_call) {
        a[o] *= double(norm.scale[o]);
        b[o] = (b[o] - double(norm.mean[o])) * double(norm.scale[o]) + double(norm.offset[o]);
      }
    }

    auto op = std::make_unique<integer_linear_op>();
    op->shape_form = info.linear_form == layer_info::form::conv2d           ? integer_linear_op::form::conv2d
                     : info.linear_form == layer_info::form::depthwise_conv2d ? integer_linear_op::form::depthwise_conv2d
                                                                              : integer_linear_op::form::dense;
    op->out_channels = f;
    op->depth_multiplier = info.depth_multiplier;
    op->in_channels = info.transposed                                 ? kernel.shape()[1]
                      : info.linear_form == layer_info::form::dense ? kernel.shape()[0]
                                                                    : kernel.shape()[2];
    if (op->shape_form != integer_linear_op::form::dense) {
      const auto& s = c.inputs[0]->value.shape();
      op->geometry = window(info.kernel_size, info.geometry.strides, info.geometry.dilation, info.geometry.padding,
                            s[1], s[2]);
    }
    // Centred weights; a channel with a negative multiplier (a negative batch-norm scale)
    // is negated, so every requantizer multiplies by a positive number.
    op->weights.resize(wq_int.size());
    std::int32_t max_w = 0;
    for (std::size_t e = 0; e < wq_int.size(); ++e) {
      // The output channel is the last index of every layout here, but a tied projection's
      // (V, D) table, which is stored transposed, (D, V).
      const std::size_t o = info.transposed ? e / op->in_channels : e % f;
      const std::size_t to = info.transposed ? (e % op->in_channels) * f + o : e;
      const std::size_t ch = wg.per_channel ? (e / wl.inner) % wl.channels : 0;
      std::int32_t w = wq_int[e] - wg.zero_point[ch];
      if (a[o] < 0) w = -w;
      op->weights[to] = static_cast<std::int16_t>(w);
      max_w = std::max(max_w, std::abs(w));
    }
    const std::int32_t max_x = std::max(meta_[v].qmax - meta_[v].zero_point, meta_[v].zero_point - meta_[v].qmin);
    const std::size_t k = op->shape_form == integer_linear_op::form::depthwise_conv2d
                              ? info.kernel_size[0] * info.kernel_size[1]
                              : wq_int.size() / f;
    const double worst = double(k) * double(max_x) * double(max_w);
    engine_tensor out_meta;
    if (target) {
      const quantization_grid tg = target->grid(1);
      grid_owners_.push_back(target);
      std::vector<double> m(f);
      op->bias.resize(f);
      for (std::size_t o = 0; o < f; ++o) {
        const double scale = std::fabs(a[o]);
        const double bias = std::nearbyint(b[o] / scale);
        if (!(std::fabs(bias) + worst < 2147483647.0))
          throw argument_error(c.path, "an int32 accumulator that cannot overflow",
                               xq::detail::concat("bias ", bias, " + up to ", worst, " from ", k, " products in channel ", o));
        op->bias[o] = static_cast<std::int32_t>(bias);
        m[o] = scale / double(tg.scale[0]);
      }
      op->requant = requantizer(o_.requant, std::move(m), c.path);
      if (o_.bias == bias_precision::float32) {
        if (o_.requant != requantization::float_multiplier)
          throw argument_error(c.path, "the float_multiplier requantization with a float bias",
                               to_string(o_.requant));
        op->float_bias = true;
        op->bias.clear();
        for (std::size_t o = 0; o < f; ++o) {
          op->real_scale.push_back(static_cast<float>(std::fabs(a[o])));
          op->real_bias.push_back(static_cast<float>(b[o]));
        }
      }
      op->out_scale = tg.scale[0];
      op->out_zero_point = tg.zero_point[0];
      op->out_qmin = tg.qmin;
      op->out_qmax = tg.qmax;
      out_meta = kind_meta(value_kind::integer);
      out_meta.scale = tg.scale[0];
      out_meta.zero_point = tg.zero_point[0];
      out_meta.qmin = tg.qmin;
      out_meta.qmax = tg.qmax;
    } else {
      if (!(worst < 2147483647.0))
        throw argument_error(c.path, "an int32 accumulator that cannot overflow",
                             xq::detail::concat("up to ", worst, " from ", k, " products"));
      op->integer_output = false;
      for (std::size_t o = 0; o < f; ++o) {
        op->real_scale.push_back(static_cast<float>(std::fabs(a[o])));
        op->real_bias.push_back(static_cast<float>(b[o]));
      }
      out_meta = real_meta();
    }
    op->prepare();
    const std::size_t out = emit(std::move(op), c.path, {v}, out_meta);
    if (oq)  // requantized onto its own output grid: a parity point there
      model_.parity_points.push_back(parity_point{c.path + " output", c.path, occurrence_[i], 0, oq->path(), out, false, true});
    if (norm_call) {
      skipped_.insert(call_number(norm_call));
      value_of_[norm_call->output] = out;
      if (norm_output && norm_output == target)  // landed on the batch norm's own output grid
        model_.parity_points.push_back(parity_point{norm_call->path + " output", norm_call->path,
                                                    occurrence_[call_number(norm_call)], 0, norm_output->path(), out,
                                                    false, true});
    } else {
      value_of_[c.output] = out;
    }
  }

  /// A layer left in float (its input or kernel not quantized): xquant's float kernels on
  /// the kernel the simulation uses.
  void lower_real_linear(std::size_t i, const layer_info& info, std::size_t v, const fake_quantizer* wq) {
    const traced_call& c = g_.calls()[i];
    v = to_real(v, c.path);
    auto op = std::make_unique<real_linear_op>();
    {
      const xq::no_grad nothing_recorded;
      if (info.fold) {
        const var s = ops::fold_scale(*info.fold);
        var k = ops::scale_channels(var(info.kernel), s, c.path);
        if (wq) k = var(wq->fake_quantize(k.value()));
        op->kernel = ops::divide_channels(k, s, c.path).value();
      } else {
        op->kernel = wq ? wq->fake_quantize(info.kernel) : info.kernel;
      }
    }
    op->has_bias = info.bias.size() > 0;
    if (op->has_bias) op->bias = info.bias;
    fill_real_geometry(*op, info);
    value_of_[c.output] = emit(std::move(op), c.path, {v}, real_meta());
    // Its output quantizer, if any, rounds the float output as the simulation does.
    if (const fake_quantizer* oq = site_quantizer(info.output, i))
      value_of_[c.output] = to_integer(value_of_[c.output], *oq, i, 0, true);
  }

  static void fill_real_geometry(real_linear_op& op, const layer_info& info) {
    op.transposed = info.transposed;
    op.dense = info.linear_form == layer_info::form::dense;
    op.depthwise = info.linear_form == layer_info::form::depthwise_conv2d;
    op.strides = info.geometry.strides;
    op.dilation = info.geometry.dilation;
    op.padding = info.geometry.padding == xq::padding::same ? 1 : 0;
  }

  void lower_larq(std::size_t i, const layer_info& info, std::size_t v) {
    const traced_call& c = g_.calls()[i];
    using lq = layer_info::larq_quantizer;
    if (info.larq_input == lq::none) {  // a float input: a float op with the quantized kernel
      if (info.pad_value != 0.0f && info.geometry.padding == xq::padding::same)
        throw argument_error(c.path, "pad_values 0 for a layer with a float input", xq::detail::concat(info.pad_value));
      v = to_real(v, c.path);
      auto op = std::make_unique<real_linear_op>();
      op->kernel = info.larq_kernel == lq::none ? info.kernel : info.larq_quantized_kernel;
      op->has_bias = info.bias.size() > 0;
      if (op->has_bias) op->bias = info.bias;
      fill_real_geometry(*op, info);
      value_of_[c.output] = emit(std::move(op), c.path, {v}, real_meta());
      return;
    }
    if (info.larq_input != lq::sign || info.larq_kernel != lq::sign || info.linear_form == layer_info::form::depthwise_conv2d)
      throw argument_error(c.path, "a binary layer: Larq sign quantizers (ste_sign, approx_sign) on input and kernel",
                           "another quantizer (it has no integer form yet)");
    if (info.geometry.padding == xq::padding::same && info.pad_value != 1.0f)
      throw argument_error(c.path, "pad_values(1.0f) for a binary layer with same padding (a ±1 border)",
                           xq::detail::concat("pad_values ", info.pad_value, ": a 0 border is not binary"));
    v = to_bits(v, i);
    const tensor& kq = info.larq_quantized_kernel;
    auto op = std::make_unique<binary_linear_op>();
    op->dense = info.linear_form == layer_info::form::dense;
    const std::size_t f = kq.shape().back();
    op->out_channels = f;
    if (op->dense) {
      const std::size_t kin = kq.shape()[0];
      op->in_channels = kin;
      op->words_per_row = (kin + 63) / 64;
      op->weights.assign(f * op->words_per_row, 0);
      for (std::size_t p = 0; p < kin; ++p)
        for (std::size_t o = 0; o < f; ++o)
          if (kq.data()[p * f + o] < 0) op->weights[o * op->words_per_row + p / 64] |= std::uint64_t(1) << (p % 64);
    } else {
      const std::size_t kh = kq.shape()[0], kw = kq.shape()[1], cin = kq.shape()[2], wpp = (cin + 63) / 64;
      op->in_channels = cin;
      op->words_per_row = kh * kw * wpp;
      op->weights.assign(f * op->words_per_row, 0);
      for (std::size_t u = 0; u < kh; ++u)
        for (std::size_t w = 0; w < kw; ++w)
          for (std::size_t ch = 0; ch < cin; ++ch)
            for (std::size_t o = 0; o < f; ++o)
              if (kq.data()[((u * kw + w) * cin + ch) * f + o] < 0)
                op->weights[o * op->words_per_row + (u * kw + w) * wpp + ch / 64] |= std::uint64_t(1) << (ch % 64);
      const auto& s = c.inputs[0]->value.shape();
      op->geometry = window(info.kernel_size, info.geometry.strides, info.geometry.dilation, info.geometry.padding,
                            s[1], s[2]);
    }
    std::size_t out = emit(std::move(op), c.path, {v}, kind_meta(value_kind::accumulator));
    if (info.bias.size()) {  // float(acc) + bias, as the simulation adds it
      auto bn = std::make_unique<batch_norm_op>();
      bn->mean.assign(f, 0.0f);
      bn->scale.assign(f, 1.0f);
      bn->offset.assign(info.bias.begin(), info.bias.end());
      out = emit(std::move(bn), c.path, {out}, real_meta());
    }
    value_of_[c.output] = out;
  }

  lower_options o_;
  integer_model model_;
  std::vector<engine_tensor> meta_;
  std::unordered_map<const variable_state*, std::size_t> value_of_;
  std::set<std::size_t> skipped_;
  std::vector<const fake_quantizer*> grid_owners_;  ///< the quantizers whose grids values are on
};

XQ_DECL integer_model lower_model(const model_access& m, const std::vector<std::size_t>& sample_shape,
                                  const lower_options& o) {
  layer_table table;
  build_and_describe(m, sample_shape, table);
  graph_trace trace;
  var input, output;
  traced_pass(m, sample_shape, input, output);
  const auto constants = constant_values(m, sample_shape, trace, input.state().get());
  return lower_trace(trace, table, input.state().get(), output.state().get(), sample_shape, o, constants);
}

XQ_DECL integer_model lower_trace(const graph_trace& trace, const layer_table& table, const variable_state* input,
                                  const variable_state* output, const std::vector<std::size_t>& sample_shape,
                                  const lower_options& o, const std::set<const variable_state*>& constants) {
  lowering l(trace, table, o, constants);
  l.model_output_ = output;
  return l.run(input, output, sample_shape);
}

}  // namespace xq::deploy::detail
