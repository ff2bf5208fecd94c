#pragma once
/// \file float_function_ops.ipp
/// The float function ops (deploy/engine/float_function_ops.hpp): xquant's own float
/// functions (layers/), the only thing of layers/ they use.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../../core/error.hpp"
#include "../../../core/var.hpp"
#include "../../../kernels/padding.hpp"
#include "../../../layers/activation.hpp"
#include "../../../layers/add.hpp"
#include "../../../layers/attention.hpp"
#include "../../../layers/average_pool2d.hpp"
#include "../../../layers/broadcasting.hpp"
#include "../../../layers/conv2d_transpose.hpp"
#include "../../../layers/gelu.hpp"
#include "../../../layers/global_average_pool2d.hpp"
#include "../../../layers/gru.hpp"
#include "../../../layers/layer_norm.hpp"
#include "../../../layers/lstm.hpp"
#include "../../../layers/matmul.hpp"
#include "../../../layers/multiply.hpp"
#include "../../../layers/upsampling2d.hpp"
#include "../detail/float_call_scope.hpp"
#include "../float_function_ops.hpp"
#include "../layout_ops.hpp"

namespace xq::deploy {

// --- real_function_op ---------------------------------------------------------------------

namespace detail {

inline tensor real_tensor_of(const engine_tensor& x, const lowered_op& op) {
  if (x.kind != value_kind::real)
    throw argument_error(op.path + " (" + op.kind() + ")", "real inputs", std::string("a ") + to_string(x.kind) + " one");
  tensor t = tensor::from_shape(x.shape);
  std::copy(x.real.begin(), x.real.end(), t.data());
  return t;
}

inline engine_tensor real_engine_tensor(const tensor& t) {
  return deploy::real_engine_tensor(std::vector<std::size_t>(t.shape().begin(), t.shape().end()),
                                    std::vector<float>(t.begin(), t.end()));
}

constexpr const char* real_functions[] = {"average_pool2d", "global_average_pool2d", "relu6", "leaky_relu", "sigmoid",
                                          "tanh", "swish", "softmax", "add", "multiply"};

}  // namespace detail

XQ_DECL bool real_function_op::known(const std::string& f) noexcept {
  for (const char* k : detail::real_functions)
    if (f == k) return true;
  return false;
}

XQ_DECL std::vector<std::string> real_function_op::functions() {
  return std::vector<std::string>(std::begin(detail::real_functions), std::end(detail::real_functions));
}

XQ_DECL const char* real_function_op::kind() const noexcept {
  for (const char* k : detail::real_functions)
    if (function == k) return k;
  return "real_function";
}

XQ_DECL void real_function_op::run(std::vector<engine_tensor>& values, const run_options&) const {
  const detail::float_call_scope scope;
  std::vector<var> in;
  for (std::size_t k : inputs) in.emplace_back(detail::real_tensor_of(values.at(k), *this));
  if (in.empty()) throw argument_error(path + " (" + kind() + ")", "at least one input", "none");
  var y;
  const var& x = in[0];
  if (function == "average_pool2d")
    y = ops::average_pool2d(x, pool, strides, padding ? xq::padding::same : xq::padding::valid, path);
  else if (function == "global_average_pool2d") y = ops::global_average_pool2d(x, keepdims, path);
  else if (function == "relu6") y = ops::relu6(x);
  else if (function == "leaky_relu") y = ops::leaky_relu(x, alpha);
  else if (function == "sigmoid") y = ops::sigmoid(x);
  else if (function == "tanh") y = ops::tanh(x);
  else if (function == "swish") y = ops::swish(x);
  else if (function == "softmax") y = ops::softmax(x, path);
  else if (function == "add") y = ops::add(in, path);
  else if (function == "multiply") y = ops::multiply(in, path);
  else throw argument_error(path, "a known float function", "\"" + function + "\"");
  values[output] = detail::real_engine_tensor(y.value());
}

XQ_DECL std::string real_function_op::describe() const {
  std::ostringstream s;
  s << function;
  if (function == "average_pool2d")
    s << " " << pool[0] << "x" << pool[1] << " stride " << strides[0] << "x" << strides[1]
      << (padding ? " same" : " valid");
  if (function == "global_average_pool2d" && keepdims) s << " keepdims";
  if (function == "leaky_relu") s << " alpha " << alpha;
  s << " (float32, xquant's own function)";
  return s.str();
}

XQ_DECL engine_tensor real_function_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  if (!known(function)) refuse("a known float function", "\"" + function + "\"");
  const bool merge = function == "add" || function == "multiply";
  expect_inputs(in, 1, merge ? 256 : 1);
  for (std::size_t k = 0; k < in.size(); ++k) {
    expect(*in[k], value_kind::real);
    if (in[k]->shape != in[0]->shape || in[k]->shape.empty())
      refuse("real inputs of one shape " + xq::detail::shape_string(in[0]->shape),
             xq::detail::concat("input ", k, ": ", detail::tensor_string(*in[k])));
  }
  const engine_tensor& x = *in[0];
  std::vector<std::size_t> shape = x.shape;
  work = detail::saturating_product(detail::element_count(shape), in.size());
  if (function == "average_pool2d") {
    if (shape.size() != 4) refuse("a rank-4 real tensor (N, H, W, C)", detail::tensor_string(x));
    for (std::size_t a = 0; a < 2; ++a)
      if (!pool[a] || !strides[a] || pool[a] > max_window_extent || strides[a] > max_window_extent)
        refuse(xq::detail::concat("pool sizes and strides from 1 to ", max_window_extent),
               xq::detail::concat(pool[0], "x", pool[1], " stride ", strides[0], "x", strides[1]));
    if (padding != 0 && padding != 1) refuse("padding valid (0) or same (1)", xq::detail::concat(padding));
    const xq::padding p = padding ? xq::padding::same : xq::padding::valid;
    const window_axis rows = resolve_axis(x.shape[1], pool[0], strides[0], 1, p);
    const window_axis cols = resolve_axis(x.shape[2], pool[1], strides[1], 1, p);
    if (!rows.out || !cols.out) refuse("an input at least as large as the pool", detail::tensor_string(x));
    shape = {x.shape[0], rows.out, cols.out, x.shape[3]};
    work = detail::saturating_product(detail::element_count(shape), std::uint64_t(pool[0]) * pool[1]);
  } else if (function == "global_average_pool2d") {
    if (shape.size() != 4) refuse("a rank-4 real tensor (N, H, W, C)", detail::tensor_string(x));
    shape = keepdims ? std::vector<std::size_t>{x.shape[0], 1, 1, x.shape[3]} : std::vector<std::size_t>{x.shape[0], x.shape[3]};
  }
  return detail::value_of(value_kind::real, shape);
}

