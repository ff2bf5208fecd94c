#pragma once
/// \file correlation.hpp
/// `xq::correlation`: the cost volume of optical-flow networks (FlowNet's correlation
/// layer with a 1x1 patch and stride 1, as PWC-Net uses it; TensorFlow Addons'
/// CorrelationCost with kernel_size 1). For every pixel of the first feature map and
/// every displacement (dy, dx) within `max_displacement`, the mean over channels of the
/// product with the second map's pixel at that offset:
///
///   y[n, i, j, k] = 1/C · Σ_c  a[n, i, j, c] · b[n, i + dy, j + dx, c],   k = (dy + d)·(2d + 1) + (dx + d)
///
/// zero where (i + dy, j + dx) falls outside the image. Output (N, H, W, (2d + 1)²),
/// channels ordered by dy then dx, as the peers order them.
///
/// \code
///   xq::correlation cost(4);                  // displacements -4..4: 81 channels
///   xq::var volume = cost(features_1, features_2);
/// \endcode

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

namespace detail {

/// The sizes of one cost volume.
struct correlation_shape {
  std::size_t n, h, w, c, d, span;  // span: 2d + 1
  std::size_t image() const noexcept { return h * w * c; }
  std::size_t volume() const noexcept { return h * w * span * span; }
  std::size_t work() const noexcept { return n * volume() * c; }
};

/// Calls f(i, j, k, i2, j2) for every pixel (i, j) of one image and displacement k whose
/// partner (i2, j2) = (i + dy, j + dx) lies inside the image.
template <class F>
void for_each_partner(const correlation_shape& s, F&& f) {
  const auto d = static_cast<std::int64_t>(s.d);
  const auto h = static_cast<std::int64_t>(s.h), w = static_cast<std::int64_t>(s.w);
  for (std::int64_t i = 0; i < h; ++i)
    for (std::int64_t j = 0; j < w; ++j)
      for (std::int64_t dy = -d; dy <= d; ++dy) {
        const std::int64_t i2 = i + dy;
        if (i2 < 0 || i2 >= h) continue;
        for (std::int64_t dx = -d; dx <= d; ++dx) {
          const std::int64_t j2 = j + dx;
          if (j2 < 0 || j2 >= w) continue;
          const auto k = static_cast<std::size_t>((dy + d) * (2 * d + 1) + (dx + d));
          f(std::size_t(i), std::size_t(j), k, std::size_t(i2), std::size_t(j2));
        }
      }
}

/// One image's channel sums Σ_c a·b in `Acc`, in channel order, for every pixel and
/// displacement whose partner is inside the image: store(index into the (h, w, span²)
/// volume, sum). The simulation's float volume and the integer engine's int32 one are this
/// loop, so they visit the same pairs in the same order.
template <class Acc, class In, class Store>
void correlation_sums(const correlation_shape& s, const In* a, const In* b, Store&& store) {
  const std::size_t k_all = s.span * s.span;
  for_each_partner(s, [&](std::size_t i, std::size_t j, std::size_t k, std::size_t i2, std::size_t j2) {
    const In* ar = a + (i * s.w + j) * s.c;
    const In* br = b + (i2 * s.w + j2) * s.c;
    Acc sum = 0;
    for (std::size_t c = 0; c < s.c; ++c) sum += Acc(ar[c]) * Acc(br[c]);
    store((i * s.w + j) * k_all + k, sum);
  });
}

}  // namespace detail

namespace ops {

/// The cost volume of a and b, both (N, H, W, C); gradients to both. `path` names the
/// caller in errors.
XQ_DECL var correlation(const var& a, const var& b, std::size_t max_displacement,
                        const std::string& path = "correlation");

}  // namespace ops

/// The correlation as a layer; no parameters. Called with the two feature maps, or with
/// the list {a, b} (so that its twin, each_input_quantized<correlation>, can quantize them
/// by index, as merges are quantized).
class correlation : public layer<correlation> {
 public:
  XQ_SPECIAL_MEMBERS(correlation)
  static constexpr layer_role role = layer_role::other;
  /// No weights, but C multiply-adds per displacement and pixel the summary counts.
  static constexpr bool counts_macs = true;
  XQ_DECL explicit correlation(std::size_t max_displacement = 4);

  XQ_DECL var call(const std::vector<var>& inputs) const;
  var call(const var& a, const var& b) const { return call(std::vector<var>{a, b}); }

  std::vector<parameter_ptr> parameters() const { return {}; }
  std::size_t max_displacement() const noexcept { return max_displacement_; }
  /// (2d + 1)²: the output's channels.
  std::size_t displacements() const noexcept { return (2 * max_displacement_ + 1) * (2 * max_displacement_ + 1); }

 private:
  std::size_t max_displacement_;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/correlation.ipp"
#endif
