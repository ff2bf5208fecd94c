#pragma once
/// \file max_pool2d.hpp
/// `xq::max_pool2d`: the maximum of each window (Keras MaxPooling2D). Padding never
/// wins: with `same` padding a border window is the max of its input elements only.
/// Backward routes each output's gradient to the input element that was the max;
/// on ties, to the first in (row, column) order, as TF's CPU MaxPoolGrad does.
/// The positions are found at forward and kept for backward.
///
/// \code
///   xq::max_pool2d pool(2);                                // 2x2, stride 2, valid
///   xq::max_pool2d pool3(3, 2, xq::padding::same);         // 3x3, stride 2, same
/// \endcode

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/tape.hpp"
#include "../kernels/padding.hpp"

namespace xq {

namespace ops {

/// Max pooling of x (N, H, W, C) with a `pool_size` window every `strides` pixels on
/// the tape; output (N, OH, OW, C). `path` names the caller in errors.
XQ_DECL var max_pool2d(const var& x, size2 pool_size, size2 strides, xq::padding p = xq::padding::valid,
                       const std::string& path = "max_pooling2d");

}  // namespace ops

/// Max pooling layer (Keras MaxPooling2D). No parameters.
class max_pool2d : public layer<max_pool2d> {
 public:
  XQ_SPECIAL_MEMBERS(max_pool2d)
  static constexpr layer_role role = layer_role::pool;
  /// A `pool_size` window (`2` or `{2, 3}`) every `strides` pixels (default: `pool_size`).
  explicit max_pool2d(size2 pool_size = 2) : max_pool2d(pool_size, pool_size) {}
  max_pool2d(size2 pool_size, xq::padding p) : max_pool2d(pool_size, pool_size, p) {}
  XQ_DECL max_pool2d(size2 pool_size, size2 strides, xq::padding p = xq::padding::valid);

  /// Window step (`2` or `{2, 1}`).
  max_pool2d& strides(size2 s) {
    strides_ = detail::positive_size2(path(), "strides", s);
    return *this;
  }
  /// `xq::padding::valid` (default) or `same`.
  max_pool2d& padding(xq::padding p) {
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
#include "impl/max_pool2d.ipp"
#endif
