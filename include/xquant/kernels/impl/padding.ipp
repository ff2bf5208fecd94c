#pragma once
/// \file padding.ipp
/// The code of kernels/padding.hpp: compiled by every translation unit that includes it in
/// header-only mode, once in <xquant/src.hpp> in separate mode (config.hpp).

#include "../padding.hpp"

namespace xq::detail {

XQ_DECL std::array<std::size_t, 2> positive_size2(const std::string& where, const char* what, size2 s) {
  if (s.hw[0] == 0 || s.hw[1] == 0)
    throw argument_error(where, concat(what, " of at least 1"), concat("(", s.hw[0], ", ", s.hw[1], ")"));
  return s.hw;
}

}  // namespace xq::detail
