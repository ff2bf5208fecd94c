#pragma once
/// \file readable_numbers.hpp
/// Larq's number formats for the summary: `readable_count` (3 significant figures
/// with k/M/B/T, "40.7 k") and `readable_memory` (binary prefixes, 2 decimals,
/// thousands separators, "152.05 KiB"). Written with printf's %g/%f/%E, which round
/// the exact binary value as Python's format() does, so the strings are Larq's.

#include <cstdint>
#include <string>

#include "../config.hpp"

namespace xq {

namespace detail {
/// `v` printed with printf's `format` (one double conversion).
XQ_DECL std::string format_double(const char* format, double v);
}  // namespace detail

/// Larq's `_number_as_readable_str`: 3 significant figures; below 1000 as is ("330",
/// "0"), then " k", " M", " B", " T" ("40.7 k", "1.41 M", "4 M"), from 1e15 on
/// scientific ("1.00E+16").
XQ_DECL std::string readable_count(double num);

/// Larq's `memory_as_readable_str` for a size in bits: bytes in B, KiB, MiB or GiB
/// (1024-based), 2 decimals, thousands separated by commas ("152.05 KiB", "0.00 B").
XQ_DECL std::string readable_memory(std::uint64_t bits);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/readable_numbers.ipp"
#endif
