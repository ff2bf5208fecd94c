#pragma once
/// \file average_pool2d.hpp
/// `xq::average_pool2d`: the mean of each window (Keras AveragePooling2D). With
/// `same` padding a window that hangs over the border is the mean of its input
/// elements only (TF divides by the number of non-padded elements, not by the
/// window size).
///
/// \code
///   xq::average_pool2d pool(2);                                   // 2x2, stride 2, valid
///   xq::average_pool2d pool3(3, 2, xq::padding::same);            // 3x3, stride 2, same
/// \endcode

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"
#include "../kernels/padding.hpp"

namespace xq {

namespace ops {

/// Average pooling of x (N, H, W, C) with a `pool_size` window every `strides` pixels
/// on the tape; output (N, OH, OW, C). `path` names the caller in errors.
XQ_DECL var average_pool2d(const var& x, size2 pool_size, size2 strides, xq::padding p = xq::padding::valid,
                           const std::string& path = "average_pooling2d");

}  // namespace ops

/// Average pooling layer (Keras AveragePooling2D). No parameters.
class average_pool2d : public layer<average_pool2d> {
 public:
  XQ_SPECIAL_MEMBERS(average_pool2d)
  static constexpr layer_role role = layer_role::pool;
  /// A `pool_size` window (`2` or `{2, 3}`) every `strides` pixels (default: `pool_size`).
  explicit average_pool2d(size2 pool_size = 2) : average_pool2d(pool_size, pool_size) {}
  average_pool2d(size2 pool_size, xq::padding p) : average_pool2d(pool_size, pool_size, p) {}
  average_pool2d(size2 pool_size, size2 strides, xq::padding p = xq::padding::valid)
      : layer<average_pool2d>("average_pooling2d"),
        pool_size_(detail::positive_size2("average_pooling2d", "pool_size", pool_size)),
        strides_(detail::positive_size2("average_pooling2d", "strides", strides)), padding_(p) {}

  /// Window step (`2` or `{2, 1}`).
  average_pool2d& strides(size2 s) {
    strides_ = detail::positive_size2(path(), "strides", s);
    return *this;
  }
  /// `xq::padding::valid` (default) or `same`.
  average_pool2d& padding(xq::padding p) {
    padding_ = p;
    return *this;
  }

  XQ_DECL var call(const var& x);

  std::vector<parameter_ptr> parameters() const { return {}; }
  std::array<std::size_t, 2> pool_size() const noexcept { return pool_size_; }
  std::array<std::size_t, 2> strides() const noexcept { return strides_; }
  xq::padding padding() const noexcept { return padding_; }

 private:
  std::array<std::size_t, 2> pool_size_, strides_;
  xq::padding padding_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/average_pool2d.ipp"
#endif
