#pragma once
/// \file format_budget.ipp
/// format_budget.hpp's code.

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "../../core/error.hpp"
#include "../format_budget.hpp"

namespace xq {

XQ_DECL budget_solution solve_multiple_choice_knapsack(const std::vector<std::vector<budget_option>>& groups,
                                                       double budget, std::size_t max_front) {
  constexpr const char* where = "xq::solve_multiple_choice_knapsack";
  struct state {
    double cost, damage;
    std::size_t parent, option;  // index in the previous front, option of this group
  };
  std::vector<std::vector<state>> fronts;
  std::vector<state> front = {{0.0, 0.0, 0, 0}};
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) throw argument_error(where, "at least one option per group", detail::concat("group ", g, ": none"));
    std::vector<state> next;
    next.reserve(front.size() * groups[g].size());
    for (std::size_t s = 0; s < front.size(); ++s)
      for (std::size_t k = 0; k < groups[g].size(); ++k) {
        const budget_option& o = groups[g][k];
        if (!(o.cost >= 0) || std::isnan(o.damage))
          throw argument_error(where, "costs >= 0 and damages that are numbers",
                               detail::concat("group ", g, ", option ", k, ": cost ", o.cost, ", damage ", o.damage));
        const double cost = front[s].cost + o.cost;
        if (cost <= budget) next.push_back({cost, front[s].damage + o.damage, s, k});
      }
    // The Pareto front: by cost, then damage; keep a state only if it does less damage
    // than every cheaper (or equally cheap) one kept.
    std::sort(next.begin(), next.end(), [](const state& a, const state& b) {
      return a.cost != b.cost ? a.cost < b.cost : a.damage < b.damage;
    });
    std::vector<state> kept;
    for (const state& s : next)
      if (kept.empty() || s.damage < kept.back().damage) kept.push_back(s);
    if (kept.size() > max_front)
      throw argument_error(where, detail::concat("a Pareto front of at most ", max_front, " states"),
                           detail::concat(kept.size(), " after group ", g));
    fronts.push_back(front);
    front = std::move(kept);
    if (front.empty()) return {};  // nothing fits
  }
  budget_solution out;
  out.feasible = true;
  // Damage falls along the front: its last state does the least.
  std::size_t at = front.size() - 1;
  out.cost = front[at].cost;
  out.damage = front[at].damage;
  out.choice.assign(groups.size(), 0);
  for (std::size_t g = groups.size(); g-- > 0;) {
    out.choice[g] = front[at].option;
    at = front[at].parent;
    front = std::move(fronts[g]);
  }
  return out;
}

XQ_DECL format_assignment choose_formats(const sensitivity_report& report, double bits_per_weight,
                                         const format_choice_options& o) {
  constexpr const char* where = "xq::choose_formats";
  // The report's layers in order, each with its rows (one per candidate).
  std::vector<std::string> layers;
  std::map<std::string, std::vector<const layer_sensitivity*>> rows;
  for (const auto& r : report.rows) {
    if (!rows.count(r.layer)) layers.push_back(r.layer);
    rows[r.layer].push_back(&r);
  }
  // Groups: the given ones, then every other layer alone.
  std::vector<std::vector<std::string>> groups;
  std::map<std::string, bool> grouped;
  for (const auto& g : o.groups) {
    for (const auto& l : g) {
      if (!rows.count(l)) throw argument_error(where, "groups of scored layers", l + ": not in the report");
      grouped[l] = true;
    }
    if (!g.empty()) groups.push_back(g);
  }
  for (const auto& l : layers)
    if (!grouped.count(l)) groups.push_back({l});

  const auto damage_of = [&](const layer_sensitivity& r) {
    switch (o.score) {
      case damage_score::gradient: return r.gradient_score;
      case damage_score::measured: return r.measured;
      case damage_score::hessian: break;
    }
    return r.hessian_score;
  };
  double weights = 0;
  for (const auto& l : layers) weights += double(rows[l].front()->weights);
  std::vector<std::vector<budget_option>> problem;
  std::vector<std::vector<std::string>> names;  // per group, its options' format names
  for (const auto& g : groups) {
    const auto& first = rows[g.front()];
    std::vector<budget_option> options;
    std::vector<std::string> option_names;
    for (std::size_t k = 0; k < first.size(); ++k) {
      budget_option b;
      for (const auto& l : g) {
        const auto& lr = rows[l];
        if (lr.size() != first.size() || lr[k]->candidate != first[k]->candidate)
          throw argument_error(where, "the layers of a group scored in the same formats", l);
        b.cost += lr[k]->bits_per_weight * double(lr[k]->weights);
        b.damage += damage_of(*lr[k]);
      }
      options.push_back(b);
      option_names.push_back(first[k]->candidate);
    }
    if (o.allow_float) {
      budget_option f;
      for (const auto& l : g) f.cost += 32.0 * double(rows[l].front()->weights);
      options.push_back(f);
      option_names.push_back("float");
    }
    problem.push_back(std::move(options));
    names.push_back(std::move(option_names));
  }
  format_assignment out;
  out.solution = solve_multiple_choice_knapsack(problem, bits_per_weight * weights);
  if (!out.solution.feasible) return out;
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (const auto& l : groups[g]) out.layer_format.emplace_back(l, names[g][out.solution.choice[g]]);
  out.bits_per_weight = weights > 0 ? out.solution.cost / weights : 0;
  out.predicted_damage = out.solution.damage;
  return out;
}

XQ_DECL quantization_spec to_spec(const format_assignment& a, const sensitivity_report& report,
                                  const std::vector<sensitivity_candidate>& candidates) {
  constexpr const char* where = "xq::to_spec";
  quantization_spec spec;
  for (const auto& chosen : a.layer_format) {
    const std::string& layer = chosen.first;
    const std::string& format = chosen.second;
    if (format == "float") continue;
    const auto c = std::find_if(candidates.begin(), candidates.end(),
                                [&](const sensitivity_candidate& k) { return k.name == format; });
    if (c == candidates.end()) throw argument_error(where, "a candidate for every chosen format", format + ": none");
    const auto r = std::find_if(report.rows.begin(), report.rows.end(),
                                [&](const layer_sensitivity& x) { return x.layer == layer; });
    if (r == report.rows.end()) throw argument_error(where, "layers of the report", layer + ": not in it");
    const quantization_scheme& s = c->scheme;
    const auto listed = s.layers.find(r->type);
    const layer_defaults& d = listed != s.layers.end() ? listed->second : s.unlisted_weighted;
    layer_quantization q;
    q.quantize_input = d.quantize_input;
    q.quantize_weight = d.quantize_weight;
    q.per_channel = d.per_channel_weight;
    if (s.weight.format) q.weight_format = s.weight.format;
    if (s.input.format) q.input_format = s.input.format;
    spec.add(layer, q);
  }
  return spec;
}

}  // namespace xq
