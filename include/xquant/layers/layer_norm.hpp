#pragma once
/// \file layer_norm.hpp
/// `xq::layer_norm`: layer normalization (Keras LayerNormalization, Ba et al. 2016):
/// each sample normalized over `axes` (default the last) to zero mean and unit
/// variance, then scaled by gamma and shifted by beta, both shaped as those axes:
///
///   y = (x - mean) / sqrt(variance + epsilon) * gamma + beta
///
/// with the biased variance over the normalized elements (Keras: epsilon 1e-3). The same
/// in training and inference: no moving statistics.
///
/// \code
///   xq::layer_norm norm;                  // over the last axis, as in a transformer
///   xq::layer_norm per_image({1, 2, 3});  // over H, W and C of NHWC images
/// \endcode

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace ops {

/// Layer normalization of x over `axes` (negative: from the end; any order, no repeats).
/// gamma and beta are undefined vars for no scale / no offset, else shaped as x's
/// normalized axes in increasing order. `path` names the caller in errors.
XQ_DECL var layer_norm(const var& x, const var& gamma, const var& beta, const std::vector<int>& axes,
                       float epsilon = 1e-3f, const std::string& path = "layer_normalization");

}  // namespace ops

/// Layer normalization with learned scale (`scale`) and offset (`center`).
class layer_norm : public layer<layer_norm> {
 public:
  XQ_SPECIAL_MEMBERS(layer_norm)
  XQ_DECL explicit layer_norm(std::vector<int> axes = {-1}, bool center = true, bool scale = true);

  XQ_DECL var call(const var& x);
  /// Creates gamma (ones) and beta (zeros) for inputs of `input_shape` (the first call does it).
  XQ_DECL void build(const tensor::shape_type& input_shape);

  /// Added to the variance before the square root (Keras: 1e-3; PyTorch: 1e-5). Chainable.
  XQ_DECL layer_norm& epsilon(float e);
  float epsilon() const noexcept { return epsilon_; }
  const std::vector<int>& axes() const noexcept { return axes_; }
  bool center() const noexcept { return center_; }
  bool scale() const noexcept { return scale_; }

  std::vector<parameter_ptr> parameters() const { return {gamma_, beta_}; }
  template <class F>
  void for_each_parameter_slot(F&& f) {
    f(gamma_);
    f(beta_);
  }
  const parameter_ptr& gamma() const noexcept { return gamma_; }
  const parameter_ptr& beta() const noexcept { return beta_; }

 private:
  std::vector<int> axes_;
  bool center_, scale_;
  float epsilon_ = 1e-3f;
  parameter_ptr gamma_, beta_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/layer_norm.ipp"
#endif