XQ_DECL void real_function_op::encode(op_writer& w) const {
  w.text("function", function);
  w.sizes("pool", {pool[0], pool[1]});
  w.sizes("strides", {strides[0], strides[1]});
  w.integer("padding", padding);
  w.flag("keepdims", keepdims);
  w.number("alpha", double(alpha));
}

XQ_DECL std::unique_ptr<lowered_op> real_function_op::decode(const std::string& kind, const op_reader& r) {
  auto op = std::make_unique<real_function_op>();
  op->function = r.text("function");
  if (op->function != kind) r.fail("expected \"function\": \"" + kind + "\"");
  const auto pool = r.sizes("pool", 2, max_window_extent), strides = r.sizes("strides", 2, max_window_extent);
  if (pool.size() != 2 || strides.size() != 2) r.fail("expected two pool sizes and two strides");
  op->pool = {pool[0], pool[1]};
  op->strides = {strides[0], strides[1]};
  op->padding = int(r.integer("padding", 0, 1));
  op->keepdims = r.flag("keepdims");
  op->alpha = float(r.number("alpha"));
  return op;
}

// --- function_op --------------------------------------------------------------------------

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

XQ_DECL std::vector<std::string> function_op::functions() {
  std::vector<std::string> names;
  for (const detail::function_entry& e : detail::engine_functions) names.push_back(e.name);
  return names;
}

XQ_DECL const char* function_op::kind() const noexcept {
  const detail::function_entry* e = detail::find_function(function);
  return e ? e->name : "function";
}

