#pragma once
/// \file graph_options.hpp
/// What the deploy-graph build (build_graph.hpp) checks and allows.

#include <string>
#include <vector>

namespace xq::deploy {

struct graph_options {
  /// Deploy quantizers that have never seen data (their placeholder ranges). Off: such a
  /// quantizer is an error naming it (its grid would be the initial range, not a trained
  /// or calibrated one).
  bool allow_uncalibrated = false;
  /// Names of the graph's inputs and outputs: empty for the defaults ("input", "input_1",
  /// ...; "output", "output_1", ...), else one per input / output.
  std::vector<std::string> input_names, output_names;
};

}  // namespace xq::deploy
