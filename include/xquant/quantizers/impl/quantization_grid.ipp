#pragma once
/// \file quantization_grid.ipp
/// quantization_grid's code (quantizers/quantization_grid.hpp).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../../kernels/channel_layout.hpp"
#include "../quantization_grid.hpp"

namespace xq {

XQ_DECL bool quantization_grid::symmetric() const noexcept {
  for (std::int32_t z : zero_point)
    if (z != 0) return false;
  return true;
}

XQ_DECL std::vector<std::int32_t> grid_integers(const quantization_grid& grid, const tensor& fq,
                                                const std::string& where) {
  const kernels::channel_layout l = grid.per_channel
                                        ? kernels::channel_layout::of(fq.shape(), grid.channel_axis, where.c_str())
                                        : kernels::channel_layout{1, 1, fq.size()};
  if (l.channels != grid.channels())
    throw argument_error(where, detail::concat(grid.channels(), " channels (the quantizer's grid)"),
                         detail::concat(l.channels, " channels, a tensor of shape ", detail::shape_string(fq.shape())));
  std::vector<std::int32_t> q(fq.size());
  const float* v = fq.data();
  std::size_t i = 0;
  for (std::size_t o = 0; o < l.outer; ++o)
    for (std::size_t c = 0; c < l.channels; ++c) {
      const float s = grid.scale[c];
      const std::int32_t z = grid.zero_point[c];
      for (std::size_t k = 0; k < l.inner; ++k, ++i) {
        const double t = s == 0.0f ? 0.0 : double(v[i]) / double(s);
        const double r = std::nearbyint(t);
        // A real on the grid divides to within a few ulps of an integer; anything else
        // was not produced by this quantizer.
        if (!(std::fabs(t - r) <= 1e-3) || r + z < grid.qmin || r + z > grid.qmax)
          throw argument_error(where,
                               detail::concat("a value on the grid ", describe(grid)),
                               detail::concat(v[i], " at index ", i, " (", t, " steps from zero)"));
        q[i] = std::int32_t(r) + z;
      }
    }
  return q;
}

XQ_DECL std::string describe(const quantization_grid& g) {
  std::ostringstream s;
  s << (g.fits_int8() ? "int8" : g.fits_uint8() ? "uint8" : "int32") << ' ';
  if (g.per_channel)
    s << "per-channel(axis " << g.channel_axis << ", " << g.channels() << " scales)";
  else if (!g.scale.empty())
    s << "per-tensor scale " << g.scale[0] << " zero point " << g.zero_point[0];
  s << " [" << g.qmin << ", " << g.qmax << "]";
  return s.str();
}

}  // namespace xq
