#pragma once
/// \file weight_clip.ipp
/// weight_clip's code (layers/weight_clip.hpp).

#include "../weight_clip.hpp"

namespace xq {

XQ_DECL void weight_clip::operator()(tensor& w) const {
  const float hi = clip_value_, lo = -clip_value_;
  float* p = w.data();
  for (std::size_t i = 0, n = w.size(); i < n; ++i) {
    const float t = hi < p[i] ? hi : p[i];
    p[i] = t < lo ? lo : t;
  }
}

}  // namespace xq
