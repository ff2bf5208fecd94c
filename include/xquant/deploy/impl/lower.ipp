#pragma once
/// \file lower.ipp
/// Lowering a deploy graph to the integer engine's ops (deploy/lower.hpp): one
/// translation per graph op, reading the graph's decisions (graph_decisions.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/tape.hpp"
#include "../../kernels/channel_layout.hpp"
#include "../../wrappers/batch_norm_folding.hpp"
#include "../function_op.hpp"
#include "../graph/graph_decisions.hpp"
#include "../../quantizers/quantize_on_grid.hpp"
#include "../graph/quantizer_grids.hpp"
#include "../lower.hpp"

namespace xq::deploy::detail {


inline bool on_grid(const engine_tensor& meta, const quantization_grid& g) {
  return meta.kind == value_kind::integer && g.scale.size() == 1 && meta.scale == g.scale[0] &&
         meta.zero_point == g.zero_point[0] && meta.qmin == g.qmin && meta.qmax == g.qmax;
}

inline engine_tensor meta_of(value_kind k) {
  engine_tensor m;
  m.kind = k;
  return m;
}

inline engine_tensor integer_meta(const quantization_grid& g) {
  engine_tensor m = meta_of(value_kind::integer);
  m.scale = g.scale[0];
  m.zero_point = g.zero_point[0];
  m.qmin = g.qmin;
  m.qmax = g.qmax;
  return m;
}

inline window_geometry engine_window(const op::window& w) {
  window_geometry g;
  g.window = w.size;
  g.strides = w.strides;
  g.dilation = w.dilation;
  g.pads = w.pads;
  return g;
}

/// A window over the whole image of an NHWC shape (a global pool).
inline window_geometry whole_image(const std::vector<std::size_t>& s) {
  window_geometry g;
  g.window = {s[1], s[2]};
  return g;
}

class lowering {
 public:
  lowering(const deploy_graph& g, const lower_options& o) : g_(g), o_(o) {
    model_.scheme = o.requant;
  }

  integer_model run() {
    for (std::size_t k = 0; k < g_.inputs.size(); ++k) {
      const auto& in_shape = g_.values[g_.inputs[k]].shape;
      const std::vector<std::size_t> sample(in_shape.begin() + 1, in_shape.end());
      const std::size_t v = add_value(meta_of(value_kind::real));
      value_of_[g_.inputs[k]] = v;
      if (k == 0) {
        model_.input_shape = sample;
        model_.input_value = v;
      } else {
        model_.other_input_shapes.push_back(sample);
        model_.other_input_values.push_back(v);
      }
    }
    for (std::size_t i = 0; i < g_.nodes.size(); ++i) {
      if (done_.count(i)) continue;
      lower_node(i);
    }
    for (std::size_t k = 0; k < g_.outputs.size(); ++k)
      (k == 0 ? model_.output_value : model_.other_output_values.emplace_back()) = value(g_.outputs[k]);
    model_.value_count = meta_.size();
    fuse_unit_conv_pools();
    fuse_linear_relus();
    return std::move(model_);
  }

 private:
  // --- values ----------------------------------------------------------------------

  std::size_t add_value(const engine_tensor& meta) {
    meta_.push_back(meta);
    return meta_.size() - 1;
  }

  std::size_t value(value_id v) const {
    const auto it = value_of_.find(v);
    if (it == value_of_.end()) throw std::logic_error("xquant: lowering reads a graph value before its node");
    return it->second;
  }

  template <class Op>
  std::size_t emit(std::unique_ptr<Op> op, const std::string& path, std::vector<std::size_t> inputs, engine_tensor meta) {
    op->path = path;
    op->inputs = std::move(inputs);
    op->output = add_value(meta);
    const std::size_t out = op->output;
    model_.ops.push_back(std::move(op));
    return out;
  }

  std::size_t to_real(std::size_t v, const std::string& path) {
    switch (meta_[v].kind) {
      case value_kind::real: return v;
      case value_kind::integer: return emit(std::make_unique<dequantize_op>(), path, {v}, meta_of(value_kind::real));
      case value_kind::accumulator: {
        auto bn = std::make_unique<batch_norm_op>();  // identity affine: the accumulator as floats
        const std::size_t c = meta_[v].channels();
        bn->mean.assign(c, 0.0f);
        bn->scale.assign(c, 1.0f);
        bn->offset.assign(c, 0.0f);
        return emit(std::move(bn), path, {v}, meta_of(value_kind::real));
      }
      case value_kind::bits: break;
    }
    throw argument_error(path, "a real, integer or accumulator input", "bit-packed ±1 values");
  }

  /// Bits as reals (the ops that take any other kind).
  std::size_t no_bits(std::size_t v, const std::string& path) {
    return meta_[v].kind == value_kind::bits ? to_real(v, path) : v;
  }

  void map(const graph_node& n, std::size_t v) { value_of_[n.output] = v; }

  // --- nodes -----------------------------------------------------------------------

  void lower_node(std::size_t i) {
    const graph_node& n = g_.nodes[i];
    std::visit([&](const auto& o) { lower(i, n, o); }, n.op);
  }

