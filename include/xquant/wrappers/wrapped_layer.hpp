#pragma once
/// \file wrapped_layer.hpp
/// `xq::wrapped_layer<Self, Layer>`: the one base of every quantized layer that holds a
/// float layer — NVIDIA's wrappers (weight_quantized, input_quantized, each_input_quantized,
/// quantized_batch_norm, through qdq_wrapper.hpp) and Larq's quant layers (quant_dense,
/// quant_conv2d, quant_depthwise_conv2d). Larq's own code never merged its three
/// quantized-layer bases; here there is one.
///
/// What it gives `Self`:
///  - the float layer `Layer` held by value (`float_layer()`): its parameters are
///    `shared_ptr`s, so a twin uses the float model's weights, not a copy; the name,
///    the path and the parameters are the float layer's ("block/conv/kernel", as Keras
///    names them), and the quantizers are children ("block/conv/kernel_quantizer");
///  - the call: `layer(x)` runs `Self::call(x)` with the bookkeeping of every leaf call
///    (core/layer_call.hpp): one node in a graph trace, reported with the float layer's
///    type and role ("conv2d", conv), and the reachability check;
///  - the weighted-layer contract forwarded from the float layer (`kernel()`, `bias()`,
///    `ensure_built(x)`), and Keras's kernel and bias constraints, attached to the
///    parameters when the layer builds them;
///  - the bit widths the summary and `bop` read: `weight_precisions_for(kernel
///    quantizer)`, for `Self::weight_precisions()`.
///
/// `Self` provides `var call(...)` and lists its quantizers as children: XQ_CHILDREN
/// (quant layers: members of the types the user chose) or `visit_children(f)` (NVIDIA's
/// wrappers: made at run time, one per input or call site).

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/children.hpp"
#include "../core/clone.hpp"
#include "../core/layer.hpp"
#include "../core/layer_ref.hpp"
#include "../core/layer_traits.hpp"
#include "../core/parameter.hpp"
#include "../quantizers/no_quantizer.hpp"

namespace xq {

namespace detail {

/// A wrapper's kernel and bias constraints (Keras's kernel_constraint, bias_constraint),
/// with out-of-line copy, move and destruction (config.hpp's XQ_SPECIAL_MEMBERS says why).
struct weight_constraints {
  weight_constraints() = default;
  XQ_SPECIAL_MEMBERS(weight_constraints)
  parameter::constraint_function kernel, bias;
};

}  // namespace detail

template <class Self, class Layer>
class wrapped_layer {
 public:
  using float_layer_type = Layer;
  /// A wrapper is what its float layer is, to graph passes and summaries.
  static constexpr layer_role role = layer_role_v<Layer>;
  static constexpr bool counts_macs = counts_macs_v<Layer>;

  /// The float layer inside (its parameters are the wrapper's parameters).
  Layer& float_layer() noexcept { return layer_; }
  const Layer& float_layer() const noexcept { return layer_; }

  /// The float layer's type name: what `quantization_spec` entries by type and traces use ("conv2d").
  static std::string layer_type() {
    if constexpr (detail::detect<Layer, detail::layer_type_op>::value) return Layer::layer_type();
    else return detail::type_short_name<Layer>();
  }

  /// Runs the layer: `Self::call(args...)` (see the file comment).
  template <class... Args>
  var operator()(const Args&... args) {
    Self& s = self();
    return detail::run_leaf_call(&s, path(), &Self::layer_type, role, [&] { return s.call(args...); }, args...);
  }
  /// A merge layer's inputs as a braced list: `merge({a, b, c})`.
  /// One var, for a layer whose `call` takes one: the common call, through the compiled
  /// bookkeeping (core/layer.hpp says why this is a template).
  template <class S = Self, class = detail::unary_call_op<S&>>
  var operator()(const var& x) {
    return detail::run_unary_leaf_call(
        &self(), path(), &Self::layer_type, role,
        [](const void* s, const var& in) { return const_cast<Self*>(static_cast<const Self*>(s))->call(in); }, x);
  }
  /// (A template, so that the registry's explicit instantiations of one-input twins skip it.)
  template <class S = Self>
  var operator()(const std::vector<var>& inputs) {
    S& s = self();
    return detail::run_leaf_call(&s, path(), &Self::layer_type, role, [&] { return s.call(inputs); }, inputs);
  }

