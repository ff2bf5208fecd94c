#pragma once
/// \file quantizer_layer.hpp
/// The one quantizer concept. Every quantizer — NVIDIA's QDQ, tfmot's and PyTorch's fake
/// quantizers (fake_quantizer.hpp: a range tracker composed with a peer's numerics), LSQ,
/// Larq's binary and ternary quantizers, a user's — derives from `xq::quantizer_base`,
/// usually through `xq::quantizer_layer<Self>`. A quantizer is a layer (Larq's design):
///  - it is called like any layer, `var y = q(x)`, on the tape, with its own surrogate
///    gradient; the same object works standalone in a `sequential`, as the input
///    quantizer of a quant layer, or as a wrapper's kernel quantizer;
///  - it has a name and a path ("block/conv/kernel_quantizer"), and ALL its state lives
///    in parameters (a learned scale: trainable; a tracked range: not), which it lists in
///    `parameters()`. So `parameters(model)`, optimizers, `clone_model`, checkpoints and
///    the summary see quantizer state the way they see any weight, with no second path;
///  - it declares a `precision()` in bits, which the summary, `bop` and exporters read;
///  - it keeps the metrics it was asked for: flip ratio and gradient flow.
///
/// Three switches, as PyTorch's `FakeQuantizeBase` has (observer and fake quant apart):
///  - `enabled()`: the quantizer is part of the model's quantization. `quantize_model`
///    places quantizers by turning this on or off; an off quantizer returns its input var
///    itself, observes nothing and lists no parameters;
///  - `observer_enabled()`: training calls update the state (a range tracker, LSQ's
///    first-batch initialisation); off freezes it;
///  - `fake_quant_enabled()`: the output is quantized; off passes the input through
///    (while the observer may still watch: calibration).
///
/// A quantizer writes `var quantize(const var& x)` (the forward with its current state)
/// and builds its output with `emit(x, y, surrogate)`, where `surrogate(dy)` returns the
/// input gradient; and, if it follows the data, `void observe(const tensor& x)`. The
/// base feeds the gradient to the gradient-flow metric before adding it to x, and the
/// output to the flip-ratio metric on training calls.
///
/// Flip ratio counts training calls only (inside `xq::training_mode`, as `fit`'s
/// steps): Keras resets metrics before evaluation, so Larq's training figure has
/// only training calls in it too.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../core/layer.hpp"
#include "../core/layer_traits.hpp"
#include "../core/mode.hpp"
#include "../core/tape.hpp"
#include "../core/type_name.hpp"
#include "../core/var.hpp"
#include "flip_ratio.hpp"
#include "gradient_flow.hpp"
#include "low_bit_format.hpp"
#include "quantization_grid.hpp"
#include "quantizer_metrics.hpp"

namespace xq {

/// The base of every quantizer (see the file comment). Abstract: `precision()` and
/// `quantize()` are the derived quantizer's.
class quantizer_base {
 public:
  virtual ~quantizer_base() = default;

  /// Runs the quantizer: observes a training batch (when the observer is on), then
  /// quantizes with the current state (when fake quant is on), and updates the metrics.
  /// Off (`enabled()` false): returns `x` itself, records nothing.
  var operator()(const var& x);

  /// The quantizer's own name ("ste_sign" until renamed).
  const std::string& name() const noexcept { return name_; }
  /// The full path in its model ("block/conv/kernel_quantizer").
  const std::string& path() const noexcept { return path_; }
  /// Sets the path and renames the quantizer's parameters after it.
  void set_path(std::string p);
  /// The quantizer's type name ("ste_sign", "fake_quantizer"), for summaries and checkpoints.
  std::string kind() const { return type_name_(); }

  /// Bits per value of the quantizer's output (1 binary, 2 ternary, k for k-bit grids).
  virtual int precision() const = 0;
  /// One line for summaries, checkpoints and errors: "ste_sign(clip_value 1)". The kind
  /// unless a quantizer says more.
  XQ_DECL virtual std::string describe() const;

