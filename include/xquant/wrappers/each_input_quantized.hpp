#pragma once
/// \file each_input_quantized.hpp
/// `each_input_quantized<L>`: the quantized twin of a merge layer (add, concatenate,
/// multiply; NVIDIA's NonWeightedBaseQuantizeWrapperForMultipleInputs): a QDQ on each
/// input — where `input_quantized<L>` has one QDQ on a layer's one input — or only on the inputs listed in `wrapper_settings::input_indices` (NVIDIA's
/// quantization_index), then the float layer. Its input quantizers are made on the
/// first call (or by `input_quantizer(i)`): "merge/input_quantizer_0", "..._1".
///
/// `L` must be callable with two vars and with a `std::vector<var>`.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "qdq_wrapper.hpp"

namespace xq {

template <class Layer>
class each_input_quantized : public qdq_wrapper<each_input_quantized<Layer>, Layer> {
  using base = qdq_wrapper<each_input_quantized<Layer>, Layer>;
  friend base;

 public:
  each_input_quantized() : each_input_quantized(Layer{}) {}
  explicit each_input_quantized(Layer layer);

  var call(const var& a, const var& b) { return call(std::vector<var>{a, b}); }
  var call(const std::vector<var>& inputs);

  /// The quantizer of input `i` (created on the first call, or here).
  site_quantizers& input_quantizer(std::size_t i) {
    ensure_inputs(i + 1);
    return inputs_[i];
  }
  std::size_t inputs_seen() const noexcept { return inputs_.size(); }

  /// The precision of the first input's quantizer while it is on (the summary's input precision).
  std::optional<int> input_precision() const {
    if (inputs_.empty()) return std::nullopt;
    return declared_precision(inputs_[0].site());
  }

  template <class F>
  void visit_children(F&& f) {
    for (std::size_t i = 0; i < inputs_.size(); ++i) inputs_[i].visit("input_quantizer_" + std::to_string(i), f);
    this->output_.visit("output_quantizer", f);
  }
  template <class F>
  void visit_children(F&& f) const {
    for (std::size_t i = 0; i < inputs_.size(); ++i) inputs_[i].visit("input_quantizer_" + std::to_string(i), f);
    this->output_.visit("output_quantizer", f);
  }

 private:
  void configure_sites(const wrapper_settings&) {
    for (std::size_t i = 0; i < inputs_.size(); ++i) configure_input(i);
  }
  template <class F>
  void for_each_site_list(F&& f) {
    for (auto& q : inputs_) f(q);
    f(this->output_);
  }

  void ensure_inputs(std::size_t n) {
    const auto& indices = this->settings_.input_indices;
    if (!indices.empty()) {
      // An index must name an input of some call (a merge may be called with fewer inputs
      // at one site than at another), a single-input layer's included.
      const std::size_t top = *std::max_element(indices.begin(), indices.end());
      if (top >= std::max(n, inputs_.size()))
        throw argument_error(this->path(),
                             detail::concat("quantization_index entries below the number of inputs (", n, ")"),
                             detail::concat("index ", top));
    }
    if (inputs_.size() >= n) return;
    while (inputs_.size() < n) {
      inputs_.emplace_back();
      inputs_.back().set_call_sites(this->output_.call_sites());  // as many sites as the others
      configure_input(inputs_.size() - 1);
    }
    this->set_path(this->path());  // the new quantizers take their names
  }
  void configure_input(std::size_t i) {
    const auto& s = this->settings_;
    const bool listed = s.input_indices.empty() ||
                        std::find(s.input_indices.begin(), s.input_indices.end(), i) != s.input_indices.end();
    inputs_[i].configure(s.input, s.quantize_input && listed);
  }

  std::vector<site_quantizers> inputs_;
};

// Out of the class body (not implicitly inline), so that the registry's explicit
// instantiations (transform/compiled_twins.hpp) keep them out of a program's translation units.

template <class Layer>
each_input_quantized<Layer>::each_input_quantized(Layer layer) : base(std::move(layer)) {
  this->set_path(this->layer_.path());
}

template <class Layer>
var each_input_quantized<Layer>::call(const std::vector<var>& inputs) {
  ensure_inputs(inputs.size());
  std::vector<var> quantized;
  quantized.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) quantized.push_back(inputs_[i](inputs[i]));
  return this->finish(this->layer_(quantized));
}

}  // namespace xq
