#pragma once
/// \file lora.ipp
/// lora's code (transform/lora.hpp).

#include <algorithm>

#include "../lora.hpp"

namespace xq::detail {

XQ_DECL bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace xq::detail