  /// The grid of the inference call's output on `x` (quantization_grid.hpp): what
  /// deployment writes and computes with, and how the call rounds (its rounding rule:
  /// quantize_on_grid gives exactly the call's integers). `x` is the tensor that call would
  /// see (a weight: the weight itself), or one of its shape where the grid does not depend
  /// on the values. nullopt where the output has no grid: the quantizer is off, its fake
  /// quant is off, it has nothing to round with yet (an uninitialised LSQ scale), or it
  /// passes values through (NoOp). A quantizer with a grid overrides it; deployment asks
  /// this, never the quantizer's type.
  XQ_DECL virtual std::optional<quantization_grid> grid_of(const tensor& x) const;
  /// The low-bit format that computes the scales of each tensor the quantizer sees
  /// (low_bit_format.hpp): a fake quantizer's `config().format`, a low-bit quantizer's spec
  /// while its observer is on. None (the default) where the grid is the quantizer's kept
  /// state: `grid_of` then says everything a back-end needs; with a format, `grid_of(x)` is
  /// x's grid and a back-end computes each tensor's with the format.
  XQ_DECL virtual low_bit_format dynamic_format() const;
  /// Whether the quantizer's state comes from data: a training batch observed, a
  /// calibration, a range set or restored. A quantizer with a range to learn overrides it
  /// (a fake quantizer: false while it holds its placeholder range; LSQ: before its scale
  /// is initialised); deployment refuses to deploy such a placeholder unless told to.
  XQ_DECL virtual bool has_seen_data() const;

  /// The quantizer's state and learned parameters (a fake quantizer that is off, or not
  /// called yet, has none: its state is not part of the model then).
  XQ_DECL virtual std::vector<parameter_ptr> parameters() const;
  /// Calls `f(parameter_ptr&)` on every parameter slot, null ones and those of an off
  /// quantizer included (core/clone.hpp's protocol: a clone rebinds them all).
  XQ_DECL virtual void for_each_parameter_slot(const std::function<void(parameter_ptr&)>& f);

  // ---- switches -------------------------------------------------------------------------

  /// Whether the quantizer is part of the model's quantization (see the file comment).
  bool enabled() const noexcept { return enabled_; }
  /// Turns the quantizer on or off (both the observer and fake quant follow it).
  void enable(bool on = true) noexcept { enabled_ = on; }
  /// Whether training calls update the quantizer's state.
  bool observer_enabled() const noexcept { return observer_enabled_; }
  void enable_observer(bool on = true) noexcept { observer_enabled_ = on; }
  /// Whether the output is quantized (off: the input passes through).
  bool fake_quant_enabled() const noexcept { return fake_quant_enabled_; }
  void enable_fake_quant(bool on = true) noexcept { fake_quant_enabled_ = on; }

  // ---- metrics ---------------------------------------------------------------------------

  /// Turns on exactly these metrics; their figures start from zero.
  void set_metrics(quantizer_metric m);
  /// The metrics turned on.
  quantizer_metric metrics() const noexcept {
    return (flip_ ? quantizer_metric::flip_ratio : quantizer_metric::none) |
           (flow_ ? quantizer_metric::gradient_flow : quantizer_metric::none);
  }
  /// True once metrics were chosen for this quantizer (a metrics_scope then leaves it alone).
  bool metrics_chosen() const noexcept { return metrics_chosen_; }
  /// Larq's rule for kernel quantizers: take the scope's metrics unless chosen.
  void adopt_scope_metrics();
  /// The flip-ratio metric, or nullptr when off.
  const flip_ratio* flip_ratio_metric() const noexcept { return flip_.get(); }
  /// The gradient-flow metric, or nullptr when off.
  const gradient_flow* gradient_flow_metric() const noexcept { return flow_.get(); }
  /// Calls `f(name, value)` for each metric on: "flip_ratio/<path>", "gradient_flow/<path>".
  template <class F>
  void for_each_metric(F&& f) const {
    if (flip_) f("flip_ratio/" + path_, flip_->result());
    if (flow_) f("gradient_flow/" + path_, flow_->result());
  }
  /// Starts every metric's average again (fit does it at each epoch's start).
  void reset_metrics();

 protected:
  /// `default_name`: the name until renamed; `type_name`: what `kind()` returns.
  quantizer_base(std::string default_name, std::string (*type_name)())
      : name_(default_name), path_(std::move(default_name)), type_name_(type_name) {}