  /// A quantization point: the value on its grid (quantized unless it is already there,
  /// landed by the op before), a parity point. A binary grid is Larq's sign: bits.
  void lower(std::size_t, const graph_node& n, const op::quantize& q) {
    std::size_t v = value(n.inputs.at(0));
    if (q.format) {  // a low-bit format: each tensor's scales, the format's own function
      v = to_real(v, q.layer);
      auto op = std::make_unique<low_bit_quantize_op>();
      op->format = q.format;
      v = emit(std::move(op), q.layer, {v}, meta_of(value_kind::real));
      model_.parity_points.push_back(parity_point{q.label, q.layer, q.call, q.input, q.quantizer, v, false, q.output});
      return map(n, v);
    }
    if (is_binary(q.grid)) {
      if (meta_[v].kind != value_kind::bits) {
        if (meta_[v].kind == value_kind::integer) v = to_real(v, q.layer);
        v = emit(std::make_unique<sign_op>(), q.layer, {v}, meta_of(value_kind::bits));
      }
      model_.parity_points.push_back(parity_point{q.label + " (±1)", q.layer, q.call, q.input, q.quantizer, v, true, q.output});
      return map(n, v);
    }
    if (q.grid.per_channel && q.grid.channels() > 1)
      throw argument_error(q.quantizer, "a per-tensor activation quantizer (the integer engine's activations have one grid)",
                           "a per-channel one");
    const quantization_grid& grid = q.grid;
    if (grid.qmax - grid.qmin > 255 + 255 || grid.qmin - grid.zero_point[0] < -32768 ||
        grid.qmax - grid.zero_point[0] > 32767)
      throw argument_error(q.quantizer, "an activation grid of at most 9 bits", describe(grid));
    if (!on_grid(meta_[v], grid)) {
      v = to_real(v, q.layer);
      auto op = std::make_unique<quantize_op>();
      op->grid = grid;  // the simulation's rounding rule travels with it
      v = emit(std::move(op), q.layer, {v}, integer_meta(grid));
    }
    owner_[v] = q.grid;
    model_.parity_points.push_back(parity_point{q.label, q.layer, q.call, q.input, q.quantizer, v, false, q.output});
    map(n, v);
  }

  void lower(std::size_t i, const graph_node& n, const op::linear& l) {
    const std::size_t v = value(n.inputs.at(0));
    const bool binary_kernel = l.kernel.quantized && is_binary(l.kernel.q.grid);
    if (binary_kernel && meta_[v].kind == value_kind::bits) return lower_binary(i, n, l, v);
    if (meta_[v].kind == value_kind::bits)
      throw argument_error(n.layer, "a binary layer: Larq sign quantizers (ste_sign, approx_sign) on input and kernel",
                           "a ±1 input with another kernel quantizer (it has no integer form yet)");
    if (l.kernel.quantized && is_low_bit_grid(l.kernel.q.grid)) return lower_low_bit(n, l, v);
    // An integer layer whose output reaches a low-bit format's quantizer runs as the
    // simulation's float product of its grid values: its int32 sum would leave through one
    // float multiply, an ulp from the simulation's float sum, and a format whose scales
    // follow the tensor (a block's shared exponent, NVFP4's tensor amax) turns an ulp into
    // a step of every value in a block.
    if (l.kernel.quantized && !binary_kernel && meta_[v].kind == value_kind::integer && !reaches_format(n.output))
      return lower_integer(i, n, l, v);
    lower_real(n, l, v);
  }

  /// Whether value `v` reaches a low-bit format's quantize node through ops that are not
  /// linear (activations, pools, batch norms, reshapes, merges).
  bool reaches_format(value_id v) const {
    std::vector<value_id> todo{v};
    std::set<value_id> seen;
    while (!todo.empty()) {
      const value_id u = todo.back();
      todo.pop_back();
      if (!seen.insert(u).second) continue;
      for (std::size_t c : g_.consumers(u)) {
        const deploy_op& o = g_.nodes[c].op;
        if (const auto* q = std::get_if<op::quantize>(&o)) {
          if (q->format) return true;
          continue;
        }
        if (std::holds_alternative<op::linear>(o) || std::holds_alternative<op::conv_transpose>(o) ||
            std::holds_alternative<op::recurrence>(o))
          continue;
        todo.push_back(g_.nodes[c].output);
      }
    }
    return false;
  }

  /// A layer with a low-bit kernel: the kernel stored packed as its format stores it, the
  /// product the simulation's float product of the decoded kernel (low_bit_ops.hpp).
  void lower_low_bit(const graph_node& n, const op::linear& l, std::size_t v) {
    if (l.pad_value != 0.0f && l.geometry.padding == xq::padding::same)
      throw argument_error(n.layer, "pad_values 0 for a layer with a low-bit kernel", xq::detail::concat(l.pad_value));
    auto op = std::make_unique<low_bit_linear_op>();
    const tensor& kernel = g_.weights.at(l.kernel.weight).value;
    op->weights = packed_kernel::pack(std::vector<std::size_t>(kernel.shape().begin(), kernel.shape().end()),
                                      l.kernel.q.grid, l.kernel.q.integers);
    op->fold_divisor = l.kernel.fold_divisor;
    configure_product(op->product, l);
    op->path = n.layer;
    // The integer product where the input's codes fit it: the input's quantizer (a format's,
    // whose scales the op computes again from the tensor before it), or a static int8 grid.
    using P = low_bit_linear_op::product_kind;
    if (o_.low_bit == low_bit_product::integer && l.shape == op::linear::form::dense) {
      const bool folded = !op->fold_divisor.empty();
      const std::size_t p = g_.producer(n.inputs.at(0));
      const auto* q = p == no_index ? nullptr : std::get_if<op::quantize>(&g_.nodes[p].op);
      if (q && q->format) {
        for (P kind : {P::per_token_int8, P::fp4_blocks})
          if (low_bit_linear_op::integer_product_fits(kind, op->weights, l.transposed, folded, q->format)) {
            op->product_mode = kind;
            op->activation = q->format;
            v = to_real(value(g_.nodes[p].inputs.at(0)), n.layer);
            break;
          }
      } else if (meta_[v].kind == value_kind::integer && meta_[v].qmin >= -128 && meta_[v].qmax <= 127 &&
                 low_bit_linear_op::integer_product_fits(P::static_int8, op->weights, l.transposed, folded, {})) {
        op->product_mode = P::static_int8;
      }
    }
    if (op->product_mode == P::simulated) v = to_real(v, n.layer);
    op->prepare();
    map(n, emit(std::move(op), n.layer, {v}, meta_of(value_kind::real)));
  }

