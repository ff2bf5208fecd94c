#pragma once
/// \file print_summary.ipp
/// Larq's summary tables (summary/print_summary.hpp).

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "../print_summary.hpp"
#include "../readable_numbers.hpp"

namespace xq {

namespace detail {

XQ_DECL std::vector<std::string> ascii_table::lines_of(const std::string& cell) {
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

XQ_DECL std::string ascii_table::render() const {
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

XQ_DECL std::string python_tuple(const std::vector<std::ptrdiff_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

XQ_DECL std::string memory_cell(std::uint64_t bits) {
  if (bits == 0) return "0";
  return format_double("%.2f", double(bits) / (8 * 1024));
}

}  // namespace detail

XQ_DECL void print_summary(const model_summary& s, std::ostream& os, bool include_macs) {
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

XQ_DECL std::string to_string(const model_summary& s, bool include_macs) {
  std::ostringstream os;
  print_summary(s, os, include_macs);
  return os.str();
}

}  // namespace xq
