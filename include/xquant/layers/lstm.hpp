#pragma once
/// \file lstm.hpp
/// `xq::lstm`: Keras LSTM (Hochreiter & Schmidhuber 1997) with Keras's gates and
/// defaults: tanh activation, sigmoid recurrent activation, gates i, f, c, o side by side,
/// Glorot-uniform kernel, orthogonal recurrent kernel, zero bias with the forget gate's
/// set to 1 (unit_forget_bias), zero initial state. Per step, as Keras's LSTMCell:
///
///   z = x_t · kernel + h · recurrent_kernel + bias
///   i, f, o = sigmoid(z_i, z_f, z_o);  c = f · c + i · tanh(z_c);  h = o · tanh(c)
///
/// \code
///   xq::lstm<> encoder(32);                          // (B, T, F) -> (B, 32): the last h
///   auto tagger = xq::lstm<>(16).return_sequences(true);   // (B, T, F) -> (B, T, 16)
/// \endcode
///
/// A composite (recurrent.hpp says why): `projection` (a dense layer holding Keras's
/// `kernel`) and `recurrence` (an `xq::lstm_recurrence` holding `recurrent_kernel` and
/// `bias`).

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/children.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "dense.hpp"
#include "recurrent.hpp"

namespace xq {

namespace ops {

/// The LSTM loop over projected inputs xw (B, T, 4 units) = x · kernel, with the recurrent
/// kernel (units, 4 units) and `bias` (4 units, or undefined); returns the last h
/// (B, units), or every step's (B, T, units). Gradients to all three.
XQ_DECL var lstm_recurrence(const var& xw, const var& recurrent_kernel, const var& bias, const recurrence_settings& run,
                            const std::string& path = "lstm");

}  // namespace ops

/// The LSTM's loop over time as a layer: it holds the recurrent kernel and the bias, made
/// at the first call. Its twin, weight_quantized<lstm_recurrence>, fake-quantizes the
/// recurrent kernel.
class lstm_recurrence : public layer<lstm_recurrence> {
 public:
  XQ_SPECIAL_MEMBERS(lstm_recurrence)
  static constexpr layer_role role = layer_role::linear;
  XQ_DECL explicit lstm_recurrence(std::size_t units = 1, bool use_bias = true, recurrence_settings run = {});

  XQ_DECL var call(const var& xw);
  /// Makes the recurrent kernel (orthogonal) and the bias (unit_forget_bias) unless built.
  XQ_DECL void ensure_built(const var& xw);
  XQ_DECL var call_with(const var& xw, const var& kernel, const var& bias) const;

  XQ_DECL std::vector<parameter_ptr> parameters() const;
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(kernel_);
    f(bias_);
  }
  /// The recurrent kernel (units, 4 units): the weighted-layer contract's kernel.
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  const parameter_ptr& bias() const noexcept { return bias_; }
  std::size_t units() const noexcept { return units_; }
  bool use_bias() const noexcept { return use_bias_; }
  const recurrence_settings& settings() const noexcept { return run_; }

 private:
  std::size_t units_;
  bool use_bias_;
  recurrence_settings run_;
  parameter_ptr kernel_, bias_;
};

/// Keras LSTM (see the file comment). A class template over its children's types (the
/// library's rule for composites); `xq::lstm<>` names the float type.
template <class Projection = xq::dense, class Recurrence = lstm_recurrence>
class lstm {
 public:
  Projection projection;
  Recurrence recurrence;
  XQ_CHILDREN(projection, recurrence)

  lstm() = default;
  explicit lstm(std::size_t units) : projection(xq::dense(4 * units, false)), recurrence(lstm_recurrence(units)) {}

  /// Every step's output (B, T, units) rather than the last; before the first call.
  lstm& return_sequences(bool on) { return rebuilt(on, settings().go_backwards, recurrence.use_bias()); }
  /// Runs from the last step to the first; before the first call.
  lstm& go_backwards(bool on) { return rebuilt(settings().return_sequences, on, recurrence.use_bias()); }
  /// The bias (default true); before the first call.
  lstm& use_bias(bool on) { return rebuilt(settings().return_sequences, settings().go_backwards, on); }

  /// x (B, T, F) -> (B, units), or (B, T, units) with return_sequences.
  var operator()(const var& x) { return recurrence(projection(x)); }

 private:
  const recurrence_settings& settings() const { return recurrence.settings(); }
  lstm& rebuilt(bool sequences, bool backwards, bool bias) {
    recurrence = lstm_recurrence(recurrence.units(), bias, recurrence_settings{sequences, backwards});
    return *this;
  }
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/lstm.ipp"
#endif
