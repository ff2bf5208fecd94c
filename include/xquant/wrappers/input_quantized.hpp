#pragma once
/// \file input_quantized.hpp
/// `input_quantized<L>`: the quantized twin of a single-input layer without weights
/// (NVIDIA's NonWeightedBaseQuantizeWrapper): a QDQ on the input, then the float layer.
/// The default registry uses it for the pools, batch_norm, the activations, flatten,
/// reshape and dropout; whether its QDQ is on comes from the scheme and the spec.
///
/// A new weightless layer gets a twin with one line:
/// \code
///   template <> struct xq::quantize<my::channel_shuffle> {
///     using type = xq::input_quantized<my::channel_shuffle>;
///   };
/// \endcode
/// `L` must be callable as `var operator()(const var&)` and have name(), path(),
/// set_path() and parameters() (what `xq::layer<L>` gives).

#include <utility>

#include "quantize_wrapper.hpp"

namespace xq {

template <class Layer>
class input_quantized : public quantize_wrapper<input_quantized<Layer>, Layer> {
  using base = quantize_wrapper<input_quantized<Layer>, Layer>;
  friend base;

 public:
  input_quantized() : input_quantized(Layer{}) {}
  /// The twin of `layer`, sharing its parameters.
  explicit input_quantized(Layer layer) : base(std::move(layer)) { this->set_path(this->layer_.path()); }

  var operator()(const var& x) { return this->finish({x}, this->layer_(input_(x))); }

  site_quantizers& input_quantizer() noexcept { return input_; }
  const site_quantizers& input_quantizer() const noexcept { return input_; }

  void configure(const wrapper_settings& s) {
    this->configure_output(s);
    input_.configure(s.input, s.quantize_input);
  }
  void set_call_sites(std::size_t n) {
    input_.set_call_sites(n);
    this->output_.set_call_sites(n);
  }
  void reset_call_sites() {
    input_.reset_call_sites();
    this->output_.reset_call_sites();
  }
  template <class F>
  void for_each_quantizer(F&& f) {
    input_.for_each(f);
    this->output_.for_each(f);
  }

 protected:
  site_quantizers input_;

 private:
  void name_quantizers(const std::string& p) { input_.set_path(p + "/input_quantizer"); }
};

}  // namespace xq
