#pragma once
/// \file window_geometry.ipp
/// window_geometry's code (deploy/engine/window_geometry.hpp).

#include <cstddef>
#include <sstream>
#include <string>

#include "../../../core/error.hpp"
#include "../window_geometry.hpp"

namespace xq::deploy {

XQ_DECL std::size_t window_geometry::output_extent(std::size_t in, int a) const noexcept {
  const std::size_t padded = in + pads[std::size_t(a)] + pads[std::size_t(a) + 2];
  const std::size_t extent = (window[std::size_t(a)] - 1) * dilation[std::size_t(a)] + 1;
  return padded >= extent && strides[std::size_t(a)] ? (padded - extent) / strides[std::size_t(a)] + 1 : 0;
}

XQ_DECL std::string describe(const window_geometry& g) {
  std::ostringstream s;
  s << g.window[0] << "x" << g.window[1] << " stride " << g.strides[0] << "x" << g.strides[1];
  if (g.dilation[0] != 1 || g.dilation[1] != 1) s << " dilation " << g.dilation[0] << "x" << g.dilation[1];
  if (g.pads[0] || g.pads[1] || g.pads[2] || g.pads[3])
    s << " pads " << g.pads[0] << "," << g.pads[1] << "," << g.pads[2] << "," << g.pads[3];
  return s.str();
}

XQ_DECL void check_window(const window_geometry& g, const std::string& where) {
  for (std::size_t a = 0; a < 2; ++a)
    if (!g.window[a] || !g.strides[a] || !g.dilation[a] || g.window[a] > max_window_extent ||
        g.strides[a] > max_window_extent || g.dilation[a] > max_window_extent || g.pads[a] > max_window_extent ||
        g.pads[a + 2] > max_window_extent)
      throw argument_error(where,
                           xq::detail::concat("windows, strides and dilations from 1 to ", max_window_extent,
                                              " and pads up to ", max_window_extent),
                           describe(g));
}

}  // namespace xq::deploy
