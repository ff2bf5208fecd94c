#pragma once
/// \file parity.ipp
/// The parity report (deploy/parity.hpp).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <cstdio>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/mode.hpp"
#include "../../core/tape.hpp"
#include "../../quantizers/fake_quantizer.hpp"
#include "../../quantizers/model_quantizers.hpp"
#include "../graph/quantizer_grids.hpp"
#include "../lower.hpp"
#include "../parity.hpp"

namespace xq::deploy {

namespace detail {

inline parity_row& row_for(parity_report& r, const std::string& label) {
  for (auto& row : r.rows)
    if (row.label == label) return row;
  r.rows.push_back(parity_row{label, "", 0, 0, 0});
  return r.rows.back();
}

/// Labels as parity reads them: one whole class index in [0, classes) per image.
inline void check_labels(const tensor& labels, std::size_t images, std::size_t classes) {
  if (labels.dimension() != 1)
    throw argument_error("parity", "labels of rank 1 (one class index per image)",
                         "labels of shape " + xq::detail::shape_string(labels.shape()));
  if (labels.size() != images)
    throw argument_error("parity", xq::detail::concat(images, " labels (one per image)"), xq::detail::concat(labels.size()));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const float v = labels.data()[i];
    if (!(v >= 0.0f) || !(v < float(classes)) || v != std::floor(v))
      throw argument_error("parity", xq::detail::concat("class indices 0 to ", classes - 1),
                           xq::detail::concat(v, " at label ", i));
  }
}

XQ_DECL void add_parity_batch(parity_report& report, const graph_trace& trace, const std::vector<tensor>& simulated,
                              const integer_model& engine, const std::vector<engine_tensor>& values,
                              const std::map<std::string, const quantizer_base*>& quantizers, const float* labels) {
  // The k-th call of each path in this pass.
  std::unordered_map<std::string, std::vector<const traced_call*>> calls;
  for (const traced_call& c : trace.calls())
    if (!c.function) calls[c.path].push_back(&c);
  for (const parity_point& p : engine.parity_points) {
    const auto it = calls.find(p.layer_path);
    if (it == calls.end() || it->second.size() <= p.call)
      throw argument_error("parity", "a model that calls " + p.layer_path + " as the lowered one did",
                           "a pass without that call");
    const traced_call& call = *it->second[p.call];
    const tensor& x = p.output ? call.output->value : call.inputs.at(p.input)->value;
    const engine_tensor& e = values.at(p.value);
    parity_row& row = row_for(report, p.label);
    if (p.binary) {
      row.grid = "±1 (bits)";
      const tensor ours = e.to_real();
      for (std::size_t i = 0; i < x.size(); ++i) {
        const float v = x.data()[i];
        const float sim = v <= -FLT_MIN ? -1.0f : 1.0f;  // Larq's sign with TF's flushing
        ++row.elements;
        if (sim == ours.data()[i]) ++row.identical, ++row.within_one_step;
        else row.max_steps = std::max<std::int64_t>(row.max_steps, 2);
      }
      continue;
    }
    const auto q = quantizers.find(p.quantizer_path);
    if (q == quantizers.end())
      throw argument_error("parity", "the quantizer " + p.quantizer_path + " in the model", "none by that path");
    // The simulation's integers: its own quantizer's inference output on the traced input,
    // read on that quantizer's grid.
    const quantization_grid grid = grid_of(*q->second, x, p.quantizer_path);
    const tensor simulated_values = detail::inference_output(*q->second, x);
    const std::vector<std::int32_t> sim = grid_integers(grid, simulated_values, p.quantizer_path);
    row.grid = describe(grid);
    if (e.kind == value_kind::real) {  // a low-bit format's values (scales from the tensor)
      const tensor ours = e.to_real();
      std::vector<std::int32_t> codes;
      try {
        codes = grid_integers(grid, ours, p.quantizer_path);
      } catch (const argument_error&) {  // off the simulation's grid: counted as far apart
      }
      for (std::size_t i = 0; i < sim.size(); ++i) {
        ++row.elements;
        const double a = simulated_values.data()[i], b = ours.data()[i];
        row.signal += a * a;
        row.noise += (a - b) * (a - b);
        if (a == b) {
          ++row.identical;
          ++row.within_one_step;
          continue;
        }
        if (codes.empty()) {
          ++row.off_grid;
          continue;
        }
        const std::int64_t d = std::int64_t(sim[i]) - std::int64_t(codes[i]);
        if (d >= -1 && d <= 1) ++row.within_one_step;
        row.max_steps = std::max<std::int64_t>(row.max_steps, d < 0 ? -d : d);
      }
      continue;
    }
    const std::vector<std::int32_t> ours = e.integers();
    for (std::size_t i = 0; i < sim.size(); ++i) {
      ++row.elements;
      const std::int64_t d = std::int64_t(sim[i]) - std::int64_t(ours[i]);
      if (d == 0) ++row.identical;
      if (d >= -1 && d <= 1) ++row.within_one_step;
      row.max_steps = std::max<std::int64_t>(row.max_steps, d < 0 ? -d : d);
      // In steps of the grid: the values' SQNR wherever the grid has one scale.
      const double centred = double(sim[i]) - double(grid.zero_point.empty() ? 0 : grid.zero_point[0]);
      row.signal += centred * centred;
      row.noise += double(d) * double(d);
    }
  }
  // The outputs: elementwise, and top-1 over the last axis of the first.
  const std::vector<std::size_t> outs = engine.output_values();
  if (outs.size() != simulated.size())
    throw argument_error("parity", xq::detail::concat(simulated.size(), " outputs (the simulation's)"),
                         xq::detail::concat(outs.size(), " in the engine"));
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const tensor ours = values.at(outs[k]).to_real();
    if (ours.size() != simulated[k].size())
      throw argument_error("parity", xq::detail::concat(simulated[k].size(), " elements of output ", k, " (the simulation's)"),
                           xq::detail::concat(ours.size()));
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const double d = std::fabs(double(simulated[k].data()[i]) - double(ours.data()[i]));
      report.max_output_difference = std::max(report.max_output_difference, d);
      report.output_signal += double(simulated[k].data()[i]) * double(simulated[k].data()[i]);
      report.output_noise += d * d;
      ++report.output_elements;
      if (d == 0) ++report.output_identical;
    }
  }
  const tensor& first = simulated.at(0);
  report.class_scores = first.dimension() == 2;  // (N, classes); not a map of per-pixel values
  const tensor ours = values.at(outs[0]).to_real();
  const std::size_t classes = first.shape().back(), n = first.size() / classes;
  for (std::size_t s = 0; s < n; ++s) {
    const float* a = first.data() + s * classes;
    const float* b = ours.data() + s * classes;
    const std::size_t ta = std::size_t(std::max_element(a, a + classes) - a);
    const std::size_t tb = std::size_t(std::max_element(b, b + classes) - b);
    ++report.samples;
    if (ta == tb) ++report.same_top1;
    if (labels) {
      if (ta == std::size_t(labels[s])) ++report.simulated_correct;
      if (tb == std::size_t(labels[s])) ++report.engine_correct;
    }
  }
}

