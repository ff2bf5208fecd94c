#pragma once
/// \file sensitivity.ipp
/// sensitivity.hpp's compiled part: Spearman's ρ, the report's tables, the traced outputs.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <sstream>

#include "../../core/error.hpp"
#include "../../core/shape_check.hpp"
#include "../sensitivity.hpp"

namespace xq {

namespace detail {

/// Ranks 1..n of `v`, ties sharing their average rank.
inline std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i + 1;
    while (j < order.size() && v[order[j]] == v[order[i]]) ++j;
    const double mean = (double(i + 1) + double(j)) / 2.0;  // ranks i+1 .. j
    for (std::size_t k = i; k < j; ++k) rank[order[k]] = mean;
    i = j;
  }
  return rank;
}

}  // namespace detail

XQ_DECL double spearman_rho(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw argument_error("xq::spearman_rho", "two rankings of one length",
                         detail::concat(a.size(), " and ", b.size(), " values"));
  const std::size_t n = a.size();
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> ra = detail::average_ranks(a), rb = detail::average_ranks(b);
  // Pearson's r of the ranks (exact with ties, unlike 1 - 6 Σd² / n(n² - 1)).
  const double mean = (double(n) + 1.0) / 2.0;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (saa == 0 || sbb == 0) return std::numeric_limits<double>::quiet_NaN();
  return sab / std::sqrt(saa * sbb);
}

XQ_DECL std::vector<sensitivity_report::correlation> sensitivity_report::rank_correlations() const {
  std::vector<correlation> out;
  std::vector<std::string> names;
  for (const auto& r : rows)
    if (std::find(names.begin(), names.end(), r.candidate) == names.end()) names.push_back(r.candidate);
  if (names.size() > 1) names.push_back("");  // every (layer, format) pair: "all"
  for (const auto& name : names) {
    std::vector<double> measured, gradient, hessian, sqnr;
    for (const auto& r : rows) {
      if (!name.empty() && r.candidate != name) continue;
      measured.push_back(r.measured);
      gradient.push_back(r.gradient_score);
      hessian.push_back(r.hessian_score);
      sqnr.push_back(-r.sqnr_db);  // low SQNR: high predicted damage
    }
    out.push_back({name.empty() ? "all" : name, measured.size(), spearman_rho(gradient, measured),
                   spearman_rho(hessian, measured),
                   spearman_rho(sqnr, measured)});
  }
  return out;
}

XQ_DECL std::string sensitivity_report::table() const {
  std::ostringstream s;
  int width = 5;  // the longest layer path sets the first column
  for (const auto& r : rows) width = std::max(width, int(r.layer.size()));
  char line[256];
  std::snprintf(line, sizeof line, " %-12s %10s %6s %12s %12s %12s %10s %12s\n", "format", "weights", "bits",
                "trace(H)", "gradient", "hessian", "sqnr_db", "measured");
  s << std::string("layer").append(std::size_t(width) - 5, ' ') << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, " %-12s %10zu %6.2f %12.4g %12.4g %12.4g %10.2f %12.4g\n", r.candidate.c_str(),
                  r.weights, r.bits_per_weight, r.hessian_trace, r.gradient_score, r.hessian_score, r.sqnr_db,
                  r.measured);
    s << r.layer << std::string(std::size_t(width) - r.layer.size(), ' ') << line;
  }
  return s.str();
}

XQ_DECL std::string sensitivity_report::correlation_table() const {
  std::ostringstream s;
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %7s %10s %10s %10s\n", "format", "layers", "rho_grad", "rho_hawq", "rho_sqnr");
  s << line;
  for (const auto& c : rank_correlations()) {
    std::snprintf(line, sizeof line, "%-12s %7zu %10.3f %10.3f %10.3f\n", c.candidate.c_str(), c.layers, c.gradient,
                  c.hessian, c.sqnr);
    s << line;
  }
  return s.str();
}

namespace detail {

XQ_DECL std::unordered_map<std::string, traced_output> outputs_at(const graph_trace& trace,
                                                                  const std::vector<std::string>& paths,
                                                                  bool with_grads) {
  std::unordered_map<std::string, traced_output> out;
  for (const auto& p : paths) out[p];
  for (const traced_call& c : trace.calls()) {
    if (c.function || !c.output) continue;
    const auto it = out.find(c.path);
    if (it == out.end()) continue;
    it->second.values.push_back(c.output->value);
    if (with_grads)
      it->second.grads.push_back(c.output->has_grad() ? c.output->grad : tensor(xt::zeros_like(c.output->value)));
  }
  return out;
}

XQ_DECL void add_output_errors(const traced_output& float_side, const traced_output& quantized_side,
                               const std::string& layer, output_error_sums& sums) {
  if (float_side.values.size() != quantized_side.values.size())
    throw argument_error("xq::layer_sensitivities", concat(layer, " called as often in the twin as in the model"),
                         concat(quantized_side.values.size(), " calls against ", float_side.values.size()));
  for (std::size_t k = 0; k < float_side.values.size(); ++k) {
    const tensor& y = float_side.values[k];
    const tensor& q = quantized_side.values[k];
    const tensor& g = float_side.grads.at(k);
    if (y.shape() != q.shape())
      throw shape_error(layer + " (the quantized twin's output)", shape_string(y.shape()), shape_string(q.shape()));
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double e = double(q.data()[i]) - double(y.data()[i]);
      const double ge = double(g.data()[i]) * e;
      sums.gradient_score += ge * ge;
      sums.signal += double(y.data()[i]) * double(y.data()[i]);
      sums.noise += e * e;
    }
  }
}

XQ_DECL double squared_distance(const tensor& a, const tensor& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = double(a.data()[i]) - double(b.data()[i]);
    s += d * d;
  }
  return s;
}

XQ_DECL double dot_difference(const tensor& v, const tensor& a, const tensor& b) {
  double s = 0;
  for (std::size_t i = 0; i < v.size(); ++i) s += double(v.data()[i]) * (double(a.data()[i]) - double(b.data()[i]));
  return s;
}

XQ_DECL batch batch_at(const dataset& data, std::size_t k, std::size_t size) {
  const std::size_t first = k * size, count = std::min(size, data.size() - first);
  batch b;
  b.inputs = slice_rows(data.inputs, first, count);
  b.targets = slice_rows(data.targets, first, count);
  return b;
}

}  // namespace detail
}  // namespace xq
