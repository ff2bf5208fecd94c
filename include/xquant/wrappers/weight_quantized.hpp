#pragma once
/// \file weight_quantized.hpp
/// `weight_quantized<L>`: the quantized twin of a layer with a kernel (NVIDIA's
/// WeightedBaseQuantizeWrapper): QDQ on the input (per tensor) and on the kernel (per
/// output channel by default), then the float layer's operation on the two.
///
/// The layer contract (what conv2d, dense and depthwise_conv2d provide; a user layer
/// that provides it gets its twin with `using type = xq::weight_quantized<my_layer>`):
///   - `const parameter_ptr& kernel() const`, `const parameter_ptr& bias() const` (may be null);
///   - `void ensure_built(const var& x)`: creates the parameters from the first input;
///   - `var call_with(const var& x, const var& kernel, const var& bias) const`: the
///     layer's operation with the given kernel and bias (undefined var: none).
/// `kernel_channel_axis<L>` names the kernel's output-channel axis (last by default;
/// depthwise_conv2d: 2, as NVIDIA's toolkit does).
///
/// With a batch norm folded in (see batch_norm_folding.hpp and `quantize_model`), the
/// kernel that is fake-quantized is the folded one.

#include <memory>
#include <type_traits>
#include <utility>

#include "batch_norm_folding.hpp"
#include "quantize_wrapper.hpp"

namespace xq {

/// The axis of a layer's kernel that holds its output channels (negative: from the end).
template <class Layer>
struct kernel_channel_axis : std::integral_constant<int, -1> {};
template <class Layer>
inline constexpr int kernel_channel_axis_v = kernel_channel_axis<Layer>::value;

/// Whether a layer's input can be fake-quantized (false for an embedding: its input is
/// integer ids). A spec that asks for it is ignored for such a layer.
template <class Layer>
struct quantizable_input : std::true_type {};
template <class Layer>
inline constexpr bool quantizable_input_v = quantizable_input<Layer>::value;

template <class Layer>
class weight_quantized : public quantize_wrapper<weight_quantized<Layer>, Layer> {
  using base = quantize_wrapper<weight_quantized<Layer>, Layer>;
  friend base;

 public:
  weight_quantized() : weight_quantized(Layer{}) {}
  /// The twin of `layer`, sharing its parameters.
  explicit weight_quantized(Layer layer) : base(std::move(layer)) { this->set_path(this->layer_.path()); }

  var operator()(const var& x) {
    Layer& l = this->layer_;
    l.ensure_built(x);
    const var in = input_(x);
    const var bias = l.bias() ? var(l.bias()) : var();
    if (!fold_) return this->finish({x}, l.call_with(in, weight_(var(l.kernel())), bias));
    if (is_training()) ++fold_->training_calls;
    const var s = ops::fold_scale(*fold_);
    const var folded = ops::scale_channels(var(l.kernel()), s, this->path());
    const var unfolded = ops::divide_channels(weight_(folded), s, this->path());
    return this->finish({x}, l.call_with(in, unfolded, bias));
  }

  site_quantizers& input_quantizer() noexcept { return input_; }
  const site_quantizers& input_quantizer() const noexcept { return input_; }
  fake_quantizer& weight_quantizer() noexcept { return weight_; }
  const fake_quantizer& weight_quantizer() const noexcept { return weight_; }

  void configure(const wrapper_settings& s) {
    this->configure_output(s);
    input_.configure(s.input, s.quantize_input && quantizable_input_v<Layer>);
    quantizer_config w = s.weight;
    if (w.per_channel) w.channel_axis = kernel_channel_axis_v<Layer>;
    weight_.configure(w);
    weight_.enable(s.quantize_weight);
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
    f(weight_);
    this->output_.for_each(f);
  }

  /// Folds a batch norm into this layer (the pass in `quantize_model` calls it).
  void fold(std::shared_ptr<batch_norm_fold> link) { fold_ = std::move(link); }
  /// The folded batch norm's link, or null.
  const std::shared_ptr<batch_norm_fold>& folded() const noexcept { return fold_; }
  /// The link's slot, with the parameters inside it (core/clone.hpp's protocol): a clone
  /// gives the folded pair one new link pointing at the clone's gamma and variance.
  template <class F>
  void for_each_link_slot(F&& f) {
    f(fold_, &batch_norm_fold::gamma, &batch_norm_fold::moving_variance);
  }

 private:
  void name_quantizers(const std::string& p) {
    input_.set_path(p + "/input_quantizer");
    weight_.set_path(p + "/kernel_quantizer");
  }
  site_quantizers input_;
  fake_quantizer weight_;
  std::shared_ptr<batch_norm_fold> fold_;
};

}  // namespace xq