  /// A float product's geometry and bias, as the layer's (its kernel is the caller's).
  void configure_product(real_linear_op& p, const op::linear& l) const {
    p.has_bias = l.bias.present();
    if (p.has_bias) p.bias = g_.weights[l.bias.weight].value;
    p.transposed = l.transposed;
    p.dense = l.shape == op::linear::form::dense;
    p.depthwise = l.shape == op::linear::form::depthwise_conv2d;
    p.strides = l.geometry.strides;
    p.dilation = l.geometry.dilation;
    p.padding = l.geometry.padding == xq::padding::same ? 1 : 0;
  }

  /// A layer left in float (its input or kernel not quantized, or a ±1 kernel on a float
  /// input: a BNN's stem): xquant's float kernels on the kernel the simulation uses.
  void lower_real(const graph_node& n, const op::linear& l, std::size_t v) {
    if (l.pad_value != 0.0f && l.geometry.padding == xq::padding::same)
      throw argument_error(n.layer, "pad_values 0 for a layer with a float input", xq::detail::concat(l.pad_value));
    v = to_real(v, n.layer);
    auto op = std::make_unique<real_linear_op>();
    op->kernel = simulated_kernel(l.kernel, n.layer);
    configure_product(*op, l);
    map(n, emit(std::move(op), n.layer, {v}, meta_of(value_kind::real)));
  }

  /// The kernel the simulation multiplies by: the quantizer's output (divided by the fold
  /// scale when a batch norm is folded in, with the simulation's operation), or the floats.
  tensor simulated_kernel(const weight_use& k, const std::string& where) const {
    return ops::divide_channels(k.quantized ? k.q.dequantized : g_.weights.at(k.weight).value, k.fold_divisor, where);
  }

  /// Larq's XNOR-popcount on bits with a ±1 kernel; float(acc) + bias as the simulation adds it.
  void lower_binary(std::size_t, const graph_node& n, const op::linear& l, std::size_t v) {
    if (l.shape == op::linear::form::depthwise_conv2d)
      throw argument_error(n.layer, "a binary conv2d or dense layer", "a binary depthwise convolution (no binary form yet)");
    if (l.geometry.padding == xq::padding::same && l.shape == op::linear::form::conv2d && l.pad_value != 1.0f)
      throw argument_error(n.layer, "pad_values(1.0f) for a binary layer with same padding (a ±1 border)",
                           xq::detail::concat("pad_values ", l.pad_value, ": a 0 border is not binary"));
    const tensor& kq = l.kernel.q.dequantized;
    auto op = std::make_unique<binary_linear_op>();
    op->dense = l.shape == op::linear::form::dense;
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
      op->geometry = engine_window(l.geometry);
    }
    engine_tensor acc = meta_of(value_kind::accumulator);
    acc.shape = {f};  // the channels, for to_real's identity affine (the rest is the run's)
    std::size_t out = emit(std::move(op), n.layer, {v}, acc);
    if (l.bias.present()) {  // float(acc) + bias, as the simulation adds it
      const tensor& bias = g_.weights[l.bias.weight].value;
      auto bn = std::make_unique<batch_norm_op>();
      bn->mean.assign(f, 0.0f);
      bn->scale.assign(f, 1.0f);
      bn->offset.assign(bias.begin(), bias.end());
      out = emit(std::move(bn), n.layer, {out}, meta_of(value_kind::real));
    }
    map(n, out);
  }

  /// For output channel `o` of a linear op whose kernel grid is `g`: the grid channel that
  /// scales it (the output axis; a depthwise kernel (KH, KW, C, M): C or M).
  static std::size_t weight_channel(const op::linear& l, const quantization_grid& g, std::size_t rank, std::size_t o,
                                    const std::string& where) {
    if (!g.per_channel) return 0;
    const long r = long(rank);
    const long axis = g.channel_axis < 0 ? g.channel_axis + r : g.channel_axis;
    if (l.transposed) {  // a tied projection's table (V, D): output channel V, axis 0
      if (axis == 0) return o;
      throw argument_error(where, "a per-channel kernel grid on the table's rows (axis 0)",
                           xq::detail::concat("axis ", g.channel_axis));
    }
    if (l.shape == op::linear::form::depthwise_conv2d) {
      if (axis == 2) return o / l.depth_multiplier;
      if (axis == 3) return o % l.depth_multiplier;
    } else if (axis == r - 1) {
      return o;
    }
    throw argument_error(where, "a per-channel kernel grid on the output-channel axis",
                         xq::detail::concat("axis ", g.channel_axis, " of a rank-", rank, " kernel"));
  }

