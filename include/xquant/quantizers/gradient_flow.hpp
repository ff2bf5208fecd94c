#pragma once
/// \file gradient_flow.hpp
/// `xq::gradient_flow`: the share of gradient entries a quantizer lets through
/// (non-zero in its input gradient), one figure per backward pass, averaged over the
/// passes since the last reset. Larq's RFC asked for it and Larq never shipped it: a
/// clipped straight-through estimator whose inputs drift outside the clip range stops
/// training silently, and this metric shows it.

#include <cstddef>

#include "../config.hpp"
#include "../core/tensor.hpp"

namespace xq {

class gradient_flow {
 public:
  /// Feeds the gradient the quantizer passes back to its input.
  void update(const tensor& input_grad);
  /// Mean share of non-zero input gradients per backward pass (0 before any).
  double result() const noexcept { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  std::size_t count() const noexcept { return count_; }
  void reset() noexcept {
    sum_ = 0.0;
    count_ = 0;
  }

 private:
  double sum_ = 0.0;
  std::size_t count_ = 0;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/gradient_flow.ipp"
#endif
