#pragma once
/// \file format_budget.hpp
/// A format per layer under a budget (issue 38's search, its solver): given each layer's
/// predicted damage in each candidate format (train/sensitivity.hpp) and what the format
/// costs, choose one format per group of layers so that the summed damage is least and the
/// summed cost within the budget. That is a multiple-choice knapsack; the model sizes xquant
/// meets (tens of layers, a handful of formats) are small enough to solve it exactly:
///
///   a dynamic program over the groups keeping, after each group, every partial choice that
///   no other beats on both cost and damage (the Pareto front: sorted by cost, damage
///   strictly falling), then the front's cheapest-damage point within the budget.
///
/// Nothing is rounded (costs are bits, damages the scores as they are), so the answer is the
/// optimum, not an approximation; a front larger than `max_front` states (which real-valued
/// costs on hundreds of layers could reach) is an argument_error rather than a silent
/// heuristic. Model Optimizer's `auto_quantize` solves the same problem as a linear program.

#include <cstddef>
#include <string>
#include <vector>

#include "../config.hpp"
#include "sensitivity.hpp"

namespace xq {

/// One way to quantize a group: its cost (bits) and the damage it is predicted to do.
struct budget_option {
  double cost = 0;
  double damage = 0;
};

struct budget_solution {
  bool feasible = false;            ///< some choice fits the budget
  std::vector<std::size_t> choice;  ///< per group, the index of its option
  double cost = 0, damage = 0;
};

/// The exact multiple-choice knapsack (the file comment): minimises Σ damage of one option
/// per group subject to Σ cost <= budget. argument_error for a group without options, a
/// NaN or negative cost, a NaN damage, or a front above `max_front` states.
XQ_DECL budget_solution solve_multiple_choice_knapsack(const std::vector<std::vector<budget_option>>& groups,
                                                       double budget, std::size_t max_front = 1u << 22);

/// Which score of a sensitivity_report stands for a format's damage.
enum class damage_score { gradient, hessian, measured };

struct format_choice_options {
  damage_score score = damage_score::hessian;
  /// Float (32 bits, no damage) is an option for every layer.
  bool allow_float = true;
  /// Layers that must take one format together (a tied weight's uses, the q / k / v
  /// projections of one attention); a layer in no group is a group of its own.
  std::vector<std::vector<std::string>> groups{};
};

/// The chosen format of every scored layer ("float" where float won).
struct format_assignment {
  budget_solution solution;
  std::vector<std::pair<std::string, std::string>> layer_format;
  double bits_per_weight = 0;  ///< Σ bits / Σ weights over the scored layers
  double predicted_damage = 0;
};

/// The formats that minimise the report's predicted damage (o.score) with at most
/// `bits_per_weight` bits per kernel value on average over the report's layers (block scales
/// counted: layer_sensitivity::bits_per_weight). argument_error for a group naming a layer
/// the report lacks, or a group whose layers have different candidates.
XQ_DECL format_assignment choose_formats(const sensitivity_report& report, double bits_per_weight,
                                         const format_choice_options& o = {});

/// The spec that quantizes a model as `a` chose, for `quantize_model` in partial mode with
/// NVIDIA's scheme (`schemes::nvidia()`, which every built-in low-bit scheme extends): each
/// layer given a candidate gets that candidate's placement for its type (input and kernel,
/// per channel or not) and its low-bit formats where it has them; a "float" layer is left
/// out. `candidates` names the report's candidates (argument_error for a name it lacks). A
/// candidate with static ranges (calibrate) needs the twin calibrated, as any PTQ twin.
XQ_DECL quantization_spec to_spec(const format_assignment& a, const sensitivity_report& report,
                                  const std::vector<sensitivity_candidate>& candidates);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/format_budget.ipp"
#endif
