#pragma once
/// \file sensitivity.hpp
/// Which layers can go low: per layer and candidate format, the peers' sensitivity scores
/// and the measured damage they try to predict, behind one call.
///
///  | score | peer | what it is, for layer l and format f |
///  |---|---|---|
///  | `gradient_score` | NVIDIA Model Optimizer's `auto_quantize` (`AutoQuantizeGradientSearcher`) | Σ over the score batches and the layer's outputs of (∂L/∂y ⊙ (y_q − y))²: y the float layer's output, y_q its output with l alone quantized, ∂L/∂y the float model's loss gradient |
///  | `hessian_score` | NNCF's HAWQ (`hessian_trace.py`, `hawq_init.py`) | Tr(H_l) / n_l · ‖Q_f(W_l) − W_l‖²: H_l the loss's Hessian in the layer's kernel W_l (n_l values), by Hutchinson's estimator |
///  | `sqnr_db` | AIMET's AMP (`mixed_precision_algo.py`, its SQNR evaluator) | 10 log10(Σ y² / Σ (y_q − y)²) of the layer's output: higher is safer |
///  | `measured` | — | the validation loss with layer l alone quantized to f, minus the float model's |
///
/// The Hessian-vector products are **central finite differences of gradients**:
/// Hv ≈ (∇L(W + εv) − ∇L(W − εv)) / 2ε, exact for a quadratic loss and O(ε²) otherwise.
/// xquant's tape records closures that compute tensors, not operations it could
/// differentiate again, so a backward over the backward (PyTorch's double backward, which
/// the peers use) does not exist; two ordinary backward passes per product cost what one
/// double backward costs. One Rademacher vector v perturbs every layer's kernel at once
/// (ε scaled to each kernel's RMS) and layer l's trace reads v_lᵀ(Hv)_l: the cross terms
/// between layers have mean 0, so each layer's estimate is unbiased, from
/// `hutchinson_samples` products for the whole model (HAWQ's own estimator).
///
/// Each (layer, format) is the candidate's full twin (`quantize_model`, batch norms not
/// folded: the twin's layer output must be the float layer's counterpart) with every
/// quantizer off but the layer's own (its input and kernel as the scheme places them in the
/// whole model), calibrated on the score data where the candidate says its ranges are static. Everything runs in inference mode (batch norms
/// on their moving statistics, dropout off), the model's weights and gradients are as they
/// were when the call returns. A layer called more than once sums its calls; a layer whose
/// output a following in-place ReLU absorbed is measured after the ReLU.
///
/// The model takes one input and the loss one target (`dataset::inputs`, `targets`); models
/// with several are not scored yet.
///
/// `rank_correlations()` tells which score to trust: Spearman's ρ between each score's
/// ranking of the layers and the ranking by the measured loss increase, per candidate.
///
/// \code
///   const std::vector<xq::sensitivity_candidate> formats = {
///       {"int8", xq::schemes::nvidia(), true}, {"nvfp4", xq::schemes::nvfp4()}};
///   auto report = xq::layer_sensitivities(model, xq::sparse_softmax_cross_entropy, scores, validation,
///                                         formats, {1, 28, 28, 1});
///   std::cout << report.table() << report.correlation_table();
/// \endcode

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../config.hpp"
#include "../core/graph_trace.hpp"
#include "../core/layer_traits.hpp"
#include "../core/model.hpp"
#include "../core/mode.hpp"
#include "../core/tape.hpp"
#include "../quantizers/calibrate.hpp"
#include "../quantizers/model_quantizers.hpp"
#include "../transform/quantize_model.hpp"
#include "dataset.hpp"
#include "fit.hpp"