XQ_DECL bool moves_elements(const std::string& f, const std::vector<std::int64_t>& ints) noexcept {
  return is_layout_move(f, ints);
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
  const bool moves = moves_only();
  if (moves) {  // the layout functions: elements moved, no arithmetic (layout_ops.hpp)
    values[output] = move_elements(values.at(inputs.at(0)), function, ints, where());
    return;
  }
  const detail::float_call_scope scope;
  std::vector<var> in;
  for (std::size_t k : inputs) in.emplace_back(detail::float_view(values.at(k), *this, false));
  if (in.empty()) throw argument_error(path + " (" + kind() + ")", "at least one input", "none");
  const var& x = in[0];
  auto size = [&](std::size_t k) { return std::size_t(ints.at(k)); };
  const std::string& f = function;
  var y;
  if (f == "upsampling2d")  // bilinear (nearest moves)
    y = ops::upsampling2d(x, size(0), size(1), interpolation::bilinear, path);
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
  values[output] = deploy::real_engine_tensor(std::vector<std::size_t>(y.shape().begin(), y.shape().end()),
                                              std::vector<float>(y.value().begin(), y.value().end()));
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

namespace detail {

/// The broadcast shape of two shapes aligned at their last axis (NumPy's rule), or
/// argument_error naming `where`.
inline std::vector<std::size_t> broadcast(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b,
                                          const std::string& where) {
  const std::size_t r = std::max(a.size(), b.size());
  std::vector<std::size_t> out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const std::size_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const std::size_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw argument_error(where, "shapes that broadcast (each axis equal, or 1 in one of them)",
                           xq::detail::concat(xq::detail::shape_string(a), " and ", xq::detail::shape_string(b)));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace detail

XQ_DECL engine_tensor function_op::infer(const std::vector<const engine_tensor*>& in, std::uint64_t& work) const {
  validate();  // the arguments, by function
  const std::string& f = function;
  expect_inputs(in, inputs.size(), inputs.size());
  if (moves_only()) {
    const engine_tensor& x = *in[0];
    if (x.kind != value_kind::real && x.kind != value_kind::integer)
      refuse("a real or integer tensor", detail::tensor_string(x));
    engine_tensor y = detail::value_of(x.kind, layout_shape(x.shape, f, ints, where()));
    y.set_grid(x.grid());
    work = detail::element_count(y.shape);
    return y;
  }
  for (const engine_tensor* t : in) expect(*t, value_kind::real);
  const std::vector<std::size_t>& x = in[0]->shape;
  auto shape_refused = [&](const std::string& expected) {
    std::string given;
    for (const engine_tensor* t : in) given += (given.empty() ? "" : " and ") + xq::detail::shape_string(t->shape);
    refuse(expected, given);
  };
  std::vector<std::size_t> shape;
  std::uint64_t per_output = 1;
  if (f == "upsampling2d") {
    shape = layout_shape(x, f, ints, where());
    per_output = 4;
  } else if (f == "gelu") {
    shape = x;
  } else if (f == "layer_norm") {
    std::vector<std::size_t> params;
    std::vector<bool> chosen(x.size(), false);
    for (std::int64_t a : ints) {
      if (a < 1 || std::size_t(a) >= x.size() || chosen[std::size_t(a)])
        shape_refused(xq::detail::concat("distinct normalized axes from 1 to rank - 1"));
      chosen[std::size_t(a)] = true;
    }
    for (std::size_t a = 0; a < x.size(); ++a)
      if (chosen[a]) params.push_back(x[a]);
    for (std::size_t k = 0; k < 2; ++k)
      if (tensors[k].size() && std::vector<std::size_t>(tensors[k].shape().begin(), tensors[k].shape().end()) != params)
        refuse(xq::detail::concat(k ? "beta" : "gamma", " of shape ", xq::detail::shape_string(params)),
               xq::detail::shape_string(tensors[k].shape()));
    shape = x;
    per_output = 4;
  } else if (f == "broadcast_add" || f == "subtract" || f == "broadcast_multiply") {
    shape = detail::broadcast(x, in[1]->shape, where());
  } else if (f == "matmul") {
    const std::vector<std::size_t>& b = in[1]->shape;
    if (x.size() < 2 || b.size() < 2) shape_refused("two tensors of rank 2 or more");
    const bool ta = ints[0] != 0, tb = ints[1] != 0;
    const std::size_t m = ta ? x[x.size() - 1] : x[x.size() - 2], ka = ta ? x[x.size() - 2] : x[x.size() - 1];
    const std::size_t kb = tb ? b[b.size() - 1] : b[b.size() - 2], n = tb ? b[b.size() - 2] : b[b.size() - 1];
    if (ka != kb) shape_refused("matrices whose inner extents agree");
    shape = detail::broadcast(std::vector<std::size_t>(x.begin(), x.end() - 2), std::vector<std::size_t>(b.begin(), b.end() - 2),
                              where());
    shape.push_back(m);
    shape.push_back(n);
    per_output = ka;
  } else if (f == "attention_probabilities") {
    const std::vector<std::size_t>& k = in[1]->shape;
    const std::size_t heads = std::size_t(ints[0]);
    if (x.size() != 3 || k.size() != 3 || x[0] != k[0] || x[2] != k[2] || x[2] % heads)
      shape_refused(xq::detail::concat("queries (B, Tq, F) and keys (B, Tk, F), F a multiple of the ", heads, " heads"));
    if (in.size() > 2) {
      const std::vector<std::size_t>& m = in[2]->shape;
      if (m != std::vector<std::size_t>{x[0], x[1], k[1]} && m != std::vector<std::size_t>{x[1], k[1]})
        shape_refused("a mask (B, Tq, Tk) or (Tq, Tk)");
    }
    shape = {x[0], heads, x[1], k[1]};
    per_output = x[2] / heads + 8;
  } else if (f == "attend") {
    const std::vector<std::size_t>& v = in[1]->shape;
    if (x.size() != 4 || v.size() != 3 || x[0] != v[0] || x[3] != v[1] || v[2] % x[1])
      shape_refused("probabilities (B, H, Tq, Tk) and values (B, Tk, H*V)");
    shape = {x[0], x[2], v[2]};
    per_output = x[3];
  } else if (f == "conv2d_transpose") {
    const auto& k = tensors[0].shape();
    if (x.size() != 4 || x[3] != k[3]) shape_refused(xq::detail::concat("an input (N, H, W, ", k[3], ")"));
    const std::size_t s[2] = {std::size_t(ints[0]), std::size_t(ints[1])}, d[2] = {std::size_t(ints[2]), std::size_t(ints[3])};
    if ((s[0] > 1 || s[1] > 1) && (d[0] > 1 || d[1] > 1))
      refuse("strides of 1 when the dilation is above 1", xq::detail::concat(s[0], "x", s[1], ", ", d[0], "x", d[1]));
    if (k[0] > max_window_extent || k[1] > max_window_extent || !k[0] || !k[1] || !k[2] || !k[3])
      refuse(xq::detail::concat("a kernel window of 1 to ", max_window_extent), xq::detail::shape_string(k));
    std::size_t out[2];
    for (std::size_t a = 0; a < 2; ++a) {
      const std::size_t dilated = k[a] + (k[a] - 1) * (d[a] - 1);
      out[a] = ints[4] ? x[a + 1] * s[a] : x[a + 1] * s[a] + (dilated > s[a] ? dilated - s[a] : 0);
    }
    shape = {x[0], out[0], out[1], k[2]};
    per_output = detail::saturating_product(std::uint64_t(k[0]) * k[1], k[3]);
  } else if (f == "lstm_recurrence" || f == "gru_recurrence") {
    const std::size_t units = tensors[0].shape()[0], gates = tensors[0].shape()[1];
    if (x.size() != 3 || x[2] != gates) shape_refused(xq::detail::concat("projected inputs (B, T, ", gates, ")"));
    shape = ints[0] ? std::vector<std::size_t>{x[0], x[1], units} : std::vector<std::size_t>{x[0], units};
    per_output = detail::saturating_product(std::uint64_t(gates) + 16, ints[0] ? 1 : x[1]);
  } else {
    refuse("a function the engine has", "\"" + f + "\"");
  }
  work = detail::saturating_product(detail::element_count(shape), per_output);
  return detail::value_of(value_kind::real, shape);
}

XQ_DECL void function_op::encode(op_writer& w) const {
  w.text("function", function);
  w.integers("ints", ints);
  w.numbers("floats", floats);
  w.maps("tensors", tensors.size(), [&](std::size_t k, op_writer& t) {
    t.sizes("shape", std::vector<std::size_t>(tensors[k].shape().begin(), tensors[k].shape().end()));
    t.numbers("data", std::vector<float>(tensors[k].begin(), tensors[k].end()));
  });
}

XQ_DECL std::unique_ptr<lowered_op> function_op::decode(const std::string& kind, const op_reader& r) {
  auto op = std::make_unique<function_op>();
  op->function = r.text("function");
  if (op->function != kind) r.fail("expected \"function\": \"" + kind + "\"");
  op->ints = r.integers("ints", 16);
  op->floats = r.numbers<float>("floats");
  if (op->floats.size() > 4) r.fail("expected at most 4 floats");
  for (const std::unique_ptr<op_reader>& t : r.maps("tensors", 4)) {
    // {"shape", "data"}: the map itself is the tensor (tensor_value reads one under a key).
    const std::vector<std::size_t> shape = t->sizes("shape", 8, std::uint64_t(1) << 28);
    std::uint64_t bound = 1, count = 1;
    for (std::size_t d : shape) {
      bound *= d ? d : 1;
      count *= d;
      if (bound > (std::uint64_t(1) << 28)) t->fail("shape: expected at most 2^28 elements (a 0 counted as 1)");
    }
    const std::vector<float> data = t->numbers<float>("data", std::size_t(count));
    tensor v = tensor::from_shape(shape);
    std::copy(data.begin(), data.end(), v.begin());
    op->tensors.push_back(std::move(v));
  }
  return op;
}

}  // namespace xq::deploy