  /// Integer conv / depthwise / dense: the kernel's integers, int32 accumulation, then the
  /// landing grid's requantizer (absorbing the batch norm the graph says) or a float epilogue.
  void lower_integer(std::size_t i, const graph_node& n, const op::linear& l, std::size_t v) {
    const node_decisions& d = g_.decisions[i];
    const double s_in = meta_[v].scale;
    const quantization_grid& wg = l.kernel.q.grid;
    const tensor& kernel = g_.weights[l.kernel.weight].value;
    const std::vector<std::int32_t>& wq_int = l.kernel.q.integers;
    const std::size_t f = l.out_channels(kernel.shape());
    const std::string wpath = l.kernel.q.quantizer;

    const op::batch_norm* norm = d.absorbs != no_index ? &std::get<op::batch_norm>(g_.nodes[d.absorbs].op) : nullptr;
    const quantization_grid* target =
        d.lands_on != no_index ? &std::get<op::quantize>(g_.nodes[d.lands_on].op).grid : nullptr;

    // Per output channel: y = a[o] * acc + b[o] in the simulation's real units.
    std::vector<double> a(f), b(f);
    const tensor* bias = l.bias.present() ? &g_.weights[l.bias.weight].value : nullptr;
    for (std::size_t o = 0; o < f; ++o) {
      a[o] = s_in * double(wg.scale[weight_channel(l, wg, kernel.dimension(), o, wpath)]);
      if (!l.kernel.fold_divisor.empty()) a[o] /= double(l.kernel.fold_divisor[o]);
      b[o] = bias ? double(bias->data()[o]) : 0.0;
      if (norm) {
        a[o] *= double(norm->scale[o]);
        b[o] = (b[o] - double(norm->mean[o])) * double(norm->scale[o]) + double(norm->offset[o]);
      }
    }

    auto op = std::make_unique<integer_linear_op>();
    op->shape_form = l.shape == op::linear::form::conv2d             ? integer_linear_op::form::conv2d
                     : l.shape == op::linear::form::depthwise_conv2d ? integer_linear_op::form::depthwise_conv2d
                                                                     : integer_linear_op::form::dense;
    op->out_channels = f;
    op->depth_multiplier = l.depth_multiplier;
    op->in_channels = l.transposed                             ? kernel.shape()[1]
                      : l.shape == op::linear::form::dense ? kernel.shape()[0]
                                                           : kernel.shape()[2];
    if (op->shape_form != integer_linear_op::form::dense) op->geometry = engine_window(l.geometry);
    const kernels::channel_layout wl =
        wg.per_channel ? kernels::channel_layout::of(kernel.shape(), wg.channel_axis, wpath.c_str())
                       : kernels::channel_layout{1, 1, kernel.size()};
    // Centred weights; a channel with a negative multiplier (a negative batch-norm scale)
    // is negated, so every requantizer multiplies by a positive number.
    op->weights.resize(wq_int.size());
    std::int32_t max_w = 0;
    for (std::size_t e = 0; e < wq_int.size(); ++e) {
      // The output channel is the last index of every layout here, but a tied projection's
      // (V, D) table, which is stored transposed, (D, V).
      const std::size_t o = l.transposed ? e / op->in_channels : e % f;
      const std::size_t to = l.transposed ? (e % op->in_channels) * f + o : e;
      const std::size_t ch = wg.per_channel ? (e / wl.inner) % wl.channels : 0;
      std::int32_t w = wq_int[e] - wg.zero_point[ch];
      if (a[o] < 0) w = -w;
      op->weights[to] = static_cast<std::int16_t>(w);
      max_w = std::max(max_w, std::abs(w));
    }
    const std::int32_t max_x = std::max(meta_[v].qmax - meta_[v].zero_point, meta_[v].zero_point - meta_[v].qmin);
    const std::size_t k = op->shape_form == integer_linear_op::form::depthwise_conv2d ? l.geometry.size[0] * l.geometry.size[1]
                                                                                        : wq_int.size() / f;
    const double worst = double(k) * double(max_x) * double(max_w);
    engine_tensor out_meta;
    if (target) {
      std::vector<double> m(f);
      op->bias.resize(f);
      for (std::size_t o = 0; o < f; ++o) {
        const double scale = std::fabs(a[o]);
        const double bias_steps = std::nearbyint(b[o] / scale);
        if (!(std::fabs(bias_steps) + worst < 2147483647.0))
          throw argument_error(n.layer, "an int32 accumulator that cannot overflow",
                               xq::detail::concat("bias ", bias_steps, " + up to ", worst, " from ", k, " products in channel ", o));
        op->bias[o] = static_cast<std::int32_t>(bias_steps);
        m[o] = scale / double(target->scale[0]);
      }
      op->requant = requantizer(o_.requant, std::move(m), n.layer);
      if (o_.bias == bias_precision::float32) {
        if (o_.requant != requantization::float_multiplier)
          throw argument_error(n.layer, "the float_multiplier requantization with a float bias", to_string(o_.requant));
        op->float_bias = true;
        op->bias.clear();
        for (std::size_t o = 0; o < f; ++o) {
          op->real_scale.push_back(static_cast<float>(std::fabs(a[o])));
          op->real_bias.push_back(static_cast<float>(b[o]));
        }
      }
      op->out_scale = target->scale[0];
      op->out_zero_point = target->zero_point[0];
      op->out_qmin = target->qmin;
      op->out_qmax = target->qmax;
      out_meta = integer_meta(*target);
    } else {
      if (!(worst < 2147483647.0))
        throw argument_error(n.layer, "an int32 accumulator that cannot overflow",
                             xq::detail::concat("up to ", worst, " from ", k, " products"));
      op->integer_output = false;
      for (std::size_t o = 0; o < f; ++o) {
        // An int32 bias is the bias on the accumulator's grid, as a runtime adds it (the
        // exported file's int32 bias too), even where the sum leaves as floats.
        const double scale = std::fabs(a[o]);
        const double bias = o_.bias == bias_precision::int32 ? std::nearbyint(b[o] / scale) * scale : b[o];
        op->real_scale.push_back(static_cast<float>(scale));
        op->real_bias.push_back(static_cast<float>(bias));
      }
      out_meta = meta_of(value_kind::real);
    }
    op->prepare();
    const std::size_t out = emit(std::move(op), n.layer, {v}, out_meta);
    if (target) owner_[out] = *target;
    map(n, out);
    if (norm) {  // the batch norm's value is this op's
      done_.insert(d.absorbs);
      value_of_[g_.nodes[d.absorbs].output] = out;
    }
  }

