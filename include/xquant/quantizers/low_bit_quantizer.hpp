#pragma once
/// \file low_bit_quantizer.hpp
/// `xq::low_bit_quantizer<Self>`: what the low-bit format quantizers share (mx_quantizer,
/// nvfp4_quantizer, fp8_quantizer, intx_quantizer): the one quantizer concept
/// (quantizer_layer.hpp) over a block-scaled format of numerics/ (a scale, shared exponent or
/// scale and zero point per block, row or tensor, computed from the tensor it quantizes).
///
/// State and switches, as PyTorch's FakeQuantize composes an observer:
///  - observer on (the default): every call computes its scales from its own input, as the
///    peers do (torchao's `is_dynamic=True`, TransformerEngine's current scaling, ModelOpt's
///    dynamic block quantizer), in the same pass as the quantization, and keeps them in the
///    state parameters (the last call's scales: what the peers compute per call, kept so that
///    deployment, checkpoints and the summary see them);
///  - observer off: calls use the kept scales (they must fit the input: one per block of a
///    tensor of the kept shape), as a calibrated static quantizer does;
///  - fake quant off: the input passes through (a training call with the observer on still
///    keeps the scales of its input).
/// The state parameters (non-trainable, named as the peer names them: "scale", "amax",
/// "block_scale", "zero_point", ...) appear once the quantizer has been called, shaped like
/// the input with the block axis shortened to the block count (ONNX's blocked layout: the
/// grid xq::quantization_grid describes per block along an axis). So clones, checkpoints and
/// the summary see them as any state; their shape follows the input (an activation's batch),
/// so a checkpoint gives them its own shape (`state_takes_saved_shape`).
///
/// Bits: `precision()` is the element's width (4 for FP4, 8 for FP8); the summary counts the
/// scales as weights at their storage width (`weight_precisions()`: E8M0 and UE4M3 scales 8
/// bits, float32 scales 32), so a weight of N values under MXFP4 costs 4·N + 8·N/32 bits:
/// 4.25 per value, `bits_per_value()`.
///
/// `Self` provides the format's spec (`spec()`, copied into each backward step), the state's
/// names and widths, and three static functions over its numerics:
///
///     static tensor forward_observing(const spec_type&, const tensor& x, low_bit_state& state, bool* mask, const std::string& where);
///     static tensor forward_with(const spec_type&, const tensor& x, const low_bit_state& state, bool* mask, const std::string& where);
///     static tensor input_gradient(const spec_type&, const tensor& x, const tensor& dy, const low_bit_state& state, const bool* mask);
///
/// with `static constexpr bool uses_mask` (the gradient needs the forward's mask) and
/// `identity_gradient` (dx = dy, as every MX and NVFP4 peer but one).

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "../core/var.hpp"
#include "../numerics/low_bit_specs.hpp"
#include "quantization_grid.hpp"
#include "quantizer_layer.hpp"

namespace xq {

/// A low-bit quantizer's state: one tensor per state parameter, in the quantizer's order.
using low_bit_state = std::vector<tensor>;

/// The state tensor shape of a block format over x: x's shape with `axis` shortened to
/// `blocks` (per tensor: {1}).
XQ_DECL tensor::shape_type low_bit_state_shape(const tensor::shape_type& x_shape, int axis, std::size_t blocks);

namespace detail {
/// A grid of `element` values blocked along `axis` of a tensor of `shape`: `block` values
/// per scale (the whole axis: one scale per row), `scale` in the blocked layout's row-major
/// order (low_bit_state_shape); argument_error naming `where` for a non-finite scale.
XQ_DECL quantization_grid blocked_grid(grid_element element, int bits, const tensor::shape_type& shape, int axis,
                                       std::size_t block, std::vector<float> scale, const std::string& where);
/// The grid element of a low-bit float element type (argument_error naming `where` for a
/// scale type: ue4m3, e8m0).
XQ_DECL grid_element grid_element_of(low_bit::element_type t, const std::string& where);
}  // namespace detail

template <class Self>
class low_bit_quantizer : public quantizer_layer<Self> {
 public:
  /// The state parameters, once the quantizer has been called (and while it is on).
  std::vector<parameter_ptr> parameters() const override {
    if (!this->enabled() || !built_) return {};
    return state_;
  }
  void for_each_parameter_slot(const std::function<void(parameter_ptr&)>& f) override {
    for (auto& p : state_) f(p);
  }
  /// The summary's widths: each state parameter at its storage width.
  std::vector<std::pair<parameter_ptr, int>> weight_precisions() const {
    std::vector<std::pair<parameter_ptr, int>> out;
    if (!this->enabled() || !built_) return out;
    for (std::size_t i = 0; i < state_.size(); ++i) out.emplace_back(state_[i], self().state_bits(i));
    return out;
  }
  /// Checkpoints give the state the saved shape (it follows the input's).
  bool state_takes_saved_shape() const noexcept { return true; }

