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

#include <algorithm>
#include <cstddef>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

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

  static std::vector<std::string> lines_of(const std::string& cell) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (true) {
      const std::size_t nl = cell.find('\n', start);
      out.push_back(cell.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    return out;
  }

  std::string render() const {
    std::size_t columns = 0;
    for (const auto& r : rows) columns = std::max(columns, r.size());
    std::vector<std::size_t> width(columns, 0), height(rows.size(), 0);
    for (std::size_t j = 0; j < rows.size(); ++j)
      for (std::size_t i = 0; i < rows[j].size(); ++i) {
        if (rows[j][i].empty()) continue;
        const auto lines = lines_of(rows[j][i]);
        height[j] = std::max(height[j], lines.size());
        for (const auto& l : lines) width[i] = std::max(width[i], l.size());
      }
    std::size_t inner = 0;
    for (auto w : width) inner += w + 2;

    std::string out;
    auto rule = [&](const std::string& over) {
      out += '+';
      if (!over.empty() && over.size() <= inner)
        out += over + std::string(inner - over.size(), '-');
      else
        out += std::string(inner, '-');
      out += "+\n";
    };
    rule(title);
    for (std::size_t j = 0; j < rows.size(); ++j) {
      std::vector<std::vector<std::string>> cells(columns);
      for (std::size_t i = 0; i < columns; ++i)
        if (i < rows[j].size() && !rows[j][i].empty()) cells[i] = lines_of(rows[j][i]);
      for (std::size_t line = 0; line < height[j]; ++line) {
        out += '|';
        for (std::size_t i = 0; i < columns; ++i) {
          const std::string text = line < cells[i].size() ? cells[i][line] : std::string();
          const std::string pad(width[i] - text.size(), ' ');
          out += ' ';
          out += (right_align_after_first && i > 0) ? pad + text : text + pad;
          out += ' ';
        }
        out += "|\n";
      }
      if (j + 1 == rows.size()) break;
      if (heading_border && j == 0)
        rule("");
      else if (footing_border && j + 2 == rows.size())
        rule("");
    }
    rule("");
    return out;
  }
};

/// Python's str() of a shape tuple: "(-1, 10)", "(-1,)".
inline std::string python_tuple(const std::vector<std::ptrdiff_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

/// Larq's memory cell: kB with 2 decimals, but an exact zero as "0".
inline std::string memory_cell(std::uint64_t bits) {
  if (bits == 0) return "0";
  return format_double("%.2f", double(bits) / (8 * 1024));
}

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
inline void print_summary(const model_summary& s, std::ostream& os, bool include_macs = true) {
  const std::vector<int> bitwidths = s.param_bitwidths();
  const std::vector<int> precisions = s.mac_precisions();

  detail::ascii_table layers;
  layers.title = s.name + " stats";
  layers.right_align_after_first = layers.heading_border = layers.footing_border = true;
  std::vector<std::string> header = {"Layer", "Input prec.\n(bit)", "Outputs"};
  for (int b : bitwidths) header.push_back("# " + std::to_string(b) + "-bit\nx 1");
  header.push_back("Memory\n(kB)");
  for (int p : precisions) header.push_back(std::to_string(p) + "-bit MACs");
  layers.rows.push_back(header);
  for (const auto& l : s.layers) {
    layers.rows.push_back(detail::table_row(
        {l.name, l.input_precision ? std::to_string(*l.input_precision) : "-",
         l.output_shape ? detail::python_tuple(*l.output_shape) : "?"},
        bitwidths, precisions, [&](int b) { return l.weight_count(b); }, [&] { return l.memory_bits(); },
        [&](int p) { return l.macs_known ? std::to_string(l.mac_count(p)) : std::string("?"); }));
  }
  layers.rows.push_back(detail::table_row(
      {"Total", "", ""}, bitwidths, precisions, [&](int b) { return s.weight_count(b); },
      [&] { return s.memory_bits(); }, [&](int p) { return std::to_string(s.mac_count(p)); }));

  detail::ascii_table figures;
  figures.title = s.name + " summary";
  figures.rows = {
      {"Total params", readable_count(double(s.total_params()))},
      {"Trainable params", readable_count(double(s.trainable_params()))},
      {"Non-trainable params", readable_count(double(s.non_trainable_params()))},
      {"Model size", readable_memory(s.memory_bits())},
      {"Model size (8-bit FP weights)", readable_memory(s.int8_fp_memory_bits())},
      {"Float-32 Equivalent", readable_memory(s.fp32_memory_bits())},
      {"Compression Ratio of Memory", detail::format_double("%.2f", s.compression_ratio())},
  };
  if (include_macs) {
    figures.rows.push_back({"Number of MACs", readable_count(double(s.mac_count()))});
    // Larq shows the ratios only when above zero.
    if (s.binarized_mac_ratio() > 0)
      figures.rows.push_back(
          {"Ratio of MACs that are binarized", detail::format_double("%.4f", s.binarized_mac_ratio())});
    if (s.ternarized_mac_ratio() > 0)
      figures.rows.push_back(
          {"Ratio of MACs that are ternarized", detail::format_double("%.4f", s.ternarized_mac_ratio())});
  }
  os << layers.render() << figures.render();
}

/// The two tables as one string (what `print_summary` writes).
inline std::string to_string(const model_summary& s, bool include_macs = true) {
  std::ostringstream os;
  print_summary(s, os, include_macs);
  return os.str();
}

}  // namespace xq
