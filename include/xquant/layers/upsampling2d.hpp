#pragma once
/// \file upsampling2d.hpp
/// `xq::upsampling2d`: NHWC images enlarged by whole factors per axis (Keras
/// UpSampling2D), nearest (each pixel repeated) or bilinear (what Keras 3 computes with
/// `tf.image.resize`: half-pixel centres, source coordinates clamped at the borders),
/// and `ops::upsampling2d` on the tape.
///
/// \code
///   xq::upsampling2d up(2, 2, xq::interpolation::bilinear);  // (N, 2H, 2W, C)
/// \endcode

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

/// How upsampling fills the new pixels.
enum class interpolation { nearest, bilinear };

namespace ops {

/// x (N, H, W, C) -> (N, H * size_h, W * size_w, C). Bilinear follows TF's
/// ResizeBilinear with half-pixel centres: output pixel i reads input coordinate
/// (i + 0.5) * (H / (H * size_h)) - 0.5, between floor and ceil clamped to [0, H - 1].
XQ_DECL var upsampling2d(const var& x, std::size_t size_h, std::size_t size_w,
                         interpolation mode = interpolation::nearest, const std::string& path = "up_sampling2d");

}  // namespace ops

/// Upsampling layer; no parameters. Keras's default: 2 x 2, nearest.
class upsampling2d : public layer<upsampling2d> {
 public:
  XQ_SPECIAL_MEMBERS(upsampling2d)
  XQ_DECL explicit upsampling2d(std::size_t size_h = 2, std::size_t size_w = 2,
                                interpolation mode = interpolation::nearest);
  var call(const var& x) const { return ops::upsampling2d(x, size_h_, size_w_, mode_, path()); }
  std::vector<parameter_ptr> parameters() const { return {}; }
  std::size_t size_h() const noexcept { return size_h_; }
  std::size_t size_w() const noexcept { return size_w_; }
  interpolation mode() const noexcept { return mode_; }

 private:
  std::size_t size_h_, size_w_;
  interpolation mode_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/upsampling2d.ipp"
#endif
