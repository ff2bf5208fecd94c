#pragma once
/// \file inputs_quantized.hpp
/// `inputs_quantized<L>`: the quantized twin of a merge layer (add, concatenate,
/// multiply; NVIDIA's NonWeightedBaseQuantizeWrapperForMultipleInputs): a QDQ on each
/// input, or only on the inputs listed in `wrapper_settings::input_indices` (NVIDIA's
/// quantization_index), then the float layer.
///
/// `L` must be callable with two vars and with a `std::vector<var>`.

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "quantize_wrapper.hpp"

namespace xq {

template <class Layer>
class inputs_quantized : public quantize_wrapper<inputs_quantized<Layer>, Layer> {
  using base = quantize_wrapper<inputs_quantized<Layer>, Layer>;
  friend base;

 public:
  inputs_quantized() : inputs_quantized(Layer{}) {}
  explicit inputs_quantized(Layer layer) : base(std::move(layer)) { this->set_path(this->layer_.path()); }

  var operator()(const var& a, const var& b) { return (*this)(std::vector<var>{a, b}); }
  var operator()(const std::vector<var>& inputs) {
    ensure_inputs(inputs.size());
    std::vector<var> quantized;
    quantized.reserve(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) quantized.push_back(inputs_[i](inputs[i]));
    return this->finish(inputs, this->layer_(quantized));
  }

  /// The quantizer of input `i` (created on the first call, or here).
  site_quantizers& input_quantizer(std::size_t i) {
    ensure_inputs(i + 1);
    return inputs_[i];
  }
  std::size_t inputs_seen() const noexcept { return inputs_.size(); }

  void configure(const wrapper_settings& s) {
    this->configure_output(s);
    for (std::size_t i = 0; i < inputs_.size(); ++i) configure_input(i);
  }
  void set_call_sites(std::size_t n) {
    sites_ = n;
    for (auto& q : inputs_) q.set_call_sites(n);
    this->output_.set_call_sites(n);
  }
  void reset_call_sites() {
    for (auto& q : inputs_) q.reset_call_sites();
    this->output_.reset_call_sites();
  }
  template <class F>
  void for_each_quantizer(F&& f) {
    for (auto& q : inputs_) q.for_each(f);
    this->output_.for_each(f);
  }

 private:
  void ensure_inputs(std::size_t n) {
    const auto& indices = this->settings_.input_indices;
    if (!indices.empty() && n > 1) {
      const std::size_t top = *std::max_element(indices.begin(), indices.end());
      if (top >= n && inputs_.size() < n)
        throw argument_error(this->path(),
                             detail::concat("quantization_index entries below the number of inputs (", n, ")"),
                             detail::concat("index ", top));
    }
    while (inputs_.size() < n) {
      inputs_.emplace_back();
      inputs_.back().set_call_sites(sites_);
      configure_input(inputs_.size() - 1);
      inputs_.back().set_path(detail::concat(this->path(), "/input_quantizer_", inputs_.size() - 1));
    }
  }
  void configure_input(std::size_t i) {
    const auto& s = this->settings_;
    const bool listed = s.input_indices.empty() ||
                        std::find(s.input_indices.begin(), s.input_indices.end(), i) != s.input_indices.end();
    inputs_[i].configure(s.input, s.quantize_input && listed);
  }
  void name_quantizers(const std::string& p) {
    for (std::size_t i = 0; i < inputs_.size(); ++i)
      inputs_[i].set_path(detail::concat(p, "/input_quantizer_", i));
  }
  std::vector<site_quantizers> inputs_;
  std::size_t sites_ = 1;
};

}  // namespace xq
