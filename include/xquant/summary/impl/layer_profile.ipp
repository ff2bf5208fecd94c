#pragma once
/// \file layer_profile.ipp
/// layer_profile's figures (summary/layer_profile.hpp).

#include "../layer_profile.hpp"

namespace xq {

XQ_DECL std::size_t layer_profile::weight_count(std::optional<int> bits, std::optional<bool> trainable) const {
  std::size_t n = 0;
  for (const auto& w : weights)
    if ((!bits || w.bits == *bits) && (!trainable || w.trainable == *trainable)) n += w.count;
  return n;
}

XQ_DECL std::uint64_t layer_profile::mac_count(std::optional<int> precision) const {
  std::uint64_t n = 0;
  for (const auto& [bits, count] : macs)
    if (!precision || bits == *precision) n += count;
  return n;
}

XQ_DECL std::uint64_t layer_profile::sum(std::uint64_t (weight_profile::*figure)() const noexcept) const {
  std::uint64_t n = 0;
  for (const auto& w : weights) n += (w.*figure)();
  return n;
}

}  // namespace xq
