#pragma once
/// \file readable_numbers.ipp
/// Larq's number formats (summary/readable_numbers.hpp).

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../readable_numbers.hpp"

namespace xq {

namespace detail {
XQ_DECL std::string format_double(const char* format, double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}
}  // namespace detail

XQ_DECL std::string readable_count(double num) {
  // Rounded to 3 significant figures first, so 999500 is "1 M", not "1000 k" (Larq).
  num = std::strtod(detail::format_double("%.3g", num).c_str(), nullptr);
  if (num < 1000) {
    // Python's str(float) without trailing zeros and point: integers print whole;
    // a fraction has at most 3 significant digits, which %g prints the same way.
    if (num == std::floor(num)) return detail::format_double("%.0f", num);
    return detail::format_double("%.3g", num);
  }
  if (num >= 1e15) return detail::format_double("%.2E", num);
  int magnitude = 0;
  while (std::fabs(num) >= 1000 && magnitude < 4) {
    ++magnitude;
    num /= 1000.0;
  }
  static const char* const units[] = {"", " k", " M", " B", " T"};
  return detail::format_double("%.3g", num) + units[magnitude];
}

XQ_DECL std::string readable_memory(std::uint64_t bits) {
  static const char* const suffixes[] = {"B", "KiB", "MiB", "GiB"};
  const double bytes = double(bits) / 8;
  double rounded = bytes;
  int i = 0;
  for (; i < 4; ++i) {
    rounded = bytes / std::pow(1024.0, i);
    if (rounded < 1024) break;
  }
  if (i == 4) i = 3;  // Python's loop variable keeps the last suffix
  std::string digits = detail::format_double("%.2f", rounded);
  // Python's "," option: group the integer digits by three.
  const std::size_t point = digits.find('.');
  const std::size_t first = digits[0] == '-' ? 1 : 0;
  for (std::size_t at = point; at > first + 3; at -= 3) digits.insert(at - 3, ",");
  return digits + " " + suffixes[i];
}

}  // namespace xq
