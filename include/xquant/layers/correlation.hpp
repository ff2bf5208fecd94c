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
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"

namespace xq {

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
