#pragma once
/// \file parity.hpp
/// `xq::deploy::parity(model, engine, images)`: does the integer engine compute what the
/// simulation computed? Both run on the same images; at every place where the simulation
/// quantizes (the engine's `parity_point`s: each quantized layer input) the report counts
/// the integers that are identical and the largest difference in steps, and at the output
/// the identical elements and the share of identical top-1 predictions (and, given labels,
/// both accuracies; the table prints top-1 only with labels or for class scores). Each row
/// and the output also give the SQNR (dB) of deployed against simulated values: infinite
/// where the engine computes the simulation's values exactly. A low-bit format's dynamic
/// activations (their values real, the scales each tensor's) are compared as values, and
/// as codes on the simulation's grid of that tensor.
///
/// The simulation's integers are its own quantizer applied to the float input the traced
/// pass recorded (quantization_grid.hpp), so a row compares the two programs' integers at
/// one tensor, not a chain of guesses.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/graph_trace.hpp"
#include "../core/mode.hpp"
#include "../core/tape.hpp"
#include "integer_model.hpp"
#include "graph/build_graph.hpp"

namespace xq::deploy {

struct parity_row {
  std::string label;              ///< "conv_block_1/conv input"
  std::string grid;               ///< the grid compared on ("±1" for bits)
  std::size_t elements = 0;
  std::size_t identical = 0;
  std::int64_t max_steps = 0;     ///< the largest |difference| in steps of the grid
  std::size_t within_one_step = 0;  ///< elements at most one step apart (identical ones included)
  /// Σ simulated², Σ (simulated - engine)² over the real values the integers stand for:
  /// the signal-to-quantization-noise ratio of deployed against simulated.
  double signal = 0, noise = 0;
  /// A low-bit format's values whose scales moved (the engine's input to the quantizer
  /// differed): the engine's values are off the simulation's grid of that tensor, and
  /// `max_steps` does not count them (the SQNR does).
  std::size_t off_grid = 0;
  double share() const noexcept { return elements ? double(identical) / double(elements) : 1.0; }
  /// 10 log10(signal / noise) in dB; +infinity where every value is identical.
  XQ_DECL double sqnr_db() const noexcept;
  double share_within_one_step() const noexcept { return elements ? double(within_one_step) / double(elements) : 1.0; }
};

struct parity_report {
  std::vector<parity_row> rows;
  std::size_t samples = 0;
  std::size_t same_top1 = 0;
  std::size_t simulated_correct = 0, engine_correct = 0;  ///< with labels
  bool labelled = false;
  /// Whether the first output is (N, classes), scores to take a top-1 of: table() prints
  /// the top-1 line for such an output or with labels, not for a regression's (N, H, W, 2).
  bool class_scores = false;
  double max_output_difference = 0;  ///< the largest |simulated - engine| output element
  std::size_t output_elements = 0, output_identical = 0;
  double output_signal = 0, output_noise = 0;  ///< the outputs' Σ simulated², Σ difference²
  /// The outputs' SQNR in dB (+infinity where identical).
  XQ_DECL double output_sqnr_db() const noexcept;

  double same_top1_share() const noexcept { return samples ? double(same_top1) / double(samples) : 1.0; }
  double simulated_accuracy() const noexcept { return samples ? double(simulated_correct) / double(samples) : 0.0; }
  double engine_accuracy() const noexcept { return samples ? double(engine_correct) / double(samples) : 0.0; }
  /// The report as a table: one row per quantized tensor, then the output line, then the
  /// top-1 line (with the accuracies) where top-1 means something: with labels, or for
  /// class scores (`class_scores`).
  XQ_DECL std::string table() const;
};

namespace detail {
/// The compiled part of parity (parity.ipp).
XQ_DECL parity_report parity_model(const model_handle& m, const integer_model& engine,
                                   const std::vector<tensor>& inputs, const tensor* labels, std::size_t batch);
/// Adds one batch to `report` (compiled): the traced simulation pass and its output, the
/// engine's tensors, the model's fake quantizers by path.
XQ_DECL void add_parity_batch(parity_report& report, const graph_trace& trace, const std::vector<tensor>& simulated,
                              const integer_model& engine, const std::vector<engine_tensor>& values,
                              const std::map<std::string, const quantizer_base*>& quantizers, const float* labels);
}  // namespace detail

/// Runs `model` (inference) and `engine` on `images` in batches of `batch` and compares
/// them (see the file comment); `labels` (one class index per image: a rank-1 tensor of
/// whole numbers in [0, classes), as many as images) add the accuracies. argument_error
/// for labels that are not such.
template <class Model>
parity_report parity(Model& model, const integer_model& engine, const tensor& images,
                     const tensor* labels = nullptr, std::size_t batch = 500) {
  return detail::parity_model(detail::handle_of(model), engine, {images}, labels, batch);
}

/// The same for a model of several inputs (one batch each, the same N, in the model's
/// order) or outputs: every output compared element by element, top-1 (and the labels) on
/// the first.
template <class Model>
parity_report parity(Model& model, const integer_model& engine, const std::vector<tensor>& inputs,
                     const tensor* labels = nullptr, std::size_t batch = 500) {
  return detail::parity_model(detail::handle_of(model), engine, inputs, labels, batch);
}

}  // namespace xq::deploy

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/parity.ipp"
#endif