XQ_DECL parity_report parity_model(const model_handle& m, const integer_model& engine,
                                   const std::vector<tensor>& inputs, const tensor* labels, std::size_t batch) {
  std::map<std::string, const quantizer_base*> quantizers;
  xq::detail::for_each_quantizer_ref(
      m.ref,
      [](void* f, quantizer_base& q) { (*static_cast<std::map<std::string, const quantizer_base*>*>(f))[q.path()] = &q; },
      &quantizers);
  parity_report report;
  report.labelled = labels != nullptr;
  if (inputs.empty()) throw argument_error("parity", "at least one input batch", "none");
  const std::size_t n = inputs[0].dimension() ? inputs[0].shape()[0] : 0;
  for (const tensor& x : inputs)
    if (!x.dimension() || x.shape()[0] != n)
      throw argument_error("parity", xq::detail::concat("inputs of one batch size (", n, ")"),
                           xq::detail::shape_string(x.shape()));
  xq::detail::set_paths(m.ref, "");
  if (batch == 0) batch = n ? n : 1;
  for (std::size_t start = 0; start < n; start += batch) {
    const std::size_t count = std::min(batch, n - start);
    std::vector<tensor> part;
    for (const tensor& x : inputs) {
      const std::size_t per_sample = x.size() / n;
      tensor::shape_type shape(x.shape().begin(), x.shape().end());
      shape[0] = count;
      tensor p = tensor::from_shape(shape);
      std::copy(x.data() + start * per_sample, x.data() + (start + count) * per_sample, p.data());
      part.push_back(std::move(p));
    }
    graph_trace trace;
    std::vector<tensor> simulated;
    {
      const no_grad nothing_recorded;
      const training_mode inference(false);
      var_list in;
      for (const tensor& p : part) in.emplace_back(p);
      for (const var& y : m.call(m.model, in)) simulated.push_back(y.value());
    }
    const graph_trace idle;  // the quantizer calls below are not the simulation's pass
    const std::vector<engine_tensor> values = engine.run_all(part);
    if (labels && start == 0)
      check_labels(*labels, n, simulated.at(0).dimension() ? simulated.at(0).shape().back() : 0);
    add_parity_batch(report, trace, simulated, engine, values, quantizers, labels ? labels->data() + start : nullptr);
  }
  return report;
}

}  // namespace detail

namespace detail {
inline double sqnr(double signal, double noise) noexcept {
  if (noise == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}
}  // namespace detail

XQ_DECL double parity_row::sqnr_db() const noexcept { return detail::sqnr(signal, noise); }
XQ_DECL double parity_report::output_sqnr_db() const noexcept { return detail::sqnr(output_signal, output_noise); }

XQ_DECL std::string parity_report::table() const {
  std::ostringstream s;
  char line[256];
  std::snprintf(line, sizeof line, "%-34s %12s %12s %10s %6s %9s\n", "quantized tensor", "elements", "identical", "share",
                "max|d|", "SQNR dB");
  s << line;
  for (const parity_row& r : rows) {
    char steps[16];
    if (r.off_grid)
      std::snprintf(steps, sizeof steps, "%s", "moved");  // scales moved: values off the simulation's grid
    else
      std::snprintf(steps, sizeof steps, "%lld", static_cast<long long>(r.max_steps));
    std::snprintf(line, sizeof line, "%-34s %12zu %12zu %9.5f%% %6s %9.1f\n", r.label.c_str(), r.elements, r.identical,
                  100.0 * r.share(), steps, r.sqnr_db());
    s << line;
  }
  std::snprintf(line, sizeof line, "output: %zu of %zu elements identical, max |difference| %.3g, SQNR %.1f dB\n",
                output_identical, output_elements, max_output_difference, output_sqnr_db());
  s << line;
  // A top-1 over the last axis of a regression's output (a flow field's two components
  // per pixel) counts nothing a user asked about: only for class scores or with labels.
  if (!labelled && !class_scores) return s.str();
  std::snprintf(line, sizeof line, "top-1: %zu of %zu predictions identical (%.3f%%)", same_top1, samples,
                100.0 * same_top1_share());
  s << line;
  if (labelled) {
    std::snprintf(line, sizeof line, "; accuracy simulated %.4f, integer engine %.4f", simulated_accuracy(),
                  engine_accuracy());
    s << line;
  }
  s << "\n";
  return s.str();
}

}  // namespace xq::deploy
