#pragma once
/// \file cropping2d.hpp
/// `xq::cropping2d`: rows and columns removed from the borders of NHWC images (Keras
/// Cropping2D), and `ops::crop2d` on the tape (the gradient is dy padded back with zeros).
///
/// \code
///   xq::cropping2d crop({{2, 0}, {1, 3}});  // 2 rows off the top, 1 column left, 3 right
/// \endcode

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "zero_padding2d.hpp"

namespace xq {

namespace ops {

/// x (N, H, W, C) without `top`/`bottom` rows and `left`/`right` columns; what is left
/// must be at least one pixel (Keras's rule). `path` names the caller in errors.
XQ_DECL var crop2d(const var& x, std::size_t top, std::size_t bottom, std::size_t left, std::size_t right,
                   const std::string& path = "cropping2d");

}  // namespace ops

/// Cropping layer; no parameters.
class cropping2d : public layer<cropping2d> {
 public:
  XQ_SPECIAL_MEMBERS(cropping2d)
  /// Keras's default crops nothing.
  explicit cropping2d(image_margins m = {}) : layer<cropping2d>("cropping2d"), m_(m) {}
  var call(const var& x) const { return ops::crop2d(x, m_.rows[0], m_.rows[1], m_.cols[0], m_.cols[1], path()); }
  std::vector<parameter_ptr> parameters() const { return {}; }
  const image_margins& cropping() const noexcept { return m_; }

 private:
  image_margins m_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/cropping2d.ipp"
#endif