  /// Whether a call has kept a state (its parameters are listed).
  bool built() const noexcept { return built_; }
  /// The kept state, in parameter order.
  low_bit_state state() const {
    low_bit_state s;
    for (const auto& p : state_) s.push_back(p->value);
    return s;
  }
  /// The state parameters in order, listed or not.
  const std::vector<parameter_ptr>& state_parameters() const noexcept { return state_; }

  /// Bits per value of the last kept state: the element's plus the state's storage bits
  /// spread over the values (MXFP4: 4 + 8/32 = 4.25); before any call, the spec's nominal
  /// figure (`Self::nominal_bits_per_value()`).
  double bits_per_value() const {
    if (!built_ || values_ == 0) return self().nominal_bits_per_value();
    double state_bits = 0.0;
    for (std::size_t i = 0; i < state_.size(); ++i)
      state_bits += double(self().state_bits(i)) * double(state_[i]->value.size());
    return double(self().precision()) + state_bits / double(values_);
  }

  /// The grid of the inference call's output on `x` (observer on: x's own scales; off: the
  /// kept ones); nullopt while off or not fake-quantizing.
  std::optional<quantization_grid> grid_of(const tensor& x) const override {
    if (!this->enabled() || !this->fake_quant_enabled()) return std::nullopt;
    low_bit_state st;
    if (this->observer_enabled())
      Self::forward_observing(self().spec(), x, st, nullptr, this->path());
    else
      st = kept_state();
    return Self::grid(self().spec(), x.shape(), st, this->path());
  }

  /// The spec while the observer is on (each call's scales are its input's); none while
  /// off (the kept scales: `grid_of` is the whole story).
  low_bit_format dynamic_format() const override {
    if (!this->observer_enabled()) return {};
    low_bit_format f(self().spec());
    f.axis_from_layer = false;
    return f;
  }

  /// The inference output on `x` (observer on: x's own scales; off: the kept ones), no tape.
  tensor fake_quantize(const tensor& x) const {
    if (this->observer_enabled()) {
      low_bit_state st;
      return Self::forward_observing(self().spec(), x, st, nullptr, this->path());
    }
    return Self::forward_with(self().spec(), x, kept_state(), nullptr, this->path());
  }

 protected:
  low_bit_quantizer(std::string default_name, const std::vector<std::string>& state_names)
      : quantizer_layer<Self>(std::move(default_name)) {
    for (const auto& n : state_names) state_.push_back(make_parameter(n, tensor::from_shape({0}), false));
    this->name_parameters();
  }

  /// Observation without quantization (fake quant off): keeps the scales of a training batch.
  void observe(const tensor& x) override {
    if (this->fake_quant_enabled()) return;  // quantize() computes and keeps them in its own pass
    low_bit_state st;
    Self::forward_observing(self().spec(), x, st, nullptr, this->path());
    keep(st, x.size());
  }

  var quantize(const var& x) override {
    const tensor& xv = x.value();
    const bool record = needs_grad(x);
    std::shared_ptr<std::vector<unsigned char>> mask;
    if (record && Self::uses_mask) mask = std::make_shared<std::vector<unsigned char>>(xv.size());
    bool* m = mask ? reinterpret_cast<bool*>(mask->data()) : nullptr;
    low_bit_state st;
    tensor y;
    if (this->observer_enabled()) {
      y = Self::forward_observing(self().spec(), xv, st, m, this->path());
      keep(st, xv.size());
    } else {
      st = kept_state();
      y = Self::forward_with(self().spec(), xv, st, m, this->path());
    }
    if (!record) return var(std::move(y));
    if constexpr (Self::identity_gradient) {
      return this->emit(x, std::move(y), [](const tensor& dy) { return tensor(dy); });
    } else {
      return this->emit(x, std::move(y), [spec = self().spec(), x, st = std::move(st), mask](const tensor& dy) {
        return Self::input_gradient(spec, x.value(), dy,
                                    st, mask ? reinterpret_cast<const bool*>(mask->data()) : nullptr);
      });
    }
  }

 private:
  const Self& self() const noexcept { return static_cast<const Self&>(*this); }

  void keep(const low_bit_state& st, std::size_t values) {
    for (std::size_t i = 0; i < state_.size() && i < st.size(); ++i) state_[i]->value = st[i];
    values_ = values;
    built_ = true;
  }

  low_bit_state kept_state() const {
    if (!built_)
      throw argument_error(this->path(), "a kept state (a training call with the observer on, or a checkpoint)",
                           "the observer off before any state was kept");
    return state();
  }

  std::vector<parameter_ptr> state_;
  std::size_t values_ = 0;
  bool built_ = false;

 public:
  /// Marks the state as kept for `values` input values (a checkpoint or a user set it).
  void set_built(bool on, std::size_t values = 0) noexcept {
    built_ = on;
    if (values) values_ = values;
  }
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/low_bit_quantizer.ipp"
#endif