  const std::string& name() const noexcept { return layer_.name(); }
  /// Renames the layer (chainable), its parameters and quantizers too.
  Self& name(std::string n);
  const std::string& path() const noexcept { return layer_.path(); }
  /// Sets the path: the float layer's (renaming its parameters) and the quantizers'
  /// ("block/conv/input_quantizer").
  void set_path(std::string p);

  /// Names what the wrapper owns beside the float layer's parameters after the path (a
  /// twin's LoRA adapter); nothing here.
  void name_own_parameters(const std::string&) {}

  /// The float layer's parameters (a quantizer lists its own: it is a child).
  std::vector<parameter_ptr> parameters() const { return layer_.parameters(); }
  /// The float layer's parameter slots (core/clone.hpp's protocol).
  template <class F>
  void for_each_parameter_slot(F&& f) {
    visit_parameter_slots(layer_, f);
  }

  // ---- the float layer's weighted-layer contract, forwarded ------------------------------

  /// The (latent, float) kernel: what the optimizer updates and the kernel quantizer sees.
  template <class L = Layer, class = std::enable_if_t<has_kernel_v<L>>>
  const parameter_ptr& kernel() const noexcept {
    return layer_.kernel();
  }
  template <class L = Layer, class = std::enable_if_t<has_bias_v<L>>>
  const parameter_ptr& bias() const noexcept {
    return layer_.bias();
  }
  /// Builds the float layer's parameters from `x` unless built (what the first call does),
  /// and attaches the constraints.
  template <class L = Layer, class = std::void_t<detail::ensure_built_op<L>, detail::kernel_op<L>>>
  void ensure_built(const var& x) {
    if (layer_.kernel()) return;
    layer_.ensure_built(x);
    attach_constraints();
  }

  /// Keras's `kernel_constraint`: applied to the latent kernel after every optimizer step
  /// (Larq pairs binary kernels with `xq::weight_clip`). Empty: none.
  template <class L = Layer, class = std::enable_if_t<has_kernel_v<L>>>
  Self& kernel_constraint(parameter::constraint_function c) {
    constraints_.kernel = std::move(c);
    attach_constraints();
    return self();
  }
  /// Keras's `bias_constraint`.
  template <class L = Layer, class = std::enable_if_t<has_bias_v<L>>>
  Self& bias_constraint(parameter::constraint_function c) {
    constraints_.bias = std::move(c);
    attach_constraints();
    return self();
  }
  const parameter::constraint_function& kernel_constraint() const noexcept { return constraints_.kernel; }
  const parameter::constraint_function& bias_constraint() const noexcept { return constraints_.bias; }

 protected:
  wrapped_layer() = default;
  explicit wrapped_layer(Layer layer) : layer_(std::move(layer)) {}

  /// The kernel with `kernel_quantizer`'s precision (32 without one, or while it is
  /// off), the bias with 32 (both absent until built): what `weight_precisions()` returns.
  template <class Q>
  std::vector<std::pair<parameter_ptr, int>> weight_precisions_for(const Q& kernel_quantizer) const {
    std::vector<std::pair<parameter_ptr, int>> out;
    if constexpr (has_kernel_v<Layer>)
      if (layer_.kernel()) out.emplace_back(layer_.kernel(), weight_bitwidth(kernel_quantizer));
    if constexpr (has_bias_v<Layer>)
      if (layer_.bias()) out.emplace_back(layer_.bias(), 32);
    return out;
  }

  Self& self() noexcept { return static_cast<Self&>(*this); }
  const Self& self() const noexcept { return static_cast<const Self&>(*this); }

  Layer layer_;

 private:
  void attach_constraints() {
    if constexpr (has_kernel_v<Layer>)
      if (layer_.kernel() && constraints_.kernel) layer_.kernel()->set_constraint(constraints_.kernel);
    if constexpr (has_bias_v<Layer>)
      if (layer_.bias() && constraints_.bias) layer_.bias()->set_constraint(constraints_.bias);
  }

  detail::weight_constraints constraints_;
};

// Out of the class body (not implicitly inline), so that the registry's explicit
// instantiations (transform/compiled_twins.hpp) keep them out of a program's translation units.

template <class Self, class Layer>
Self& wrapped_layer<Self, Layer>::name(std::string n) {
  layer_.name(std::move(n));
  set_path(layer_.path());
  return self();
}

template <class Self, class Layer>
void wrapped_layer<Self, Layer>::set_path(std::string p) {
  layer_.set_path(p);
  self().name_own_parameters(p);
  detail::set_child_paths(as_layer_ref(self()), p);
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/wrapped_layer.ipp"
#endif
