#pragma once
/// \file quantizer_call_observer.hpp
/// A thread-local hook told about every quantizer call while it is installed: the
/// quantizer, the tensor it was given and the one it returned. TensorBoard logging
/// (io/tensorboard.hpp) installs one on the steps it logs, to read each quantizer's grid,
/// the share of values it clipped and the histograms of what it read and wrote, without
/// any quantizer knowing about logs. With none installed a call pays one thread-local
/// load and a branch (as calibration_sink.hpp's hook does).
///
/// \code
///   struct ranges final : xq::quantizer_call_observer {
///     void called(const xq::quantizer_base& q, const xq::tensor& x, const xq::tensor& y) override { ... }
///   } seen;
///   {
///     xq::observe_quantizer_calls watch(seen);
///     model(x);
///   }                                           // uninstalled here
/// \endcode

#include "../core/tensor.hpp"

namespace xq {

class quantizer_base;

/// What a quantizer's call tells the installed observer. Only calls of quantizers that
/// are on reach it (an off quantizer is not called: it returns its input).
class quantizer_call_observer {
 public:
  /// `x`: the input; `y`: the output (`x` itself when fake quant is off).
  virtual void called(const quantizer_base& q, const tensor& x, const tensor& y) = 0;
  /// This thread's installed observer, or nullptr.
  static quantizer_call_observer*& current() noexcept {
    thread_local quantizer_call_observer* o = nullptr;
    return o;
  }

 protected:
  ~quantizer_call_observer() = default;
};

/// Installs `o` on this thread for the scope's lifetime, then restores the previous one.
class observe_quantizer_calls {
 public:
  explicit observe_quantizer_calls(quantizer_call_observer& o) : previous_(quantizer_call_observer::current()) {
    quantizer_call_observer::current() = &o;
  }
  ~observe_quantizer_calls() { quantizer_call_observer::current() = previous_; }
  observe_quantizer_calls(const observe_quantizer_calls&) = delete;
  observe_quantizer_calls& operator=(const observe_quantizer_calls&) = delete;

 private:
  quantizer_call_observer* previous_;
};

}  // namespace xq
