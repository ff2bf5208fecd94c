#pragma once
/// \file function_op.ipp
/// The engine's float functions and constants (deploy/function_op.hpp).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/graph_trace.hpp"
#include "../../core/tape.hpp"
#include "../../core/var.hpp"
#include "../../kernels/padding.hpp"
#include "../../layers/attention.hpp"
#include "../../layers/broadcasting.hpp"
#include "../../layers/conv2d_transpose.hpp"
#include "../../layers/cropping2d.hpp"
#include "../../layers/gelu.hpp"
#include "../../layers/gru.hpp"
#include "../../layers/layer_norm.hpp"
#include "../../layers/lstm.hpp"
#include "../../layers/matmul.hpp"
#include "../../layers/pad2d.hpp"
#include "../../layers/slicing.hpp"
#include "../../layers/transpose.hpp"
#include "../../layers/upsampling2d.hpp"
#include "../function_op.hpp"

namespace xq::deploy {

namespace detail {

/// A function's name, how many inputs it takes (min, max), and whether it only moves elements.
struct function_entry {
  const char* name;
  std::size_t min_inputs, max_inputs;
  bool moves;
};

constexpr function_entry engine_functions[] = {
    {"zero_padding2d", 1, 1, true},  {"cropping2d", 1, 1, true},         {"slice", 1, 1, true},
    {"upsampling2d", 1, 1, true},    {"transpose", 1, 1, true},          {"gelu", 1, 1, false},
    {"layer_norm", 1, 1, false},     {"broadcast_add", 2, 2, false},     {"subtract", 2, 2, false},
    {"broadcast_multiply", 2, 2, false}, {"matmul", 2, 2, false},        {"attention_probabilities", 2, 3, false},
    {"attend", 2, 2, false},         {"conv2d_transpose", 1, 1, false},  {"lstm_recurrence", 1, 1, false},
    {"gru_recurrence", 1, 1, false}};

inline const function_entry* find_function(const std::string& f) noexcept {
  for (const function_entry& e : engine_functions)
    if (f == e.name) return &e;
  return nullptr;
}

/// An engine tensor as floats: real values, or (a layout function's input) the centred
/// integers, exact as floats below 2^24.
inline tensor float_view(const engine_tensor& x, const lowered_op& op, bool integers_allowed) {
  if (x.kind != value_kind::real && !(integers_allowed && x.kind == value_kind::integer))
    throw argument_error(op.path + " (" + op.kind() + ")", integers_allowed ? "real or integer inputs" : "real inputs",
                         std::string("a ") + to_string(x.kind) + " one");
  tensor t = tensor::from_shape(x.shape);
  if (x.kind == value_kind::real) std::copy(x.real.begin(), x.real.end(), t.data());
  else
    for (std::size_t e = 0; e < x.integer.size(); ++e) t.data()[e] = float(x.integer[e]);
  return t;
}

inline var optional_var(const tensor& t) { return t.size() ? var(t) : var(); }

}  // namespace detail

XQ_DECL bool function_op::known(const std::string& f) noexcept { return detail::find_function(f) != nullptr; }

XQ_DECL const char* function_op::kind() const noexcept {
  const detail::function_entry* e = detail::find_function(function);
  return e ? e->name : "function";
}

XQ_DECL bool moves_elements(const std::string& f, const std::vector<std::int64_t>& ints) noexcept {
  const detail::function_entry* e = detail::find_function(f);
  if (!e || !e->moves) return false;
  return f != "upsampling2d" || (ints.size() == 3 && ints[2] == 0);  // bilinear interpolates
}

XQ_DECL bool function_op::moves_only() const noexcept { return moves_elements(function, ints); }

XQ_DECL bool function_op::batch_invariant() const noexcept {
  return function != "matmul" && function != "attention_probabilities" && function != "attend" &&
         function != "conv2d_transpose" && function != "lstm_recurrence" && function != "gru_recurrence";
}

XQ_DECL void function_op::validate() const {
  const std::string where = path + " (" + function + ")";
  const detail::function_entry* e = detail::find_function(function);
  if (!e) throw argument_error(where, "a function the engine has", "\"" + function + "\"");
  if (inputs.size() < e->min_inputs || inputs.size() > e->max_inputs)
    throw argument_error(where, xq::detail::concat(e->min_inputs, " to ", e->max_inputs, " inputs"),
                         xq::detail::concat(inputs.size()));
  auto want = [&](std::size_t n_ints, std::size_t n_floats, std::size_t n_tensors) {
    if ((n_ints != std::size_t(-1) && ints.size() != n_ints) || floats.size() != n_floats || tensors.size() != n_tensors)
      throw argument_error(where,
                           xq::detail::concat(n_ints == std::size_t(-1) ? std::string("some") : std::to_string(n_ints),
                                              " integer, ", n_floats, " float and ", n_tensors, " tensor arguments"),
                           xq::detail::concat(ints.size(), ", ", floats.size(), " and ", tensors.size()));
  };
  auto in_range = [&](std::int64_t v, std::int64_t lo, std::int64_t hi, const char* what) {
    if (v < lo || v > hi) throw argument_error(where, xq::detail::concat(what, " from ", lo, " to ", hi), xq::detail::concat(v));
  };
  const std::string& f = function;
  if (f == "zero_padding2d" || f == "cropping2d") {
    want(4, 0, 0);
    for (std::int64_t v : ints) in_range(v, 0, 1 << 16, "a margin");
  } else if (f == "slice") {
    want(3, 0, 0);
    in_range(ints[0], 0, 15, "an axis");
    in_range(ints[1], 0, ints[2] - 1, "a begin before the end");
  } else if (f == "upsampling2d") {
    want(3, 0, 0);
    in_range(ints[0], 1, 4096, "a size");
    in_range(ints[1], 1, 4096, "a size");
    in_range(ints[2], 0, 1, "an interpolation");
  } else if (f == "transpose") {
    want(std::size_t(-1), 0, 0);
    std::vector<bool> seen(ints.size(), false);
    for (std::int64_t v : ints) {
      in_range(v, 0, std::int64_t(ints.size()) - 1, "an axis of the permutation");
      if (seen[std::size_t(v)]) throw argument_error(where, "a permutation", xq::detail::concat("axis ", v, " twice"));
      seen[std::size_t(v)] = true;
    }
  } else if (f == "gelu") {
    want(1, 0, 0);
    in_range(ints[0], 0, 1, "approximate");
  } else if (f == "layer_norm") {
    want(std::size_t(-1), 1, 2);
    if (ints.empty()) throw argument_error(where, "at least one normalized axis", "none");
    for (std::int64_t v : ints) in_range(v, 1, 15, "a normalized axis");
    if (!(floats[0] > 0.0f)) throw argument_error(where, "a positive epsilon", xq::detail::concat(floats[0]));
  } else if (f == "matmul") {
    want(2, 0, 0);
    in_range(ints[0], 0, 1, "transpose_a");
    in_range(ints[1], 0, 1, "transpose_b");
  } else if (f == "attention_probabilities") {
    want(2, 0, 0);
    in_range(ints[0], 1, 1 << 16, "a head count");
    in_range(ints[1], 0, 1, "causal");
  } else if (f == "conv2d_transpose") {
    want(5, 0, 2);
    for (std::size_t k = 0; k < 4; ++k) in_range(ints[k], 1, 4096, "a stride or dilation");
    in_range(ints[4], 0, 1, "same padding");
    if (tensors[0].dimension() != 4) throw argument_error(where, "a kernel of rank 4 (KH, KW, F, C)", xq::detail::shape_string(tensors[0].shape()));
    if (tensors[1].size() && tensors[1].size() != tensors[0].shape()[2])
      throw argument_error(where, xq::detail::concat("a bias of ", tensors[0].shape()[2], " values"),
                           xq::detail::shape_string(tensors[1].shape()));
  } else if (f == "lstm_recurrence" || f == "gru_recurrence") {
    const bool lstm = f == "lstm_recurrence";
    want(lstm ? 2 : 3, 0, 2);
    for (std::int64_t v : ints) in_range(v, 0, 1, "a flag");
    const std::size_t gates = lstm ? 4 : 3;
    const tensor& k = tensors[0];
    if (k.dimension() != 2 || k.shape()[1] != gates * k.shape()[0])
      throw argument_error(where, xq::detail::concat("a recurrent kernel (units, ", gates, " units)"),
                           xq::detail::shape_string(k.shape()));
    if (tensors[1].size() && (tensors[1].size() != k.shape()[1] || (!lstm && !ints[2])))
      throw argument_error(where, lstm || ints[2] ? xq::detail::concat("a bias of ", k.shape()[1], " values or none")
                                                  : std::string("no recurrent bias (reset_after is false)"),
                           xq::detail::shape_string(tensors[1].shape()));
  } else {
    want(0, 0, 0);  // the broadcasting ops, attend
  }
}

XQ_DECL void function_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const xq::no_grad scope;
  const graph_trace swallowed;  // a parity pass traces the model: the engine's calls are not part of it
  const bool moves = moves_only();
  std::vector<var> in;
  for (std::size_t k : inputs) in.emplace_back(detail::float_view(values.at(k), *this, moves));
  if (in.empty()) throw argument_error(path + " (" + kind() + ")", "at least one input", "none");
  const var& x = in[0];
  auto size = [&](std::size_t k) { return std::size_t(ints.at(k)); };
  const std::string& f = function;
  var y;
  if (f == "zero_padding2d") y = ops::pad2d(x, size(0), size(1), size(2), size(3), 0.0f, path);
  else if (f == "cropping2d") y = ops::crop2d(x, size(0), size(1), size(2), size(3), path);
  else if (f == "slice") y = ops::slice(x, int(ints.at(0)), size(1), size(2), path);
  else if (f == "upsampling2d")
    y = ops::upsampling2d(x, size(0), size(1), ints.at(2) ? interpolation::bilinear : interpolation::nearest, path);
  else if (f == "transpose") y = ops::transpose(x, std::vector<std::size_t>(ints.begin(), ints.end()), path);
  else if (f == "gelu") y = ops::gelu(x, ints.at(0) != 0);
  else if (f == "layer_norm")
    y = ops::layer_norm(x, detail::optional_var(tensors.at(0)), detail::optional_var(tensors.at(1)),
                        std::vector<int>(ints.begin(), ints.end()), floats.at(0), path);
  else if (f == "broadcast_add") y = ops::broadcast_add(x, in.at(1), path);
  else if (f == "subtract") y = ops::broadcast_subtract(x, in.at(1), path);
  else if (f == "broadcast_multiply") y = ops::broadcast_multiply(x, in.at(1), path);
  else if (f == "matmul") y = ops::matmul(x, in.at(1), ints.at(0) != 0, ints.at(1) != 0, path);
  else if (f == "attention_probabilities")
    y = ops::attention_probabilities(x, in.at(1), size(0), in.size() > 2 ? in[2] : var(), ints.at(1) != 0, path);
  else if (f == "attend") y = ops::attend(x, in.at(1), path);
  else if (f == "conv2d_transpose") {
    conv2d_geometry g;
    g.strides = {size(0), size(1)};
    g.dilation = {size(2), size(3)};
    g.padding = ints.at(4) ? xq::padding::same : xq::padding::valid;
    const var kernel(tensors.at(0)), bias = detail::optional_var(tensors.at(1));
    y = ops::conv2d_transpose(x, kernel, bias.defined() ? &bias : nullptr, g, path);
  } else if (f == "lstm_recurrence" || f == "gru_recurrence") {
    recurrence_settings run;
    run.return_sequences = ints.at(0) != 0;
    run.go_backwards = ints.at(1) != 0;
    const var kernel(tensors.at(0)), bias = detail::optional_var(tensors.at(1));
    y = f == "lstm_recurrence" ? ops::lstm_recurrence(x, kernel, bias, run, path)
                               : ops::gru_recurrence(x, kernel, bias, ints.at(2) != 0, run, path);
  } else {
    throw argument_error(path, "a function the engine has", "\"" + f + "\"");
  }
  const engine_tensor& first = values.at(inputs[0]);
  engine_tensor out;
  out.shape.assign(y.shape().begin(), y.shape().end());
  if (moves && first.kind == value_kind::integer) {  // the same grid, the integers moved
    out.kind = value_kind::integer;
    out.scale = first.scale;
    out.zero_point = first.zero_point;
    out.qmin = first.qmin;
    out.qmax = first.qmax;
    out.integer.resize(y.value().size());
    for (std::size_t e = 0; e < out.integer.size(); ++e) out.integer[e] = std::int16_t(y.value().data()[e]);
  } else {
    out.real.assign(y.value().begin(), y.value().end());
  }
  values[output] = std::move(out);
}

XQ_DECL std::string function_op::describe() const {
  std::ostringstream s;
  s << function;
  if (!ints.empty()) {
    s << " (";
    for (std::size_t k = 0; k < ints.size(); ++k) s << (k ? ", " : "") << ints[k];
    s << ")";
  }
  if (!floats.empty()) s << " eps " << floats[0];
  s << (moves_only() ? " (moves elements: integers keep their grid)" : " (float32, xquant's own function)");
  return s.str();
}

XQ_DECL void constant_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  engine_tensor out;
  out.shape.assign(value.shape().begin(), value.shape().end());
  out.real.assign(value.begin(), value.end());
  values[output] = std::move(out);
}

XQ_DECL std::string constant_op::describe() const {
  return "constant " + xq::detail::shape_string(value.shape()) + " (fixed when lowered: computed without the input)";
}

}  // namespace xq::deploy
