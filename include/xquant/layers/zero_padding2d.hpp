#pragma once
/// \file zero_padding2d.hpp
/// `xq::zero_padding2d`: rows and columns of zeros around NHWC images (Keras
/// ZeroPadding2D; `padding` as Keras takes it: one size, (rows, columns), or
/// ((top, bottom), (left, right))). The gradient is dy cropped back (ops::pad2d).
///
/// \code
///   xq::zero_padding2d pad({{1, 2}, {0, 3}});  // 1 row above, 2 below, 3 columns right
///   xq::var y = pad(x);                         // (N, H + 3, W + 3, C)
/// \endcode

#include <array>
#include <cstddef>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "pad2d.hpp"

namespace xq {

/// Rows/columns added or removed on each side of an image: ((top, bottom), (left, right)).
struct image_margins {
  std::array<std::size_t, 2> rows{0, 0};
  std::array<std::size_t, 2> cols{0, 0};
  /// The same on all four sides.
  static image_margins all(std::size_t n) { return {{n, n}, {n, n}}; }
  /// `r` rows above and below, `c` columns left and right (Keras's (r, c) form).
  static image_margins symmetric(std::size_t r, std::size_t c) { return {{r, r}, {c, c}}; }
};

/// Zero padding layer; no parameters.
class zero_padding2d : public layer<zero_padding2d> {
 public:
  XQ_SPECIAL_MEMBERS(zero_padding2d)
  /// Keras's default: one of each.
  explicit zero_padding2d(image_margins m = image_margins::all(1)) : layer<zero_padding2d>("zero_padding2d"), m_(m) {}
  var call(const var& x) const { return ops::pad2d(x, m_.rows[0], m_.rows[1], m_.cols[0], m_.cols[1], 0.0f, path()); }
  std::vector<parameter_ptr> parameters() const { return {}; }
  const image_margins& padding() const noexcept { return m_; }

 private:
  image_margins m_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/zero_padding2d.ipp"
#endif
