#pragma once
/// \file layer_profile.hpp
/// One row of a model summary (Larq's `LayerProfile`): a layer's weights by bit
/// width, its memory, its multiply-accumulates by precision, its input precision and
/// output shape (and its input shape). Plain data with the figures Larq derives from it; `xq::summarize`
/// (summarize.hpp) fills it in.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../config.hpp"

namespace xq {

/// One weight as the summary counts it (Larq's `WeightProfile`).
struct weight_profile {
  /// The parameter's full name ("quant_conv2d/kernel").
  std::string name;
  /// Number of scalars.
  std::size_t count = 0;
  /// Bits per scalar: its quantizer's precision, 32 for a weight without one.
  int bits = 32;
  /// Whether an optimizer steps it (`parameter::trainable()`).
  bool trainable = true;

  /// Storage in bits at `bits` per scalar.
  std::uint64_t memory_bits() const noexcept { return std::uint64_t(bits) * count; }
  /// Storage in bits if every weight wider than 8 bits were stored in 8 (Larq's
  /// "8-bit FP weights" figure).
  std::uint64_t int8_fp_memory_bits() const noexcept { return std::uint64_t(bits > 8 ? 8 : bits) * count; }
  /// Storage in bits as float32.
  std::uint64_t fp32_memory_bits() const noexcept { return std::uint64_t(32) * count; }
};

/// One row of the summary table: a layer of the model (a leaf, or a composite
/// summed over its leaves, as Larq shows a nested Keras model).
struct layer_profile {
  /// The layer's path in the model ("conv2d", "block_1/conv").
  std::string name;
  /// The precision of the layer's input quantizer (nullopt: none, printed "-").
  std::optional<int> input_precision;
  /// Output shape with -1 for the batch axis, as the summary's pass traced it (a
  /// composite's: its last traced call's; summary/summarize.hpp); nullopt when the
  /// pass never called the layer.
  std::optional<std::vector<std::ptrdiff_t>> output_shape;
  /// Input shape (its first input's, -1 for the batch axis), traced the same way. Not in
  /// Larq's table, which prints outputs only.
  std::optional<std::vector<std::ptrdiff_t>> input_shape;
  /// The weights counted in this row (a weight shared with an earlier row is not).
  std::vector<weight_profile> weights;
  /// Multiply-accumulates of one sample by MAC precision (bits). Empty for a layer
  /// without MACs.
  std::map<int, std::uint64_t> macs;
  /// False for a MAC layer whose MACs the summary could not count (printed "?").
  bool macs_known = true;

  /// Scalars of bit width `bits` (any width when nullopt) and of trainability
  /// `trainable` (either when nullopt).
  std::size_t weight_count(std::optional<int> bits = std::nullopt,
                           std::optional<bool> trainable = std::nullopt) const;
  std::uint64_t memory_bits() const { return sum(&weight_profile::memory_bits); }
  std::uint64_t int8_fp_memory_bits() const { return sum(&weight_profile::int8_fp_memory_bits); }
  std::uint64_t fp32_memory_bits() const { return sum(&weight_profile::fp32_memory_bits); }

  /// MACs at `precision` bits (all precisions when nullopt).
  std::uint64_t mac_count(std::optional<int> precision = std::nullopt) const;

 private:
  std::uint64_t sum(std::uint64_t (weight_profile::*figure)() const noexcept) const;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/layer_profile.ipp"
#endif
