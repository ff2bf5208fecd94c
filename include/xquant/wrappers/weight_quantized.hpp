#pragma once
/// \file weight_quantized.hpp
/// `weight_quantized<L>`: the quantized twin of a layer with a kernel (NVIDIA's
/// WeightedBaseQuantizeWrapper): QDQ on the input (per tensor) and on the kernel (per
/// output channel by default), then the float layer's operation on the two.
///
/// What `L` needs (core/layer_traits.hpp's `is_weighted_layer`; conv2d, dense,
/// depthwise_conv2d, embedding, tied_projection and tied_dense have it; a user layer that
/// has it gets its twin with `using type = xq::weight_quantized<my_layer>`):
///   - `const parameter_ptr& kernel() const`, `const parameter_ptr& bias() const` (may be null);
///   - `void ensure_built(const var& x)`: creates the parameters from the first input;
///   - `var call_with(const var& x, const var& kernel, const var& bias) const`: the
///     layer's operation with the given kernel and bias (undefined var: none).
/// `kernel_channel_axis<L>` names the kernel's output-channel axis (last by default;
/// depthwise_conv2d: 2, as NVIDIA's toolkit does); `quantizable_input<L>` whether its
/// input can be quantized (an embedding's ids cannot). A low-bit weight format
/// (quantizer_config::format) runs its blocks along `kernel_block_axis<L>`, the axis the
/// product sums over.
///
/// With a batch norm folded in (see batch_norm_folding.hpp and `quantize_model`), the
/// kernel that is fake-quantized is the folded one: batch norms fold before block
/// quantization. With a LoRA adapter attached (low_rank_adapter.hpp, transform/lora.hpp),
/// the kernel is K + scale·A·B before either: merging the adapter changes nothing.

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "batch_norm_folding.hpp"
#include "low_rank_adapter.hpp"
#include "qdq_wrapper.hpp"

namespace xq {

template <class Layer>
class weight_quantized : public qdq_wrapper<weight_quantized<Layer>, Layer> {
  static_assert(is_weighted_layer_v<Layer>,
                "xquant: weight_quantized<L> needs L's weighted-layer members: kernel(), bias(), "
                "ensure_built(x) and call_with(x, kernel, bias) (docs/layer_contract.md); for a layer "
                "without weights use xq::input_quantized<L>");
  using base = qdq_wrapper<weight_quantized<Layer>, Layer>;
  friend base;

 public:
  weight_quantized() : weight_quantized(Layer{}) {}
  /// The twin of `layer`, sharing its parameters.
  explicit weight_quantized(Layer layer);

  var call(const var& x);

  site_quantizers& input_quantizer() noexcept { return input_; }
  const site_quantizers& input_quantizer() const noexcept { return input_; }
  fake_quantizer& weight_quantizer() noexcept { return weight_; }
  const fake_quantizer& weight_quantizer() const noexcept { return weight_; }

  /// The input quantizer's precision while it is on (the summary's input precision).
  std::optional<int> input_precision() const { return declared_precision(input_.site()); }
  /// The kernel with the kernel quantizer's precision (32 while it is off), the bias 32.
  std::vector<std::pair<parameter_ptr, int>> weight_precisions() const { return this->weight_precisions_for(weight_); }

  /// The float layer's parameters, and the adapter's while one is attached.
  std::vector<parameter_ptr> parameters() const {
    return detail::with_adapter_parameters(this->layer_.parameters(), adapter_ ? &*adapter_ : nullptr);
  }
  template <class F>
  void for_each_parameter_slot(F&& f) {
    visit_parameter_slots(this->layer_, f);
    if (adapter_) {
      f(adapter_->down);
      f(adapter_->up);
    }
  }
  /// The adapter's parameters take the layer's path ("dense/lora_a").
  void name_own_parameters(const std::string& p) {
    if (adapter_) for (const parameter_ptr& q : {adapter_->down, adapter_->up}) q->set_owner_path(p);
  }

  /// Attaches a LoRA adapter (replacing one attached before); the layer must be built.
  void attach_adapter(low_rank_adapter a) {
    adapter_ = std::move(a);
    name_own_parameters(this->path());
  }
  /// The attached adapter, or null.
  const low_rank_adapter* adapter() const noexcept { return adapter_ ? &*adapter_ : nullptr; }
  /// Merges the adapter into the kernel (K ← K + scale·A·B, the forward's arithmetic) and
  /// drops it; the base kernel is trainable again if attaching froze it. False without one.
  bool merge_adapter() {
    if (!adapter_) return false;
    const parameter_ptr& k = this->layer_.kernel();
    k->value = merged_kernel(k->value, *adapter_, this->path());
    if (adapter_->froze_base) k->set_trainable(true);
    adapter_.reset();
    return true;
  }

  template <class F>
  void visit_children(F&& f) {
    input_.visit("input_quantizer", f);
    f(weight_, "kernel_quantizer");
    this->output_.visit("output_quantizer", f);
  }
  template <class F>
  void visit_children(F&& f) const {
    input_.visit("input_quantizer", f);
    f(weight_, "kernel_quantizer");
    this->output_.visit("output_quantizer", f);
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
  void configure_sites(const wrapper_settings& s);
  template <class F>
  void for_each_site_list(F&& f) {
    f(input_);
    f(this->output_);
  }

  site_quantizers input_;
  fake_quantizer weight_;
  std::shared_ptr<batch_norm_fold> fold_;
  std::optional<low_rank_adapter> adapter_;
};

// Out of the class body (not implicitly inline), so that the registry's explicit
// instantiations (transform/compiled_twins.hpp) keep them out of a program's translation units.

template <class Layer>
weight_quantized<Layer>::weight_quantized(Layer layer) : base(std::move(layer)) {
  this->set_path(this->layer_.path());
}

template <class Layer>
var weight_quantized<Layer>::call(const var& x) {
  Layer& l = this->layer_;
  l.ensure_built(x);
  const var in = input_(x);
  const var bias = l.bias() ? var(l.bias()) : var();
  const var kernel = adapter_ ? ops::add_low_rank(var(l.kernel()), *adapter_, this->path()) : var(l.kernel());
  if (!fold_) return this->finish(l.call_with(in, weight_(kernel), bias));
  if (is_training()) ++fold_->training_calls;
  const var s = ops::fold_scale(*fold_);
  const var folded = ops::scale_channels(kernel, s, this->path());
  const var unfolded = ops::divide_channels(weight_(folded), s, this->path());
  return this->finish(l.call_with(in, unfolded, bias));
}

template <class Layer>
void weight_quantized<Layer>::configure_sites(const wrapper_settings& s) {
  detail::check_single_input_indices(this->path(), s.input_indices);
  quantizer_config in = s.input, w = s.weight;
  if (w.per_channel) w.channel_axis = s.weight_channel_axis.value_or(kernel_channel_axis_v<Layer>);
  const parameter_ptr& kernel = this->layer_.kernel();
  detail::fit_formats(in, w, kernel ? std::vector<std::size_t>(kernel->value.shape().begin(), kernel->value.shape().end())
                                    : std::vector<std::size_t>{},
                      kernel_block_axis_v<Layer>);
  input_.configure(in, s.quantize_input && quantizable_input_v<Layer>);
  weight_.configure(w);
  weight_.enable(s.quantize_weight);
}

}  // namespace xq
