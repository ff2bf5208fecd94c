#pragma once
/// \file model_call.hpp
/// Calling a model with one input or several and reading one output or several: how
/// `build`, `fit`, `evaluate`, `predict`, `summarize` and `quantize_model` run a model
/// whose forward code takes two images (a siamese pair, an image and its mask) or returns
/// two tensors.
///
/// A model takes its inputs as separate parameters, `var operator()(const var& a, const
/// var& b)` (one to four of them), or as one `const std::vector<var>&`; it returns one
/// `var`, a `std::vector<var>`, or a `std::pair` / `std::tuple` of vars. A leaf layer used
/// as a model (one with a `call`) is asked through its `call`: its `operator()` takes anything.
///
/// \code
///   struct siamese {
///     xq::conv2d features{xq::conv2d(8, 3)};
///     xq::subtract difference;
///     XQ_CHILDREN(features, difference)
///     xq::var operator()(const xq::var& a, const xq::var& b) { return difference({features(a), features(b)}); }
///   };
///   xq::build(model, xq::input_shapes{{1, 28, 28, 1}, {1, 28, 28, 1}});
/// \endcode

#include <cstddef>
#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "error.hpp"
#include "tensor.hpp"
#include "var.hpp"

namespace xq {

/// A model's inputs or outputs, in order.
using var_list = std::vector<var>;
/// The shapes of a model's inputs (batch axis included), one per input, in the order the
/// model takes them: `xq::input_shapes{{1, 28, 28, 1}, {1, 28, 28, 1}}`. A type of its own
/// (not a vector, whose size constructor would make `xq::build(model, {6})` ambiguous) so
/// that a braced list of numbers still means one input of that shape.
class input_shapes {
 public:
  input_shapes(std::initializer_list<tensor::shape_type> shapes) : shapes_(shapes) {}
  explicit input_shapes(std::vector<tensor::shape_type> shapes) : shapes_(std::move(shapes)) {}

  std::size_t size() const noexcept { return shapes_.size(); }
  bool empty() const noexcept { return shapes_.empty(); }
  const tensor::shape_type& operator[](std::size_t k) const { return shapes_[k]; }
  auto begin() const noexcept { return shapes_.begin(); }
  auto end() const noexcept { return shapes_.end(); }

 private:
  std::vector<tensor::shape_type> shapes_;
};

namespace detail {

template <std::size_t>
using one_var = const var&;

/// Whether `m.call(N vars)` / `m.call(list)` / `m(N vars)` / `m(list)` are well-formed.
template <class M, class Seq, class = void>
struct call_takes : std::false_type {};
template <class M, std::size_t... I>
struct call_takes<M, std::index_sequence<I...>,
                  std::void_t<decltype(std::declval<M&>().call(std::declval<one_var<I>>()...))>> : std::true_type {};
template <class M, class = void>
struct call_takes_list : std::false_type {};
template <class M>
struct call_takes_list<M, std::void_t<decltype(std::declval<M&>().call(std::declval<const var_list&>()))>>
    : std::true_type {};
template <class M, class Seq, class = void>
struct op_takes : std::false_type {};
template <class M, std::size_t... I>
struct op_takes<M, std::index_sequence<I...>, std::void_t<decltype(std::declval<M&>()(std::declval<one_var<I>>()...))>>
    : std::true_type {};
template <class M, class = void>
struct op_takes_list : std::false_type {};
template <class M>
struct op_takes_list<M, std::void_t<decltype(std::declval<M&>()(std::declval<const var_list&>()))>> : std::true_type {};

/// A leaf layer (xq::layer's or a wrapper's) has a `call`; its `operator()` takes
/// anything, so only `call` says what it accepts.
template <class M>
inline constexpr bool has_call_v = call_takes<M, std::make_index_sequence<1>>::value ||
                                   call_takes<M, std::make_index_sequence<2>>::value ||
                                   call_takes<M, std::make_index_sequence<3>>::value ||
                                   call_takes<M, std::make_index_sequence<4>>::value || call_takes_list<M>::value;

/// Whether a model of type M can be called with N separate vars, or with one list.
template <class M, std::size_t N>
inline constexpr bool takes_vars_v =
    has_call_v<M> ? call_takes<M, std::make_index_sequence<N>>::value : op_takes<M, std::make_index_sequence<N>>::value;
template <class M>
inline constexpr bool takes_var_list_v = has_call_v<M> ? call_takes_list<M>::value : op_takes_list<M>::value;

/// A model's return value as a list of outputs.
inline var_list as_var_list(var v) { return var_list{std::move(v)}; }
inline var_list as_var_list(var_list v) { return v; }
template <class... T>
var_list as_var_list(std::tuple<T...> t) {
  return std::apply([](auto&&... v) { return var_list{var(std::move(v))...}; }, std::move(t));
}
template <class A, class B>
var_list as_var_list(std::pair<A, B> p) {
  return var_list{var(std::move(p.first)), var(std::move(p.second))};
}

template <class M, std::size_t... I>
var_list call_unpacked(M& model, const var_list& inputs, std::index_sequence<I...>) {
  return as_var_list(model(inputs[I]...));
}

/// A description of what `M` accepts, for the error when the count does not fit.
template <class M>
std::string accepted_inputs() {
  std::string s;
  auto add = [&](bool ok, const char* what) {
    if (!ok) return;
    if (!s.empty()) s += " or ";
    s += what;
  };
  add(takes_vars_v<M, 1>, "1 input");
  add(takes_vars_v<M, 2>, "2 inputs");
  add(takes_vars_v<M, 3>, "3 inputs");
  add(takes_vars_v<M, 4>, "4 inputs");
  add(takes_var_list_v<M>, "a list of inputs");
  return s.empty() ? std::string("a forward call taking vars") : s;
}

}  // namespace detail

/// Runs `model` on `inputs` (as separate arguments when it takes that many, else as one
/// list) and returns its outputs as a list; `where` names the caller in the error when
/// the model takes no such number of inputs.
template <class Model>
var_list call_model(Model& model, const var_list& inputs, const char* where = "xq::call_model") {
  const std::size_t n = inputs.size();
  if constexpr (detail::takes_vars_v<Model, 1>)
    if (n == 1) return detail::call_unpacked(model, inputs, std::make_index_sequence<1>{});
  if constexpr (detail::takes_vars_v<Model, 2>)
    if (n == 2) return detail::call_unpacked(model, inputs, std::make_index_sequence<2>{});
  if constexpr (detail::takes_vars_v<Model, 3>)
    if (n == 3) return detail::call_unpacked(model, inputs, std::make_index_sequence<3>{});
  if constexpr (detail::takes_vars_v<Model, 4>)
    if (n == 4) return detail::call_unpacked(model, inputs, std::make_index_sequence<4>{});
  if constexpr (detail::takes_var_list_v<Model>) return detail::as_var_list(model(inputs));
  throw argument_error(where, "a model taking " + detail::accepted_inputs<Model>(),
                       std::to_string(n) + (n == 1 ? " input" : " inputs"));
}

}  // namespace xq