  void lower(std::size_t i, const graph_node& n, const op::pool& p) {
    std::size_t v = no_bits(value(n.inputs.at(0)), n.layer);
    const auto& s = g_.values[n.inputs[0]].shape;
    if (p.what == op::pool::kind::max) {
      auto op = std::make_unique<max_pool_op>();
      op->geometry = p.global ? whole_image(s) : engine_window(p.geometry);
      const engine_tensor m = meta_[v];
      std::size_t out = emit(std::move(op), n.layer, {v}, m);
      if (p.global && !p.keepdims) out = flatten_pooled(n, out, s[3]);
      if (owner_.count(v)) owner_[out] = owner_[v];
      return map(n, out);
    }
    if (o_.average_pool == average_pooling::integer && meta_[v].kind == value_kind::integer) {
      auto op = std::make_unique<integer_average_pool_op>();
      op->geometry = p.global ? whole_image(s) : engine_window(p.geometry);
      const engine_tensor m = meta_[v];
      std::size_t out = emit(std::move(op), n.layer, {v}, m);
      if (p.global && !p.keepdims) out = flatten_pooled(n, out, s[3]);
      return map(n, out);
    }
    // The simulation averages the dequantized floats (sum in window order, then divide
    // by the count): xquant's own pooling on the same floats gives its floats exactly,
    // and the next quantizer rounds them as the simulation does.
    (void)i;
    v = to_real(v, n.layer);
    auto op = std::make_unique<real_function_op>();
    if (!p.global) {
      op->function = "average_pool2d";
      op->pool = p.geometry.size;
      op->strides = p.geometry.strides;
      op->padding = p.geometry.padding == xq::padding::same ? 1 : 0;
    } else {
      op->function = "global_average_pool2d";
      op->keepdims = p.keepdims;
    }
    map(n, emit(std::move(op), n.layer, {v}, meta_of(value_kind::real)));
  }

  std::size_t flatten_pooled(const graph_node& n, std::size_t v, std::size_t channels) {
    auto r = std::make_unique<reshape_op>();
    r->target = {channels};
    const engine_tensor m = meta_[v];
    return emit(std::move(r), n.layer, {v}, m);
  }

  void lower(std::size_t, const graph_node& n, const op::batch_norm& bn) {
    std::size_t v = value(n.inputs.at(0));
    if (meta_[v].kind != value_kind::accumulator) v = to_real(v, n.layer);
    auto op = std::make_unique<batch_norm_op>();
    op->mean = bn.mean;
    op->scale = bn.scale;
    op->offset = bn.offset;
    map(n, emit(std::move(op), n.layer, {v}, meta_of(value_kind::real)));
  }

  /// relu keeps the grid (0 is on it); relu6 on integers of a known quantizer's grid is an
  /// integer clamp to [q(0), q(6)] by that quantizer's own rounding; the rest in float with
  /// xquant's own functions.
  void lower(std::size_t, const graph_node& n, const op::activation& a) {
    using fn = op::activation::function;
    std::size_t v = no_bits(value(n.inputs.at(0)), n.layer);
    if (a.f == fn::relu) {
      const engine_tensor m = meta_[v];
      const std::size_t out = emit(std::make_unique<relu_op>(), n.layer, {v}, m);
      if (owner_.count(v)) owner_[out] = owner_[v];
      return map(n, out);
    }
    if (a.f == fn::relu6 && meta_[v].kind == value_kind::integer && owner_.count(v)) {
      tensor bounds = tensor::from_shape({2});
      bounds.data()[0] = 0.0f;
      bounds.data()[1] = 6.0f;
      const std::vector<std::int32_t> b = quantize_on_grid(owner_[v], bounds, n.layer);
      auto op = std::make_unique<clamp_op>();
      op->lo = b[0] - meta_[v].zero_point;
      op->hi = b[1] - meta_[v].zero_point;
      const engine_tensor m = meta_[v];
      const std::size_t out = emit(std::move(op), n.layer, {v}, m);
      owner_[out] = owner_[v];
      return map(n, out);
    }
    v = to_real(v, n.layer);
    if (a.f == fn::gelu || a.f == fn::gelu_tanh) {
      auto op = std::make_unique<function_op>();
      op->function = "gelu";
      op->ints = {a.f == fn::gelu_tanh ? 1 : 0};
      op->inputs = {v};
      op->validate();
      return map(n, emit(std::move(op), n.layer, {v}, meta_of(value_kind::real)));
    }
    auto op = std::make_unique<real_function_op>();
    op->function = to_string(a.f);
    op->alpha = a.alpha;
    map(n, emit(std::move(op), n.layer, {v}, meta_of(value_kind::real)));
  }

