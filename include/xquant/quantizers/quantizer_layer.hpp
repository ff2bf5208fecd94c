#pragma once
/// \file quantizer_layer.hpp
/// `xq::quantizer_layer<Self>`: the base of every quantizer that is a layer
/// (Larq's design: "quantizers are layers"). A quantizer layer
///  - is called like any layer, `var y = q(x)`, on the tape, with its own surrogate
///    gradient; so the same object works standalone in a `sequential`, as the input
///    quantizer of a quant layer, or as its kernel quantizer;
///  - has a name and a path ("quant_conv2d/kernel_quantizer") and lists its own
///    parameters (a learned scale, running state kept as non-trainable parameters),
///    which `parameters(model)`, optimizers, clones and checkpoints therefore see;
///  - declares a `precision()` in bits (1 for binary, 2 for ternary, k for DoReFa,
///    what a no-op declares), which the model summary and `bop` read;
///  - keeps the metrics it was asked for: flip ratio and gradient flow.
///
/// A quantizer writes `var quantize(const var& x)` and builds its output with
/// `emit(x, y, surrogate)`, where `surrogate(dy)` returns the input gradient. The base
/// feeds that gradient to the gradient-flow metric before adding it to x, and feeds
/// the output to the flip-ratio metric on training calls.
///
/// Flip ratio counts training calls only (inside `xq::training_mode`, as `fit`'s
/// steps): Keras resets metrics before evaluation, so Larq's training figure has
/// only training calls in it too.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../core/layer.hpp"
#include "../core/mode.hpp"
#include "../core/tape.hpp"
#include "../core/var.hpp"
#include "flip_ratio.hpp"
#include "gradient_flow.hpp"
#include "quantizer_metrics.hpp"

namespace xq {

template <class Self>
class quantizer_layer : public layer<Self> {
 public:
  /// Runs the quantizer (what `Self::quantize` computes) and updates its metrics.
  var operator()(const var& x) {
    var y = static_cast<Self&>(*this).quantize(x);
    if (flip_ && is_training()) flip_->update(y.value());
    return y;
  }

  /// Turns on exactly these metrics (chainable); their figures start from zero.
  Self& metrics(quantizer_metric m) {
    metrics_chosen_ = true;
    flip_ = has_metric(m, quantizer_metric::flip_ratio) ? std::make_shared<flip_ratio>() : nullptr;
    flow_ = has_metric(m, quantizer_metric::gradient_flow) ? std::make_shared<gradient_flow>() : nullptr;
    return static_cast<Self&>(*this);
  }
  /// The metrics turned on.
  quantizer_metric metrics() const noexcept {
    return (flip_ ? quantizer_metric::flip_ratio : quantizer_metric::none) |
           (flow_ ? quantizer_metric::gradient_flow : quantizer_metric::none);
  }
  /// True once `metrics(...)` was called (a metrics_scope then leaves it alone).
  bool metrics_chosen() const noexcept { return metrics_chosen_; }
  /// Larq's rule for kernel quantizers: take the scope's metrics unless chosen.
  void adopt_scope_metrics() {
    if (!metrics_chosen_ && metrics_scope::current() != quantizer_metric::none) {
      metrics(metrics_scope::current());
      metrics_chosen_ = false;
    }
  }

  /// The flip-ratio metric, or nullptr when off.
  const flip_ratio* flip_ratio_metric() const noexcept { return flip_.get(); }
  /// The gradient-flow metric, or nullptr when off.
  const gradient_flow* gradient_flow_metric() const noexcept { return flow_.get(); }

  /// Calls `f(name, value)` for each metric on: "flip_ratio/<path>", "gradient_flow/<path>".
  template <class F>
  void for_each_metric(F&& f) const {
    if (flip_) f("flip_ratio/" + this->path(), flip_->result());
    if (flow_) f("gradient_flow/" + this->path(), flow_->result());
  }
  /// Starts every metric's average again (fit does it at each epoch's start).
  void reset_metrics() {
    if (flip_) flip_->reset();
    if (flow_) flow_->reset();
  }

  /// Parameters the quantizer owns (none unless a quantizer says otherwise).
  std::vector<parameter_ptr> parameters() const { return {}; }

  // A copy (a clone, a quantized twin) gets metrics of its own, not a shared average.
  quantizer_layer(const quantizer_layer& o) : layer<Self>(o), metrics_chosen_(o.metrics_chosen_) { copy_metrics(o); }
  quantizer_layer& operator=(const quantizer_layer& o) {
    if (this != &o) {
      layer<Self>::operator=(o);
      metrics_chosen_ = o.metrics_chosen_;
      copy_metrics(o);
    }
    return *this;
  }
  quantizer_layer(quantizer_layer&&) noexcept = default;
  quantizer_layer& operator=(quantizer_layer&&) noexcept = default;

 protected:
  explicit quantizer_layer(std::string default_name) : layer<Self>(std::move(default_name)) {}

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
  void copy_metrics(const quantizer_layer& o) {
    flip_ = o.flip_ ? std::make_shared<flip_ratio>(*o.flip_) : nullptr;
    flow_ = o.flow_ ? std::make_shared<gradient_flow>(*o.flow_) : nullptr;
  }

  // shared_ptr so that a backward step recorded by emit can feed the metric after
  // the layer object moved (a sequential reallocating, say).
  std::shared_ptr<flip_ratio> flip_;
  std::shared_ptr<gradient_flow> flow_;
  bool metrics_chosen_ = false;
};

namespace detail {
template <class T>
std::true_type is_quantizer_layer_test(const quantizer_layer<T>*);
std::false_type is_quantizer_layer_test(...);
}  // namespace detail

/// True for quantizer layers (types deriving from `quantizer_layer<T>`).
template <class T>
struct is_quantizer_layer : decltype(detail::is_quantizer_layer_test(std::declval<T*>())) {};
template <class T>
inline constexpr bool is_quantizer_layer_v = is_quantizer_layer<T>::value;

}  // namespace xq
