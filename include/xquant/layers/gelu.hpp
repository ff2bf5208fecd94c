#pragma once
/// \file gelu.hpp
/// The Gaussian error linear unit (Keras `gelu`, TF's `tf.nn.gelu`), in both forms:
///
///   exact:        0.5 x (1 + erf(x / sqrt 2))                         (Keras's default)
///   approximate:  0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))   (BERT's, GPT-2's)
///
/// as a layer (`xq::gelu`) and a function (`xq::ops::gelu`). Gradients are the
/// derivatives of those formulas, computed from the input.

#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace ops {

/// GELU of every element; `approximate` picks the tanh form.
XQ_DECL var gelu(const var& x, bool approximate = false);

}  // namespace ops

/// GELU layer; no parameters.
class gelu : public layer<gelu> {
 public:
  XQ_SPECIAL_MEMBERS(gelu)
  static constexpr layer_role role = layer_role::activation;
  explicit gelu(bool approximate = false) : layer<gelu>("gelu"), approximate_(approximate) {}
  var call(const var& x) const { return ops::gelu(x, approximate_); }
  std::vector<parameter_ptr> parameters() const { return {}; }
  bool approximate() const noexcept { return approximate_; }

 private:
  bool approximate_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/gelu.ipp"
#endif