  /// add / multiply: the simulation's float arithmetic on the inputs (each already on its
  /// own QDQ site's grid where it has one); concatenate: integers when every input is on
  /// one grid, else floats (rounding commutes with concatenation). With
  /// merge_arithmetic::integer, integer ops onto the landing grid where they can.
  void lower(std::size_t i, const graph_node& n, const op::merge& m) {
    std::vector<std::size_t> vs;
    for (value_id in : n.inputs) {
      std::size_t v = value(in);
      if (meta_[v].kind == value_kind::bits || meta_[v].kind == value_kind::accumulator) v = to_real(v, n.layer);
      vs.push_back(v);
    }
    if (m.broadcast || m.what == op::merge::kind::subtract) {
      for (std::size_t& v : vs) v = to_real(v, n.layer);
      auto op = std::make_unique<function_op>();
      op->function = m.what == op::merge::kind::add ? "broadcast_add" : m.what == op::merge::kind::subtract ? "subtract"
                                                                                                             : "broadcast_multiply";
      op->inputs = vs;
      op->validate();
      return map(n, emit(std::move(op), n.layer, vs, meta_of(value_kind::real)));
    }
    if (o_.merge == merge_arithmetic::integer && lower_integer_merge(i, n, m, vs)) return;
    if (m.what == op::merge::kind::concatenate) {
      bool one_grid = true;
      for (std::size_t v : vs) {
        const engine_tensor& a = meta_[v];
        const engine_tensor& b = meta_[vs[0]];
        one_grid = one_grid && a.kind == value_kind::integer && b.kind == value_kind::integer && a.scale == b.scale &&
                   a.zero_point == b.zero_point && a.qmin == b.qmin && a.qmax == b.qmax;
      }
      if (!one_grid)
        for (std::size_t& v : vs) v = to_real(v, n.layer);
      auto op = std::make_unique<concatenate_op>();
      op->axis = m.axis;
      const engine_tensor meta = one_grid ? meta_[vs[0]] : meta_of(value_kind::real);
      const std::size_t out = emit(std::move(op), n.layer, vs, meta);
      if (one_grid && owner_.count(vs[0])) owner_[out] = owner_[vs[0]];
      return map(n, out);
    }
    for (std::size_t& v : vs) v = to_real(v, n.layer);
    auto op = std::make_unique<real_function_op>();
    op->function = m.what == op::merge::kind::add ? "add" : "multiply";
    map(n, emit(std::move(op), n.layer, vs, meta_of(value_kind::real)));
  }

  /// merge_arithmetic::integer: the merge as integer ops onto its landing grid; false
  /// (nothing emitted) where an input is not on an integer grid, it lands nowhere, or the
  /// shapes or input count have no integer form.
  bool lower_integer_merge(std::size_t i, const graph_node& n, const op::merge& m, std::vector<std::size_t>& vs) {
    for (std::size_t v : vs)
      if (meta_[v].kind != value_kind::integer) return false;
    const std::size_t landing = g_.decisions[i].lands_on;
    if (landing == no_index) return false;
    const op::quantize& q = std::get<op::quantize>(g_.nodes[landing].op);
    const quantization_grid& tg = q.grid;
    const integer_grid out{tg.scale[0], tg.zero_point[0], tg.qmin, tg.qmax};
    const engine_tensor out_meta = integer_meta(tg);
    const auto& shape0 = g_.values[n.inputs.at(0)].shape;
    bool same_shapes = true;
    for (value_id in : n.inputs) same_shapes = same_shapes && g_.values[in].shape == shape0;
    std::size_t result = no_index;
    if (m.what == op::merge::kind::add && same_shapes) {
      auto op = std::make_unique<integer_add_op>();
      op->path = n.layer;
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
      result = emit(std::move(op), n.layer, vs, out_meta);
    } else if (m.what == op::merge::kind::multiply && same_shapes && vs.size() == 2) {
      auto op = std::make_unique<integer_multiply_op>();
      op->path = n.layer;
      op->scheme = o_.requant;
      op->input_scales = {meta_[vs[0]].scale, meta_[vs[1]].scale};
      op->out = out;
      op->prepare();
      result = emit(std::move(op), n.layer, vs, out_meta);
    } else if (m.what == op::merge::kind::concatenate) {
      for (std::size_t& v : vs) {
        if (on_grid(meta_[v], tg)) continue;
        auto r = std::make_unique<rescale_op>();
        r->path = n.layer;
        r->scheme = o_.requant;
        r->in_scale = meta_[v].scale;
        r->out = out;
        r->prepare();
        v = emit(std::move(r), n.layer, {v}, out_meta);
      }
      auto op = std::make_unique<concatenate_op>();
      op->axis = m.axis;
      result = emit(std::move(op), n.layer, vs, out_meta);
    } else {
      return false;
    }
    owner_[result] = q.grid;
    map(n, result);
    return true;
  }

  void lower(std::size_t, const graph_node& n, const op::reshape& r) {
    std::size_t v = no_bits(value(n.inputs.at(0)), n.layer);
    auto op = std::make_unique<reshape_op>();
    op->target = r.target;
    const engine_tensor m = meta_[v];
    const std::size_t out = emit(std::move(op), n.layer, {v}, m);
    if (owner_.count(v)) owner_[out] = owner_[v];
    map(n, out);
  }

  /// A layout function (function_op.hpp): integers keep their grid through it.
  void layout_function(const graph_node& n, std::string function, std::vector<std::int64_t> ints, std::size_t v) {
    auto op = std::make_unique<function_op>();
    op->function = std::move(function);
    op->ints = std::move(ints);
    const bool moves = op->moves_only();
    v = no_bits(v, n.layer);
    if (!moves || meta_[v].kind != value_kind::integer) v = to_real(v, n.layer);
    op->inputs = {v};
    op->validate();
    const engine_tensor m = moves ? meta_[v] : meta_of(value_kind::real);
    const std::size_t out = emit(std::move(op), n.layer, {v}, m);
    if (moves && owner_.count(v)) owner_[out] = owner_[v];
    map(n, out);
  }

