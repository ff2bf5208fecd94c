#pragma once
/// \file qdq_wrapper.hpp
/// `xq::qdq_wrapper<Self, Layer>`: what NVIDIA-style wrappers add to the wrapped-layer
/// base (wrapped_layer.hpp): QDQ sites placed by `quantize_model` rather than chosen by
/// the user. Each wrapper has fake quantizers for its input(s) (and kernel), and an
/// output quantizer (off in NVIDIA's scheme; tfmot and PyTorch quantize outputs), all
/// off until `configure(wrapper_settings)` turns on the ones the scheme and the spec
/// place. Activation quantizers keep one range per call site when asked
/// (site_quantizers.hpp).
///
/// `Self` provides `configure_sites(settings)`, `for_each_site_list(f)` (each of its
/// `site_quantizers`) and `visit_children`.

#include <cstddef>
#include <string>
#include <utility>

#include "site_quantizers.hpp"
#include "wrapped_layer.hpp"
#include "wrapper_settings.hpp"

namespace xq {

template <class Self, class Layer>
class qdq_wrapper : public wrapped_layer<Self, Layer> {
 public:
  site_quantizers& output_quantizer() noexcept { return output_; }
  const site_quantizers& output_quantizer() const noexcept { return output_; }

  /// The settings `quantize_model` gave this wrapper.
  const wrapper_settings& settings() const noexcept { return settings_; }
  /// Turns on and configures the quantizers the settings place; the others go off.
  void configure(const wrapper_settings& s);

  /// One range per call site (`quantize_model` with per_call_site_ranges, from the trace).
  void set_call_sites(std::size_t n);
  /// Re-aligns the per-call-site counters after a pass that stopped half-way.
  void reset_call_sites();

 protected:
  qdq_wrapper() = default;
  explicit qdq_wrapper(Layer layer) : wrapped_layer<Self, Layer>(std::move(layer)) {}

  /// The float layer's output through the output quantizer.
  var finish(const var& y) { return output_(y); }

  site_quantizers output_;
  wrapper_settings settings_;
};

// Out of the class body (not implicitly inline), so that the registry's explicit
// instantiations (transform/compiled_twins.hpp) keep them out of a program's translation units.

template <class Self, class Layer>
void qdq_wrapper<Self, Layer>::configure(const wrapper_settings& s) {
  settings_ = s;
  output_.configure(s.output, s.quantize_output);
  this->self().configure_sites(s);
  this->set_path(this->path());  // new quantizer states take their names
}

template <class Self, class Layer>
void qdq_wrapper<Self, Layer>::set_call_sites(std::size_t n) {
  this->self().for_each_site_list([&](site_quantizers& q) { q.set_call_sites(n); });
  this->set_path(this->path());
}

template <class Self, class Layer>
void qdq_wrapper<Self, Layer>::reset_call_sites() {
  this->self().for_each_site_list([](site_quantizers& q) { q.reset_call_sites(); });
}

}  // namespace xq