namespace xq {

/// One format a layer may take: the scheme that quantizes it (its weight and input formats).
struct sensitivity_candidate {
  std::string name;
  quantization_scheme scheme;
  /// The scheme has static ranges (NVIDIA's int8 inputs, W4A8's): calibrate each twin on
  /// the score data first (calibrate.hpp, max |x|).
  bool calibrate = false;
};

struct sensitivity_options {
  std::size_t batch_size = 64;
  /// Batches of the score data the gradient, Hessian and SQNR scores read (from its start).
  std::size_t score_batches = 2;
  /// Hessian-vector products for the whole model's traces.
  std::size_t hutchinson_samples = 16;
  /// ε of the finite differences, relative to each kernel's root mean square.
  float finite_difference_step = 1e-2f;
  std::uint32_t seed = 1;
  /// The layers to score (paths); empty: every layer whose kernel the first candidate's
  /// scheme quantizes.
  std::vector<std::string> layers{};
};

/// One layer in one format.
struct layer_sensitivity {
  std::string layer, candidate;
  std::string type;             ///< the layer's type ("conv2d"), as the graph trace names it
  std::size_t weights = 0;      ///< values in the layer's kernel
  /// Bits per kernel value in this format: a low-bit format's element plus its scales
  /// spread over whole blocks (`bits_per_value`: int4 groups of 32 with float32 scales 5,
  /// MXFP4 4.25, NVFP4 4.5), or the integer grid's width; 32 where the kernel is not
  /// quantized. What a budget in effective bits counts.
  double bits_per_weight = 32;
  double hessian_trace = 0;     ///< Tr(H) of the loss in the kernel (the same for every format)
  double gradient_score = 0;    ///< Model Optimizer's
  double hessian_score = 0;     ///< HAWQ's
  double sqnr_db = 0;           ///< AIMET's (higher: less damage)
  double measured = 0;          ///< validation loss increase with this layer alone quantized
};

/// Spearman's rank correlation of a and b (ties get their average rank); NaN when fewer
/// than two values or a constant ranking. argument_error for lengths that differ.
XQ_DECL double spearman_rho(const std::vector<double>& a, const std::vector<double>& b);

struct sensitivity_report {
  double float_loss = 0;  ///< the float model's validation loss
  std::vector<layer_sensitivity> rows;

  /// Spearman's ρ of each score against `measured`, over the layers of one candidate
  /// (SQNR negated: a low SQNR predicts a large loss); with several candidates, a last
  /// entry "all" over every (layer, candidate) pair: what a search across formats compares.
  struct correlation {
    std::string candidate;
    std::size_t layers = 0;
    double gradient = 0, hessian = 0, sqnr = 0;
  };
  XQ_DECL std::vector<correlation> rank_correlations() const;
  /// One line per row: layer, candidate, the four numbers.
  XQ_DECL std::string table() const;
  /// One line per candidate: ρ of each score.
  XQ_DECL std::string correlation_table() const;
};

namespace detail {

/// A layer's output value and the loss's gradient there, per call of the layer.
struct traced_output {
  std::vector<tensor> values, grads;
};

/// The outputs (and, after a backward, gradients) the traced pass left at each of `paths`.
XQ_DECL std::unordered_map<std::string, traced_output> outputs_at(const graph_trace& trace,
                                                                  const std::vector<std::string>& paths,
                                                                  bool with_grads);

/// Σ (g ⊙ (q − y))², Σ y², Σ (q − y)² over one layer's calls; shapes checked, naming `layer`.
struct output_error_sums {
  double gradient_score = 0, signal = 0, noise = 0;
};
XQ_DECL void add_output_errors(const traced_output& float_side, const traced_output& quantized_side,
                               const std::string& layer, output_error_sums& sums);

/// ‖a − b‖², in double.
XQ_DECL double squared_distance(const tensor& a, const tensor& b);
/// v · (a − b), in double.
XQ_DECL double dot_difference(const tensor& v, const tensor& a, const tensor& b);

/// The kernel (first weight_precisions() entry) of each layer at `paths` in `model` (a
/// quantized twin: its wrappers report their kernels); null where none.
template <class Model>
std::vector<parameter_ptr> kernels_at(Model& model, const std::vector<std::string>& paths) {
  std::vector<parameter_ptr> out(paths.size());
  for_each_layer(model, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (has_weight_precisions_v<L>)
      for (std::size_t i = 0; i < paths.size(); ++i)
        if (l.path() == paths[i] && !out[i]) {
          const auto w = l.weight_precisions();
          if (!w.empty()) out[i] = w.front().first;
        }
  });
  return out;
}

/// The paths of the layers whose kernel `twin` quantizes (fewer than 32 bits).
template <class Twin>
std::vector<std::string> quantized_kernel_layers(Twin& twin) {
  std::vector<std::string> out;
  for_each_layer(twin, [&](auto& l) {
    using L = std::remove_reference_t<decltype(l)>;
    if constexpr (has_weight_precisions_v<L>) {
      const auto w = l.weight_precisions();
      if (!w.empty() && w.front().second < 32) out.push_back(l.path());
    }
  });
  return out;
}

/// Batch k of `data` (rows k * size ...).
XQ_DECL batch batch_at(const dataset& data, std::size_t k, std::size_t size);

}  // namespace detail

