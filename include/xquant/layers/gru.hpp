#pragma once
/// \file gru.hpp
/// `xq::gru`: Keras GRU (Cho et al. 2014) with Keras's gates and defaults: tanh
/// activation, sigmoid recurrent activation, gates z, r, h side by side, Glorot-uniform
/// kernel, orthogonal recurrent kernel, zero biases, zero initial state, and
/// reset_after = true (the reset gate applied after the recurrent product, with its own
/// recurrent bias: cuDNN's form, Keras's default since TF 2). Per step, as Keras's GRUCell:
///
///   x = x_t · kernel + input_bias;   u = h · recurrent_kernel + recurrent_bias
///   z, r = sigmoid(x_z + u_z, x_r + u_r);  hh = tanh(x_h + r · u_h);  h = z · h + (1 - z) · hh
///
/// With reset_after(false): one bias (the input's), u_h = (r · h) · recurrent_kernel_h.
///
/// \code
///   xq::gru<> encoder(32);                                // (B, T, F) -> (B, 32)
/// \endcode
///
/// A composite (recurrent.hpp says why): `projection` (a dense layer holding Keras's
/// `kernel` and bias[0]) and `recurrence` (an `xq::gru_recurrence` holding
/// `recurrent_kernel` and bias[1]).

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

/// The GRU loop over projected inputs xw (B, T, 3 units) = x · kernel + input bias, with
/// the recurrent kernel (units, 3 units) and the recurrent bias (3 units, or undefined;
/// only with reset_after). Gradients to all three.
XQ_DECL var gru_recurrence(const var& xw, const var& recurrent_kernel, const var& recurrent_bias, bool reset_after,
                           const recurrence_settings& run, const std::string& path = "gru");

}  // namespace ops

/// The GRU's loop over time as a layer: it holds the recurrent kernel (and, with
/// reset_after and a bias, the recurrent bias), made at the first call. Its twin,
/// weight_quantized<gru_recurrence>, fake-quantizes the recurrent kernel.
class gru_recurrence : public layer<gru_recurrence> {
 public:
  XQ_SPECIAL_MEMBERS(gru_recurrence)
  static constexpr layer_role role = layer_role::linear;
  XQ_DECL explicit gru_recurrence(std::size_t units = 1, bool use_bias = true, bool reset_after = true,
                                  recurrence_settings run = {});

  XQ_DECL var call(const var& xw);
  XQ_DECL void ensure_built(const var& xw);
  XQ_DECL var call_with(const var& xw, const var& kernel, const var& bias) const;

  XQ_DECL std::vector<parameter_ptr> parameters() const;
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(kernel_);
    f(bias_);
  }
  /// The recurrent kernel (units, 3 units): the weighted-layer contract's kernel.
  const parameter_ptr& kernel() const noexcept { return kernel_; }
  /// The recurrent bias (Keras's bias[1]); null without reset_after or without a bias.
  const parameter_ptr& bias() const noexcept { return bias_; }
  std::size_t units() const noexcept { return units_; }
  bool use_bias() const noexcept { return use_bias_; }
  bool reset_after() const noexcept { return reset_after_; }
  const recurrence_settings& settings() const noexcept { return run_; }

 private:
  std::size_t units_;
  bool use_bias_, reset_after_;
  recurrence_settings run_;
  parameter_ptr kernel_, bias_;
};

/// Keras GRU (see the file comment). A class template over its children's types;
/// `xq::gru<>` names the float type.
template <class Projection = xq::dense, class Recurrence = gru_recurrence>
class gru {
 public:
  Projection projection;
  Recurrence recurrence;
  XQ_CHILDREN(projection, recurrence)

  gru() = default;
  explicit gru(std::size_t units) : projection(xq::dense(3 * units, true)), recurrence(gru_recurrence(units)) {}

  /// Every step's output (B, T, units) rather than the last; before the first call.
  gru& return_sequences(bool on) { return rebuilt(on, settings().go_backwards, bias(), after()); }
  /// Runs from the last step to the first; before the first call.
  gru& go_backwards(bool on) { return rebuilt(settings().return_sequences, on, bias(), after()); }
  /// The biases (default true); before the first call.
  gru& use_bias(bool on) { return rebuilt(settings().return_sequences, settings().go_backwards, on, after()); }
  /// Keras's reset_after (default true); before the first call.
  gru& reset_after(bool on) { return rebuilt(settings().return_sequences, settings().go_backwards, bias(), on); }

  /// x (B, T, F) -> (B, units), or (B, T, units) with return_sequences.
  var operator()(const var& x) { return recurrence(projection(x)); }

 private:
  // The settings live in the recurrence child (a twin is its children, assigned).
  const recurrence_settings& settings() const { return recurrence.settings(); }
  bool bias() const { return recurrence.use_bias(); }
  bool after() const { return recurrence.reset_after(); }
  gru& rebuilt(bool sequences, bool backwards, bool use_bias, bool reset_after) {
    projection = xq::dense(3 * recurrence.units(), use_bias);
    recurrence = gru_recurrence(recurrence.units(), use_bias, reset_after, recurrence_settings{sequences, backwards});
    return *this;
  }
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/gru.ipp"
#endif
