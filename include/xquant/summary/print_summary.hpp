#pragma once
/// \file print_summary.hpp
/// `xq::print_summary(summary, os)` / `xq::to_string(summary)`: Larq's two tables,
/// character for character (`larq.models.summary` draws them with terminaltables'
/// AsciiTable): "<name> stats" (a row per layer, the Total row) and "<name> summary"
/// (parameter counts, model size, compression, MACs).
///
/// Cell formats are Larq's: counts and MACs as integers, memory in kB with 2
/// decimals ("0.16"), but a zero as "0"; a MAC count the summary could not learn as
/// "?"; output shapes as Python tuples ("(-1, 64, 64, 32)").

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "../config.hpp"
#include "model_summary.hpp"
#include "readable_numbers.hpp"

namespace xq {

namespace detail {

/// terminaltables' AsciiTable with inner column borders off (what Larq sets): cells
/// padded by one space each side, multi-line cells top-aligned, the title laid over
/// the top border when it fits.
struct ascii_table {
  std::vector<std::vector<std::string>> rows;
  std::string title;
  bool right_align_after_first = false;  // Larq's layers table: column 0 left, others right
  bool heading_border = false;           // a rule under the first row
  bool footing_border = false;           // a rule above the last row

  static std::vector<std::string> lines_of(const std::string& cell);

  std::string render() const;
};

/// Python's str() of a shape tuple: "(-1, 10)", "(-1,)".
XQ_DECL std::string python_tuple(const std::vector<std::ptrdiff_t>& shape);

/// Larq's memory cell: kB with 2 decimals, but an exact zero as "0".
XQ_DECL std::string memory_cell(std::uint64_t bits);

template <class Count, class Memory, class Macs>
std::vector<std::string> table_row(std::vector<std::string> head, const std::vector<int>& bitwidths,
                                   const std::vector<int>& precisions, Count count, Memory memory, Macs macs) {
  for (int b : bitwidths) head.push_back(std::to_string(count(b)));
  head.push_back(memory_cell(memory()));
  for (int p : precisions) head.push_back(macs(p));
  return head;
}

}  // namespace detail

/// Writes Larq's two summary tables; `include_macs = false` drops the MAC rows of the
/// second table (Larq's flag: the first table keeps its MAC columns).
XQ_DECL void print_summary(const model_summary& s, std::ostream& os, bool include_macs = true);

/// The two tables as one string (what `print_summary` writes).
XQ_DECL std::string to_string(const model_summary& s, bool include_macs = true);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/print_summary.ipp"
#endif
