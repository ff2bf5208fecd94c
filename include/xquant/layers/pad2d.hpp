#pragma once
/// \file pad2d.hpp
/// `ops::pad2d`: constant padding of NHWC images on the tape (the gradient is dy cropped
/// back to x's shape): what `tf.pad(x, paddings, constant_values=value)` computes, used
/// for Larq's `pad_values`.

#include <cstddef>
#include <string>
#include <utility>

#include "../config.hpp"
#include "../core/shape_check.hpp"
#include "../core/tape.hpp"

namespace xq::ops {

/// x (N, H, W, C) with `top`/`bottom` rows and `left`/`right` columns of `value` around
/// each image.
XQ_DECL var pad2d(const var& x, std::size_t top, std::size_t bottom, std::size_t left, std::size_t right, float value,
                  const std::string& path = "pad2d");

}  // namespace xq::ops

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/pad2d.ipp"
#endif