  // A copy (a clone, a quantized twin) gets metrics of its own, not a shared average.
  quantizer_base(const quantizer_base& o);
  quantizer_base& operator=(const quantizer_base& o);
  quantizer_base(quantizer_base&&) noexcept = default;
  quantizer_base& operator=(quantizer_base&&) noexcept = default;

  /// Renames the parameters after the path (a quantizer calls it when it creates them).
  void name_parameters() { set_path(path_); }
  void rename(std::string n);
  /// For a preset deriving from another quantizer: what `kind()` returns.
  void set_kind(std::string (*type_name)()) noexcept { type_name_ = type_name; }

  /// Updates the state from a training batch (only when the observer is on). Must leave
  /// the state as it was when it throws.
  XQ_DECL virtual void observe(const tensor& x);
  /// The forward with the current state, on the tape (build the output with `emit`).
  virtual var quantize(const var& x) = 0;

  /// The output `y` of `quantize(x)` on the tape: when a gradient reaches it,
  /// `surrogate(dy)` gives the input gradient (a tensor of x's shape), which goes to
  /// the gradient-flow metric and then into x. `surrogate` may also add gradients to
  /// the quantizer's own parameters.
  template <class Surrogate>
  var emit(const var& x, tensor y, Surrogate&& surrogate) {
    return emit_with(x, std::move(y), needs_grad(x), std::forward<Surrogate>(surrogate));
  }
  /// `emit` for a quantizer with parameters of its own: `record` says whether any
  /// input (x or a parameter) wants a gradient.
  template <class Surrogate>
  var emit_with(const var& x, tensor y, bool record, Surrogate&& surrogate) {
    return make_result(std::move(y), record,
                       [x, flow = flow_, s = std::forward<Surrogate>(surrogate)](const tensor& dy) mutable {
                         tensor dx = s(dy);
                         if (flow) flow->update(dx);
                         add_grad(x, std::move(dx));
                       });
  }

 private:
  var run(const var& x);
  void copy_metrics(const quantizer_base& o);

  std::string name_, path_;
  std::string (*type_name_)();
  bool enabled_ = true, observer_enabled_ = true, fake_quant_enabled_ = true;
  // shared_ptr so that a backward step recorded by emit can feed the metric after
  // the quantizer object moved (a sequential reallocating, say).
  std::shared_ptr<flip_ratio> flip_;
  std::shared_ptr<gradient_flow> flow_;
  bool metrics_chosen_ = false;
};

namespace detail {
template <class T>
using slot_template_op =
    decltype(std::declval<T&>().template for_each_parameter_slot<parameter_slot_probe>(parameter_slot_probe{}));
}  // namespace detail

/// CRTP helper for a quantizer type `Self`: chainable `name(...)` and `metrics(...)`,
/// and `Self`'s type name as its kind. A quantizer with parameters overrides
/// `parameters()` and `for_each_parameter_slot` — the latter may also be written as a
/// template over the visitor, as layers write it.
template <class Self>
class quantizer_layer : public quantizer_base {
 public:
  void for_each_parameter_slot(const std::function<void(parameter_ptr&)>& f) override {
    if constexpr (detail::detect<Self, detail::slot_template_op>::value)
      static_cast<Self&>(*this).template for_each_parameter_slot<const std::function<void(parameter_ptr&)>&>(f);
    else
      (void)f;
  }

  using quantizer_base::metrics;
  using quantizer_base::name;
  /// Renames the quantizer (chainable).
  Self& name(std::string n) {
    rename(std::move(n));
    return static_cast<Self&>(*this);
  }
  /// Turns on exactly these metrics (chainable); their figures start from zero.
  Self& metrics(quantizer_metric m) {
    set_metrics(m);
    return static_cast<Self&>(*this);
  }
  /// The type name that summaries and checkpoints use ("ste_sign").
  static std::string layer_type() { return detail::type_short_name<Self>(); }

 protected:
  explicit quantizer_layer(std::string default_name) : quantizer_base(std::move(default_name), &layer_type) {}
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantizer_layer.ipp"
#endif
