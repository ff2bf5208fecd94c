#pragma once
/// \file parameter.ipp
/// parameter's code (core/parameter.hpp).

#include <string>

#include "../parameter.hpp"

namespace xq {

XQ_DECL void parameter::set_owner_path(const std::string& layer_path) {
  name_ = layer_path.empty() ? short_name_ : layer_path + "/" + short_name_;
}

}  // namespace xq
