#pragma once
/// \file type_name.ipp
/// core/type_name.hpp's compiled code: compiled by every translation unit in header-only
/// mode, once in <xquant/src.hpp> in separate mode.

#include <cstdlib>
#include <string>

#if defined(__GNUG__)
#include <cxxabi.h>
#endif

#include "../type_name.hpp"

namespace xq::detail {

XQ_DECL std::string short_name_of_mangled(const char* mangled) {
  std::string name = mangled;
#if defined(__GNUG__)
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status == 0 && demangled) name = demangled;
  std::free(demangled);
#endif
  if (auto angle = name.find('<'); angle != std::string::npos) name.erase(angle);
  if (auto colon = name.rfind("::"); colon != std::string::npos) name.erase(0, colon + 2);
  return name.empty() ? std::string("layer") : name;
}

}  // namespace xq::detail
