#pragma once
/// \file global_average_pool2d.hpp
/// `xq::global_average_pool2d`: the mean over H and W of each channel (Keras
/// GlobalAveragePooling2D): (N, H, W, C) -> (N, C), or (N, 1, 1, C) with `keepdims`.

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace ops {

/// Mean over the spatial axes of x (N, H, W, C) on the tape; output (N, C), or
/// (N, 1, 1, C) when `keepdims`. `path` names the caller in errors.
XQ_DECL var global_average_pool2d(const var& x, bool keepdims = false,
                                  const std::string& path = "global_average_pooling2d");

}  // namespace ops

/// Global average pooling layer (Keras GlobalAveragePooling2D). No parameters.
class global_average_pool2d : public layer<global_average_pool2d> {
 public:
  XQ_SPECIAL_MEMBERS(global_average_pool2d)
  static constexpr layer_role role = layer_role::pool;
  /// `keepdims`: output (N, 1, 1, C) instead of (N, C).
  explicit global_average_pool2d(bool keepdims = false)
      : layer<global_average_pool2d>("global_average_pooling2d"), keepdims_(keepdims) {}

  XQ_DECL var call(const var& x);

  std::vector<parameter_ptr> parameters() const { return {}; }
  bool keepdims() const noexcept { return keepdims_; }

 private:
  bool keepdims_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/global_average_pool2d.ipp"
#endif
