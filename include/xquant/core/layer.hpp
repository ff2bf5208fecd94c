#pragma once
/// \file layer.hpp
/// `xq::layer<Self>`: the base of xquant's leaf layers — a local name, a path, and the
/// call operator. The full layer contract (what every layer provides, and what each
/// optional member enables) is docs/layer_contract.md; its detection traits are
/// core/layer_traits.hpp.
///
/// A leaf layer derives from `xq::layer<Self>`, lists its parameters in `parameters()`
/// and writes its computation as `call`:
/// \code
///   class scale : public xq::layer<scale> {
///    public:
///     scale() : xq::layer<scale>("scale") {}
///     xq::var call(const xq::var& x) { ... }               // what `layer(x)` runs
///     std::vector<xq::parameter_ptr> parameters() const { return {factor_}; }
///   };
/// \endcode
/// `layer(x)` runs `call(x)` (merge layers: `call(a, b)` and `call(std::vector<var>)`)
/// and, around it, what core/layer_call.hpp describes: a node in an active graph trace,
/// and the check that the model reaches the layer through its children. A composite
/// layer lists its children with `XQ_CHILDREN(a, b, ...)`, writes only its forward code
/// and needs no base class.

#include <string>
#include <utility>
#include <vector>

#include "layer_call.hpp"
#include "layer_traits.hpp"
#include "parameter.hpp"
#include "type_name.hpp"

namespace xq {

namespace detail {

/// A leaf call with its bookkeeping: `body()` computes the output; `args` are the call's
/// arguments (their vars become the trace node's inputs). `type()` names the layer type
/// (called only for a trace or an error: it demangles).
template <class Body, class... Args>
var run_leaf_call(const void* object, const std::string& path, std::string (*type)(), layer_role role, Body&& body,
                  const Args&... args) {
  const leaf_call_scope scope(object, path, type);
  if (!scope.outermost() || graph_trace::current() == nullptr) return body();
  std::vector<var> inputs;
  (collect_vars(inputs, args), ...);
  var y = body();
  trace_layer_call(path, type(), role, inputs, y);
  return y;
}

/// Valid when `layer.call(x)` takes one var.
template <class L>
using unary_call_op = decltype(std::declval<L>().call(std::declval<const var&>()));

}  // namespace detail

/// CRTP base of leaf layers: `Self` gets `name()`, `name("new")` (chainable), `path()`,
/// `set_path`, and `operator()`, which runs `Self::call`.
template <class Self>
class layer {
 public:
  /// The layer's own name ("conv2d" until renamed).
  const std::string& name() const noexcept { return name_; }
  /// Renames the layer (chainable: `xq::conv2d(32, 3).name("stem")`).
  Self& name(std::string n) {
    name_ = std::move(n);
    static_cast<Self&>(*this).set_path(name_);
    return static_cast<Self&>(*this);
  }
  /// The full path in its model ("block_1/conv"); the name until `set_paths` ran.
  const std::string& path() const noexcept { return path_; }
  /// Sets the path and renames the parameters after it.
  void set_path(std::string p) {
    path_ = std::move(p);
    for (const auto& param : static_cast<Self&>(*this).parameters())
      if (param) param->set_owner_path(path_);
  }

  /// The type name that specs, summaries and traces use ("conv2d" for `xq::conv2d`).
  static std::string layer_type() { return detail::type_short_name<Self>(); }

  /// Runs the layer: `Self::call(args...)` (see the file comment).
  template <class... Args>
  var operator()(const Args&... args) {
    Self& self = static_cast<Self&>(*this);
    return detail::run_leaf_call(&self, path_, &Self::layer_type, layer_role_v<Self>,
                                 [&] { return self.call(args...); }, args...);
  }
  template <class... Args>
  var operator()(const Args&... args) const {
    const Self& self = static_cast<const Self&>(*this);
    return detail::run_leaf_call(&self, path_, &Self::layer_type, layer_role_v<Self>,
                                 [&] { return self.call(args...); }, args...);
  }
  /// One var, for a layer whose `call` takes one: the common call, through the compiled
  /// bookkeeping (a template only so that a merge layer, called with `{a}`, gets the list).
  template <class S = Self, class = detail::unary_call_op<S&>>
  var operator()(const var& x) {
    return detail::run_unary_leaf_call(
        static_cast<Self*>(this), path_, &Self::layer_type, layer_role_v<Self>,
        [](const void* s, const var& in) { return const_cast<Self*>(static_cast<const Self*>(s))->call(in); }, x);
  }
  template <class S = Self, class = detail::unary_call_op<const S&>>
  var operator()(const var& x) const {
    return detail::run_unary_leaf_call(
        static_cast<const Self*>(this), path_, &Self::layer_type, layer_role_v<Self>,
        [](const void* s, const var& in) { return static_cast<const Self*>(s)->call(in); }, x);
  }
  /// A merge layer's inputs as a braced list: `merge({a, b, c})`.
  var operator()(const std::vector<var>& inputs) { return operator()<std::vector<var>>(inputs); }
  var operator()(const std::vector<var>& inputs) const { return operator()<std::vector<var>>(inputs); }

 protected:
  explicit layer(std::string default_name) : name_(default_name), path_(std::move(default_name)) {}
  /// Called by a layer when it creates its parameters, so they carry its path.
  void name_parameters() { static_cast<Self&>(*this).set_path(path_); }

 private:
  std::string name_, path_;
};

}  // namespace xq