/// The scores and the measured loss increase of every layer (options.layers) in every
/// candidate format (the file comment). `scores`: the data the estimated scores and the
/// calibration read (its first options.score_batches batches); `validation`: the data the
/// measured loss reads; `input_shape`: one sample's shape with its batch axis, for
/// quantize_model. The model's weights and gradients are left as they were.
template <class Model, class Loss>
sensitivity_report layer_sensitivities(Model& model, Loss loss, const dataset& scores, const dataset& validation,
                                       const std::vector<sensitivity_candidate>& candidates,
                                       const tensor::shape_type& input_shape, const sensitivity_options& o = {}) {
  constexpr const char* where = "xq::layer_sensitivities";
  if (candidates.empty()) throw argument_error(where, "at least one candidate format", "none");
  if (scores.size() == 0 || validation.size() == 0)
    throw argument_error(where, "score and validation data", "an empty dataset");
  const std::size_t batches = std::min(o.score_batches, batch_count(scores.size(), o.batch_size));
  if (batches == 0 || o.hutchinson_samples == 0)
    throw argument_error(where, "score_batches and hutchinson_samples of at least 1", "0");

  // What the call changes and gives back: the weights (perturbed) and every gradient.
  const std::vector<parameter_ptr> params = parameters(model);
  std::vector<std::pair<tensor, bool>> saved_grads;
  for (const auto& p : params) saved_grads.emplace_back(p->grad, p->has_grad());
  const auto restore_grads = [&] {
    for (std::size_t i = 0; i < params.size(); ++i) {
      params[i]->zero_grad();
      if (saved_grads[i].second) params[i]->accumulate_grad(saved_grads[i].first);
    }
  };
  const auto zero_grads = [&] {
    for (const auto& p : params) p->zero_grad();
  };

  quantize_options base;
  base.scheme = candidates.front().scheme;
  std::vector<std::string> layers = o.layers;
  std::vector<parameter_ptr> kernels;
  {
    // The full twin's wrappers name their kernels (the model's own parameters).
    auto full = quantize_model(model, base, input_shape);
    if (layers.empty()) layers = detail::quantized_kernel_layers(full);
    kernels = detail::kernels_at(full, layers);
  }
  for (std::size_t i = 0; i < layers.size(); ++i)
    if (!kernels[i]) throw argument_error(where, "layers with a kernel", layers[i] + ": none");

  sensitivity_report report;
  report.float_loss = evaluate(model, loss, validation, o.batch_size).loss;

  // The float side: each layer's outputs and the loss gradient there, batch by batch.
  std::vector<std::unordered_map<std::string, detail::traced_output>> float_outputs;
  std::unordered_map<std::string, std::string> types;  // each scored layer's type
  const auto gradients = [&](bool keep_outputs) {
    zero_grads();
    const training_mode inference(false);
    for (std::size_t k = 0; k < batches; ++k) {
      const batch b = detail::batch_at(scores, k, o.batch_size);
      tape t;
      graph_trace trace;
      const var y = model(var(b.inputs));
      t.backward(loss(y, var(b.targets)));
      if (!keep_outputs) continue;
      float_outputs.push_back(detail::outputs_at(trace, layers, true));
      for (const traced_call& c : trace.calls())
        if (!c.function) types.emplace(c.path, c.type);
    }
  };

  // The kernels as they are, and each one's finite-difference step.
  std::vector<tensor> originals;
  std::vector<float> steps;
  for (const auto& w : kernels) {
    originals.push_back(w->value);
    const double rms = std::sqrt(detail::squared_distance(w->value, tensor(xt::zeros_like(w->value))) /
                                 double(w->value.size() ? w->value.size() : 1));
    steps.push_back(o.finite_difference_step * float(rms > 0 ? rms : 1.0));
  }
  const auto restore = [&] {
    for (std::size_t i = 0; i < kernels.size(); ++i) kernels[i]->value = originals[i];
    restore_grads();
  };

  try {
    gradients(true);
    // Hutchinson: one Rademacher vector over every kernel per sample.
    std::vector<double> traces(layers.size(), 0.0);
    std::mt19937 rng(o.seed);
    std::bernoulli_distribution coin(0.5);
    for (std::size_t s = 0; s < o.hutchinson_samples; ++s) {
      std::vector<tensor> v;
      for (const auto& w : kernels) {
        tensor r = tensor::from_shape(w->value.shape());
        for (float& e : r) e = coin(rng) ? 1.0f : -1.0f;
        v.push_back(std::move(r));
      }
      std::vector<tensor> plus;
      for (const float sign : {1.0f, -1.0f}) {
        for (std::size_t i = 0; i < kernels.size(); ++i) kernels[i]->value = originals[i] + (sign * steps[i]) * v[i];
        gradients(false);
        for (std::size_t i = 0; i < kernels.size(); ++i) {
          if (!kernels[i]->has_grad()) throw argument_error(where, "a loss that reaches every scored kernel", layers[i]);
          if (sign > 0) plus.push_back(kernels[i]->grad);
          else traces[i] += detail::dot_difference(v[i], plus[i], kernels[i]->grad) / (2.0 * double(steps[i]));
        }
      }
      for (std::size_t i = 0; i < kernels.size(); ++i) kernels[i]->value = originals[i];
    }
    for (double& t : traces) t /= double(o.hutchinson_samples);

    for (const sensitivity_candidate& c : candidates) {
      quantize_options q;
      q.scheme = c.scheme;
      auto twin = quantize_model(model, q, input_shape);
      std::vector<std::pair<quantizer_base*, bool>> placed;  // every quantizer the scheme turned on
      for_each_quantizer(twin, [&](quantizer_base& qz) { placed.emplace_back(&qz, qz.enabled()); });
      for (std::size_t i = 0; i < layers.size(); ++i) {
        // The layer alone, as the scheme quantizes it in the whole model.
        const std::string own = layers[i] + "/";
        for (auto& [qz, on] : placed) qz->enable(on && qz->path().compare(0, own.size(), own) == 0);
        if (c.calibrate) {
          calibration_options co;
          co.method = calibration_method::max;
          co.batch_size = o.batch_size;
          calibrate(twin, detail::slice_rows(scores.inputs, 0, std::min(scores.size(), batches * o.batch_size)), co);
        }
        layer_sensitivity row;
        row.layer = layers[i];
        row.candidate = c.name;
        row.weights = kernels[i]->value.size();
        if (const auto it = types.find(layers[i]); it != types.end()) row.type = it->second;
        row.hessian_trace = traces[i];
        // HAWQ: the kernel as this twin quantizes it.
        const std::string kernel_quantizer = layers[i] + "/kernel_quantizer";
        bool found = false;
        for_each_quantizer(twin, [&](quantizer_base& qz) {
          if (found || qz.path() != kernel_quantizer || !qz.enabled()) return;
          found = true;
          // The format's nominal bits (whole blocks: element plus scale), or the grid's width.
          const low_bit_format format = qz.dynamic_format();
          row.bits_per_weight = format ? bits_per_value(format, std::size_t(1) << 20) : double(qz.precision());
          const no_grad nothing_recorded;
          const training_mode inference(false);
          const tensor quantized = qz(var(kernels[i]->value)).value();
          row.hessian_score =
              traces[i] / double(row.weights ? row.weights : 1) * detail::squared_distance(quantized, kernels[i]->value);
        });
        // Model Optimizer's and AIMET's scores: the twin's layer output on the same batches.
        detail::output_error_sums sums;
        {
          const no_grad nothing_recorded;
          const training_mode inference(false);
          for (std::size_t k = 0; k < batches; ++k) {
            const batch b = detail::batch_at(scores, k, o.batch_size);
            graph_trace trace;
            (void)twin(var(b.inputs));
            const auto quantized = detail::outputs_at(trace, {layers[i]}, false);
            detail::add_output_errors(float_outputs[k].at(layers[i]), quantized.at(layers[i]), layers[i], sums);
          }
        }
        row.gradient_score = sums.gradient_score;
        row.sqnr_db = sums.noise > 0 ? 10.0 * std::log10(sums.signal / sums.noise) : INFINITY;
        row.measured = evaluate(twin, loss, validation, o.batch_size).loss - report.float_loss;
        report.rows.push_back(std::move(row));
      }
    }
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return report;
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/sensitivity.ipp"
#endif
