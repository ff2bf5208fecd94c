#pragma once
/// \file children.ipp
/// split_member_names's code (core/children.hpp).

#include <string>
#include <vector>

#include "../children.hpp"

namespace xq::detail {

XQ_DECL std::vector<std::string> split_member_names(const char* list) {
  std::vector<std::string> names;
  std::string current;
  auto flush = [&] {
    while (!current.empty() && (current.back() == ' ' || current.back() == '\n')) current.pop_back();
    std::size_t b = current.find_first_not_of(" \n\t");
    current = b == std::string::npos ? std::string() : current.substr(b);
    if (!current.empty() && current.back() == '_') current.pop_back();
    names.push_back(current);
    current.clear();
  };
  for (const char* p = list; *p; ++p) {
    if (*p == ',') flush();
    else current += *p;
  }
  flush();
  return names;
}

}  // namespace xq::detail
