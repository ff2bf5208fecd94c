#pragma once
/// \file weight_clip.hpp
/// `xq::weight_clip`: Larq's `WeightClip` constraint, w <- clip(w, -c, c) after every
/// optimizer update. With a clipped-STE binary quantizer (|w| <= 1 passes gradient)
/// it keeps latent weights where their gradient is not zero ("starved" weights that
/// drifted past 1 would never change sign again).
///
/// \code
///   conv.kernel()->set_constraint(xq::weight_clip(1.0f));      // on a parameter
///   auto q = xq::quant_conv2d(64, 3, xq::ste_sign(), xq::ste_sign())
///                .kernel_constraint(xq::weight_clip());          // on a quant layer
/// \endcode

#include <cstddef>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"

namespace xq {

/// Clips every value to [-clip_value, clip_value] (Larq `WeightClip`, default 1).
class weight_clip {
 public:
  explicit weight_clip(float clip_value = 1.0f) : clip_value_(clip_value) {
    if (!(clip_value >= 0.0f))  // also rejects NaN: tf.clip_by_value needs min <= max
      throw argument_error("xq::weight_clip", "clip_value >= 0", detail::concat(clip_value));
  }

  /// Clips `w` in place, as `tf.clip_by_value(w, -c, c)`: minimum with c first, then
  /// maximum with -c, so a NaN stays NaN.
  XQ_DECL void operator()(tensor& w) const;

  float clip_value() const noexcept { return clip_value_; }

 private:
  float clip_value_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/weight_clip.ipp"
#endif