  void lower(std::size_t, const graph_node& n, const op::pad& p) {
    layout_function(n, "zero_padding2d",
                    {std::int64_t(p.margins[0]), std::int64_t(p.margins[1]), std::int64_t(p.margins[2]),
                     std::int64_t(p.margins[3])},
                    value(n.inputs.at(0)));
  }

  void lower(std::size_t, const graph_node& n, const op::slice& s) {
    const auto& shape = g_.values[n.inputs.at(0)].shape;
    std::size_t v = value(n.inputs.at(0));
    if (s.axes.size() == 2 && s.axes[0] == 1 && s.axes[1] == 2 && shape.size() == 4)  // an image crop
      return layout_function(n, "cropping2d",
                             {std::int64_t(s.begins[0]), std::int64_t(shape[1] - s.ends[0]), std::int64_t(s.begins[1]),
                              std::int64_t(shape[2] - s.ends[1])},
                             v);
    if (s.axes.size() != 1)
      throw argument_error(n.layer, "a slice along one axis, or an image crop", xq::detail::concat(s.axes.size(), " axes"));
    layout_function(n, "slice", {std::int64_t(s.axes[0]), std::int64_t(s.begins[0]), std::int64_t(s.ends[0])}, v);
  }

  void lower(std::size_t, const graph_node& n, const op::upsample& u) {
    layout_function(n, "upsampling2d",
                    {std::int64_t(u.factors[0]), std::int64_t(u.factors[1]), u.bilinear ? 1 : 0}, value(n.inputs.at(0)));
  }

  void lower(std::size_t, const graph_node& n, const op::transpose& t) {
    layout_function(n, "transpose", std::vector<std::int64_t>(t.permutation.begin(), t.permutation.end()),
                    value(n.inputs.at(0)));
  }

  /// A float function of xquant's (function_op.hpp) on the inputs as reals.
  void float_function(const graph_node& n, std::string function, std::vector<std::int64_t> ints, std::vector<float> floats,
                      std::vector<tensor> tensors) {
    std::vector<std::size_t> vs;
    for (value_id in : n.inputs) vs.push_back(to_real(value(in), n.layer));
    auto op = std::make_unique<function_op>();
    op->function = std::move(function);
    op->ints = std::move(ints);
    op->floats = std::move(floats);
    op->tensors = std::move(tensors);
    op->inputs = vs;
    op->validate();
    map(n, emit(std::move(op), n.layer, vs, meta_of(value_kind::real)));
  }

  tensor weight_or_empty(const weight_use& w) const {
    return w.present() ? g_.weights[w.weight].value : tensor::from_shape({0});
  }

  void lower(std::size_t, const graph_node& n, const op::layer_norm& l) {
    float_function(n, "layer_norm", std::vector<std::int64_t>(l.axes.begin(), l.axes.end()), {l.epsilon},
                   {weight_or_empty(l.gamma), weight_or_empty(l.beta)});
  }

  void lower(std::size_t, const graph_node& n, const op::matmul& m) {
    float_function(n, "matmul", {m.transpose_a ? 1 : 0, m.transpose_b ? 1 : 0}, {}, {});
  }

  void lower(std::size_t, const graph_node& n, const op::attention_probabilities& a) {
    float_function(n, "attention_probabilities", {std::int64_t(a.heads), a.causal ? 1 : 0}, {}, {});
  }

  void lower(std::size_t, const graph_node& n, const op::attend&) { float_function(n, "attend", {}, {}, {}); }

  void lower(std::size_t, const graph_node& n, const op::conv_transpose& t) {
    float_function(n, "conv2d_transpose",
                   {std::int64_t(t.strides[0]), std::int64_t(t.strides[1]), std::int64_t(t.dilation[0]),
                    std::int64_t(t.dilation[1]), t.padding == xq::padding::same ? 1 : 0},
                   {}, {simulated_kernel(t.kernel, n.layer), weight_or_empty(t.bias)});
  }

  void lower(std::size_t, const graph_node& n, const op::recurrence& r) {
    std::vector<std::int64_t> ints{r.return_sequences ? 1 : 0, r.go_backwards ? 1 : 0};
    if (r.kind == op::recurrence::cell::gru) ints.push_back(r.reset_after ? 1 : 0);
    float_function(n, r.kind == op::recurrence::cell::lstm ? "lstm_recurrence" : "gru_recurrence", std::move(ints), {},
                   {simulated_kernel(r.recurrent_kernel, n.layer), weight_or_empty(r.bias)});
  }

  /// The cost volume: int32 sums of the two maps' integers where both are on grids (their
  /// quantization points), requantized onto the landing grid or float; else the
  /// simulation's float volume.
  void lower(std::size_t i, const graph_node& n, const op::correlation& c) {
    std::size_t a = no_bits(value(n.inputs.at(0)), n.layer), b = no_bits(value(n.inputs.at(1)), n.layer);
    auto op = std::make_unique<correlation_op>();
    op->max_displacement = c.max_displacement;
    engine_tensor out_meta = meta_of(value_kind::real);
    const bool integers = meta_[a].kind == value_kind::integer && meta_[b].kind == value_kind::integer;
    const quantization_grid* target = nullptr;
    if (integers) {
      op->input_scales = {meta_[a].scale, meta_[b].scale};
      op->channels = g_.values[n.inputs[0]].shape.back();
      const std::size_t landing = g_.decisions[i].lands_on;
      if (landing != no_index) {
        target = &std::get<op::quantize>(g_.nodes[landing].op).grid;
        op->integer_output = true;
        op->scheme = o_.requant;
        op->out = integer_grid{target->scale[0], target->zero_point[0], target->qmin, target->qmax};
        out_meta = integer_meta(*target);
      }
      op->prepare();
    } else {
      a = to_real(a, n.layer);
      b = to_real(b, n.layer);
    }
    const std::size_t out = emit(std::move(op), n.layer, {a, b}, out_meta);
    if (target) owner_[out] = *target;
    map(n, out);
  }

