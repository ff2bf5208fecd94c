#pragma once
/// \file model_summary.ipp
/// model_summary's figures (summary/model_summary.hpp).

#include <algorithm>
#include <set>
#include <vector>

#include "../model_summary.hpp"

namespace xq {

XQ_DECL std::size_t model_summary::weight_count(std::optional<int> bits, std::optional<bool> trainable) const {
  std::size_t n = 0;
  for (const auto& l : layers) n += l.weight_count(bits, trainable);
  return n;
}

XQ_DECL double model_summary::compression_ratio() const {
  return double(memory_bits()) / std::max(1e-8, double(fp32_memory_bits()));
}

XQ_DECL std::uint64_t model_summary::mac_count(std::optional<int> precision) const {
  std::uint64_t n = 0;
  for (const auto& l : layers) n += l.mac_count(precision);
  return n;
}

XQ_DECL std::vector<int> model_summary::param_bitwidths() const {
  std::set<int> s;
  for (const auto& l : layers)
    for (const auto& w : l.weights) s.insert(w.bits);
  return {s.begin(), s.end()};
}

XQ_DECL std::vector<int> model_summary::mac_precisions() const {
  std::set<int> s;
  for (const auto& l : layers)
    for (const auto& m : l.macs) s.insert(m.first);
  return {s.begin(), s.end()};
}

XQ_DECL std::uint64_t model_summary::sum(std::uint64_t (layer_profile::*figure)() const) const {
  std::uint64_t n = 0;
  for (const auto& l : layers) n += (l.*figure)();
  return n;
}

XQ_DECL double model_summary::mac_ratio(int precision) const {
  return double(mac_count(precision)) / double(std::max<std::uint64_t>(1, mac_count()));
}

}  // namespace xq
