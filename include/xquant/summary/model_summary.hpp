#pragma once
/// \file model_summary.hpp
/// `xq::model_summary`: what `larq.models.summary` reports about a model (Larq's
/// `ModelProfile`): the rows and the model-wide figures (parameter counts, model
/// size, compression, MACs, binarized and ternarized MAC ratios). Made by
/// `xq::summarize` (summarize.hpp), printed by `xq::print_summary` (print_summary.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../config.hpp"
#include "layer_profile.hpp"

namespace xq {

/// A model's summary: one `layer_profile` per row, and totals over them.
struct model_summary {
  /// The model's name (the tables' titles: "<name> stats", "<name> summary").
  std::string name;
  /// The rows, in model order.
  std::vector<layer_profile> layers;

  /// Scalars of bit width `bits` and trainability `trainable` (nullopt: any).
  std::size_t weight_count(std::optional<int> bits = std::nullopt,
                           std::optional<bool> trainable = std::nullopt) const;
  std::size_t total_params() const { return weight_count(); }
  std::size_t trainable_params() const { return weight_count(std::nullopt, true); }
  std::size_t non_trainable_params() const { return weight_count(std::nullopt, false); }

  /// Model size in bits, each weight at its bit width.
  std::uint64_t memory_bits() const { return sum(&layer_profile::memory_bits); }
  /// Model size in bits with weights wider than 8 bits stored in 8.
  std::uint64_t int8_fp_memory_bits() const { return sum(&layer_profile::int8_fp_memory_bits); }
  /// Model size in bits as float32 (Larq's "Float-32 Equivalent").
  std::uint64_t fp32_memory_bits() const { return sum(&layer_profile::fp32_memory_bits); }
  /// memory / float32 memory (Larq divides by max(1e-8, fp32), so 0 for no weights).
  double compression_ratio() const;

  /// MACs of one sample at `precision` bits (nullopt: all).
  std::uint64_t mac_count(std::optional<int> precision = std::nullopt) const;
  /// Share of MACs at 1 bit (Larq divides by max(1, total)).
  double binarized_mac_ratio() const { return mac_ratio(1); }
  /// Share of MACs at 2 bits.
  double ternarized_mac_ratio() const { return mac_ratio(2); }

  /// The weight bit widths present, ascending (one "# k-bit" column each).
  std::vector<int> param_bitwidths() const;
  /// The MAC precisions present, ascending (one "k-bit MACs" column each).
  std::vector<int> mac_precisions() const;

 private:
  std::uint64_t sum(std::uint64_t (layer_profile::*figure)() const) const;
  double mac_ratio(int precision) const;
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/model_summary.ipp"
#endif