  /// A lookup in the table the simulation uses: its quantizer's integers with a scale per
  /// row where the rows are exactly the simulation's floats, else those floats.
  void lower(std::size_t, const graph_node& n, const op::gather& gth) {
    const std::size_t v = to_real(value(n.inputs.at(0)), n.layer);
    auto op = std::make_unique<gather_op>();
    const tensor& table = g_.weights[gth.table.weight].value;
    if (table.dimension() != 2)
      throw argument_error(n.layer, "a built embedding table of rank 2", xq::detail::shape_string(table.shape()));
    op->rows = table.shape()[0];
    op->dim = table.shape()[1];
    const weight_use& u = gth.table;
    bool stored = false;
    if (u.quantized) {
      const quantization_grid& g = u.q.grid;
      const long axis = g.channel_axis < 0 ? g.channel_axis + 2 : g.channel_axis;
      const bool per_row = !g.per_channel || axis == 0;
      if (per_row && !is_binary(g)) {
        op->integers.resize(u.q.integers.size());
        op->row_scale.resize(op->rows);
        bool exact = true;
        for (std::size_t r = 0; r < op->rows; ++r) {
          const std::size_t ch = g.per_channel ? r : 0;
          op->row_scale[r] = g.scale[ch];
          for (std::size_t c = 0; c < op->dim; ++c) {
            const std::size_t e = r * op->dim + c;
            const std::int32_t centred = u.q.integers[e] - g.zero_point[ch];
            op->integers[e] = static_cast<std::int16_t>(centred);
            exact = exact && float(centred) * g.scale[ch] == u.q.dequantized.data()[e];
          }
        }
        stored = op->quantized = exact;
      }
      if (!stored) {
        op->integers.clear();
        op->row_scale.clear();
        op->table.assign(u.q.dequantized.begin(), u.q.dequantized.end());
        stored = true;
      }
    }
    if (!stored) op->table.assign(table.begin(), table.end());
    map(n, emit(std::move(op), n.layer, {v}, meta_of(value_kind::real)));
  }

  void lower(std::size_t, const graph_node& n, const op::constant& c) {
    auto op = std::make_unique<constant_op>();
    op->value = c.value;
    map(n, emit(std::move(op), n.layer, {}, meta_of(value_kind::real)));
  }

  bool is_model_output(std::size_t v) const {
    const std::vector<std::size_t> outs = model_.output_values();
    return std::find(outs.begin(), outs.end(), v) != outs.end();
  }

  /// A float conv with a ±1 kernel (a BNN's stem) whose output only a max pool reads takes
  /// the pool in (real_linear_op::pooled): its full-size output is then never written.
  void fuse_unit_conv_pools() {
    auto& ops = model_.ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto* conv = dynamic_cast<real_linear_op*>(ops[i].get());
      if (!conv || conv->pooled || !conv->unit_kernel() || is_model_output(conv->output)) continue;
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

  /// An integer conv or dense layer whose output only a ReLU reads saturates at its zero
  /// point instead (integer_linear_op::relu): the same integers without the ReLU's pass.
  void fuse_linear_relus() {
    auto& ops = model_.ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto* linear = dynamic_cast<integer_linear_op*>(ops[i].get());
      if (!linear || !linear->integer_output || linear->relu || is_model_output(linear->output)) continue;
      if (linear->out_zero_point < linear->out_qmin || linear->out_zero_point > linear->out_qmax) continue;
      std::size_t readers = 0, reader = 0;
      for (std::size_t j = i + 1; j < ops.size(); ++j)
        for (std::size_t in : ops[j]->inputs)
          if (in == linear->output) ++readers, reader = j;
      bool observed = false;  // a parity point reads it
      for (const parity_point& p : model_.parity_points) observed = observed || p.value == linear->output;
      if (readers != 1 || observed || !dynamic_cast<const relu_op*>(ops[reader].get())) continue;
      linear->relu = true;
      linear->output = ops[reader]->output;
      linear->path += " + " + ops[reader]->path;
      ops.erase(ops.begin() + std::ptrdiff_t(reader));
    }
  }

  const deploy_graph& g_;
  lower_options o_;
  integer_model model_;
  std::vector<engine_tensor> meta_;
  std::map<value_id, std::size_t> value_of_;
  std::set<std::size_t> done_;                 ///< graph nodes lowered by another (absorbed batch norms)
  std::map<std::size_t, quantization_grid> owner_;  ///< engine value -> the grid it is on, with its rounding
};


XQ_DECL integer_model lower_model(const model_handle& m, const std::vector<std::vector<std::size_t>>& shapes,
                                  const lower_options& o) {
  return xq::deploy::lower_graph(build_graph(m, shapes, o.graph), o);
}

}  // namespace xq::deploy::detail

namespace xq::deploy {
XQ_DECL integer_model lower_graph(const deploy_graph& g, const lower_options& o) { return detail::lowering(g, o).run(); }
}  // namespace xq::deploy
