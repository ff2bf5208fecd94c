#pragma once
/// \file input_quantized.hpp
/// `input_quantized<L>`: the quantized twin of a single-input layer without weights
/// (NVIDIA's NonWeightedBaseQuantizeWrapper): a QDQ on the input, then the float layer.
/// The default registry uses it for the pools, the activations, flatten, reshape and
/// dropout; whether its QDQ is on comes from the scheme and the spec.
///
/// A new weightless layer gets a twin with one line:
/// \code
///   template <> struct xq::quantize<my::channel_shuffle> {
///     using type = xq::input_quantized<my::channel_shuffle>;
///   };
/// \endcode
/// `L` must be callable as `var operator()(const var&)` and have name(), path(),
/// set_path() and parameters() (what `xq::layer<L>` gives). `Derived` is for a twin that
/// extends this one (quantized_batch_norm.hpp): it then gets the calls.

#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "../fwd.hpp"
#include "qdq_wrapper.hpp"

namespace xq {

/// (Default template arguments: xquant/fwd.hpp.)
template <class Layer, class Derived>
class input_quantized
    : public qdq_wrapper<std::conditional_t<std::is_void_v<Derived>, input_quantized<Layer>, Derived>, Layer> {
  using self_type = std::conditional_t<std::is_void_v<Derived>, input_quantized<Layer>, Derived>;
  using base = qdq_wrapper<self_type, Layer>;
  friend base;

 public:
  input_quantized() : input_quantized(Layer{}) {}
  /// The twin of `layer`, sharing its parameters.
  explicit input_quantized(Layer layer);

  var call(const var& x);

  site_quantizers& input_quantizer() noexcept { return input_; }
  const site_quantizers& input_quantizer() const noexcept { return input_; }

  /// The input quantizer's precision while it is on (the summary's input precision).
  std::optional<int> input_precision() const { return declared_precision(input_.site()); }

  template <class F>
  void visit_children(F&& f) {
    input_.visit("input_quantizer", f);
    this->output_.visit("output_quantizer", f);
  }
  template <class F>
  void visit_children(F&& f) const {
    input_.visit("input_quantizer", f);
    this->output_.visit("output_quantizer", f);
  }

 protected:
  void configure_sites(const wrapper_settings& s) {
    detail::check_single_input_indices(this->path(), s.input_indices);
    input_.configure(s.input, s.quantize_input);
  }
  template <class F>
  void for_each_site_list(F&& f) {
    f(input_);
    f(this->output_);
  }

  site_quantizers input_;
};

// Out of the class body (not implicitly inline), so that the registry's explicit
// instantiations (transform/compiled_twins.hpp) keep them out of a program's translation units.

template <class Layer, class Derived>
input_quantized<Layer, Derived>::input_quantized(Layer layer) : base(std::move(layer)) {
  this->set_path(this->layer_.path());
}

template <class Layer, class Derived>
var input_quantized<Layer, Derived>::call(const var& x) {
  return this->finish(this->layer_(input_(x)));
}

}  // namespace xq
