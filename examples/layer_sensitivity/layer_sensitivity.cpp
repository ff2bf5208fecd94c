// Which layers can go low (issue 38): the Fashion-MNIST CNN (or a ResNet of examples/resnet)
// trained in float, then per layer and candidate format the peers' sensitivity scores —
// Model Optimizer's gradient score, HAWQ's Hessian trace times the weight perturbation,
// AIMET's output SQNR — and the measured one, the test loss with that layer alone quantized
// (train/sensitivity.hpp). It prints the table and Spearman's rho of each score's
// ranking of the layers against the measured ranking, per format: which score to trust.
//
//   layer_sensitivity --quick                 12,000 images, 2 float epochs
//   layer_sensitivity --model resnet_v1       a ResNet (more layers: a finer ranking)
//   layer_sensitivity --model lm              the character transformer LM of examples/transformer_lm
//                                             on Debian's fortunes (--steps N float steps, default 600)
//   options: --epochs N --train-size N --test-size N --batch N --seed N --data DIR
//            --formats int8,w4a8,mxfp4,nvfp4,8da4w,int4_weight_only,fp8
//            --score-batches N  --hutchinson N
//
// Then the search (train/format_budget.hpp) against uniform formats, post-training: each
// candidate on every scored layer (`uniform=<f> bits=<b> loss=<l> metric=<m>`), and the formats
// HAWQ's score picks at 4.5, 5, 6 and 8 bits per kernel value as one twin (`budget=<b> bits=<e>
// predicted=<d> loss=<l> metric=<m> layer:format ...`).
//
// It ends with one line per format: `format=<f> layers=<n> rho_gradient=<r> rho_hawq=<r> rho_sqnr=<r>`.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <xquant/transform/low_bit_schemes.hpp>
#include <xquant/train/format_budget.hpp>
#include <xquant/train/sensitivity.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>

#include "../fashion_mnist/cnn.hpp"
#include "../fashion_mnist/run_options.hpp"
#include "../fashion_mnist/training.hpp"
#include "../resnet/resnet.hpp"
#include "../transformer_lm/lm_data.hpp"
#include "../transformer_lm/transformer.hpp"

namespace {

xq::sensitivity_candidate candidate(const std::string& name) {
  if (name == "int8") return {name, xq::schemes::nvidia(), true};
  if (name == "w4a8") return {name, xq::schemes::w4a8(32), true};
  if (name == "mxfp4") return {name, xq::schemes::mx(), false};
  if (name == "nvfp4") return {name, xq::schemes::nvfp4(), false};
  if (name == "8da4w") return {name, xq::schemes::torchao_8da4w(32), false};
  if (name == "int4_weight_only") return {name, xq::schemes::torchao_intx_weight_only(4, 32), false};
  if (name == "fp8") return {name, xq::schemes::torchao_float8_dynamic(), false};
  throw std::invalid_argument("--formats: expected int8, w4a8, mxfp4, nvfp4, 8da4w, int4_weight_only or fp8, given " +
                              name);
}

/// Post-training quantization of `model` as `options` says, calibrated on `calibration` where
/// `calibrate`, evaluated on `test`: its loss and metric.
template <class Model>
xq::evaluation ptq(Model& model, const xq::quantize_options& options, bool calibrate, const xq::dataset& calibration,
                   const xq::dataset& test, const xq::tensor::shape_type& input_shape) {
  auto twin = xq::quantize_model(model, options, input_shape);
  if (calibrate) {
    xq::calibration_options co;
    co.method = xq::calibration_method::max;
    xq::calibrate(twin, xq::detail::slice_rows(calibration.inputs, 0, std::min<std::size_t>(512, calibration.size())),
                  co);
  }
  return xq::evaluate(twin, xq::sparse_softmax_cross_entropy, test, 250);
}

/// The search against uniform formats, post-training: each candidate on every scored layer
/// (`uniform=<f> bits=<b> loss=<l> metric=<m>`), then the formats HAWQ's score picks under a
/// few budgets, as one twin (`budget=<b> bits=<e> predicted=<d> loss=<l> metric=<m> layer:format ...`).
/// Bits per kernel value over the scored layers, block scales as the summary counts them.
template <class Model>
void print_budgets(Model& model, const xq::sensitivity_report& report,
                   const std::vector<xq::sensitivity_candidate>& formats, const xq::dataset& calibration,
                   const xq::dataset& test, const xq::tensor::shape_type& input_shape) {
  std::vector<std::string> layers;
  for (const auto& r : report.rows)
    if (std::find(layers.begin(), layers.end(), r.layer) == layers.end()) layers.push_back(r.layer);
  for (const auto& f : formats) {
    xq::format_assignment all;
    double bits = 0, weights = 0;
    for (const auto& r : report.rows)
      if (r.candidate == f.name) {
        all.layer_format.emplace_back(r.layer, f.name);
        bits += r.bits_per_weight * double(r.weights);
        weights += double(r.weights);
      }
    xq::quantize_options o;
    o.mode = xq::quantization_mode::partial;
    o.spec = xq::to_spec(all, report, formats);
    const auto e = ptq(model, o, f.calibrate, calibration, test, input_shape);
    std::printf("uniform=%s bits=%.3f loss=%.4f metric=%.4f\n", f.name.c_str(), weights ? bits / weights : 0.0, e.loss,
                e.metric.value_or(0));
  }
  for (const double budget : {4.5, 5.0, 6.0, 8.0}) {
    const auto a = xq::choose_formats(report, budget);
    std::printf("budget=%.2f", budget);
    if (!a.solution.feasible) {
      std::printf(" infeasible\n");
      continue;
    }
    bool calibrate = false;
    for (const auto& lf : a.layer_format)
      for (const auto& f : formats) calibrate |= f.name == lf.second && f.calibrate;
    xq::quantize_options o;
    o.mode = xq::quantization_mode::partial;
    o.spec = xq::to_spec(a, report, formats);
    const auto e = ptq(model, o, calibrate, calibration, test, input_shape);
    std::printf(" bits=%.3f predicted=%.4g loss=%.4f metric=%.4f", a.bits_per_weight, a.predicted_damage, e.loss,
                e.metric.value_or(0));
    for (const auto& lf : a.layer_format) std::printf(" %s:%s", lf.first.c_str(), lf.second.c_str());
    std::printf("\n");
  }
}

template <class Model>
void run(Model model, const std::string& name, const std::vector<xq::sensitivity_candidate>& formats,
         const fashion::run_options& s, const xq::sensitivity_options& o) {
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto [train, test] = fashion::load_splits(s);
  std::cout << "layer_sensitivity: " << name << ", " << train.size() << " training images, " << test.size()
            << " test images, " << s.epochs << " float epochs\n";
  xq::build(model, {1, 28, 28, 1});
  fashion::train(model, train, s.epochs, 2e-3f, s);
  std::printf("float: test_loss=%.4f (%.0f s)\n",
              xq::evaluate(model, xq::sparse_softmax_cross_entropy, test, 500).loss, seconds());
  // The scores read training images (as a calibration set would be), the measurement the test split.
  const auto report = xq::layer_sensitivities(model, xq::sparse_softmax_cross_entropy, train, test, formats,
                                              {1, 28, 28, 1}, o);
  std::cout << report.table() << "\n" << report.correlation_table();
  print_budgets(model, report, formats, train, test, {1, 28, 28, 1});
  for (const auto& c : report.rank_correlations())
    std::printf("format=%s layers=%zu rho_gradient=%.3f rho_hawq=%.3f rho_sqnr=%.3f\n", c.candidate.c_str(), c.layers,
                c.gradient, c.hessian, c.sqnr);
  std::printf("seconds=%.0f\n", seconds());
}

/// The transformer LM: trained `steps` batches in float on fortunes, then scored (its
/// embedding and tied projection are not candidates: the schemes quantize the dense layers).
void run_lm(const std::vector<xq::sensitivity_candidate>& formats, std::size_t steps, const fashion::run_options& s,
            xq::sensitivity_options o) {
  const auto start = std::chrono::steady_clock::now();
  const lm::corpus c = lm::encode(lm::read_text(s.data_dir.empty() ? "/usr/share/games/fortunes" : s.data_dir));
  lm::shape shape;
  shape.vocab = c.vocab;
  const lm::splits data = lm::make_windows(c, shape.context, s.test_size ? s.test_size : 1000);
  xq::set_seed(s.seed);
  lm::transformer_lm<> model(shape);
  xq::build(model, {1, shape.context});
  lm::train(model, data.train, steps, 32, 2e-3f, s.seed);
  std::printf("layer_sensitivity: lm, %zu float steps, held-out loss %.4f (%.0f s)\n", steps,
              xq::evaluate(model, xq::sparse_softmax_cross_entropy, data.held_out, 250).loss, lm::seconds_since(start));
  o.batch_size = 32;
  const auto report = xq::layer_sensitivities(model, xq::sparse_softmax_cross_entropy, data.train, data.held_out,
                                              formats, {1, shape.context}, o);
  std::cout << report.table() << "\n" << report.correlation_table();
  print_budgets(model, report, formats, data.train, data.held_out, {1, shape.context});
  for (const auto& r : report.rank_correlations())
    std::printf("format=%s layers=%zu rho_gradient=%.3f rho_hawq=%.3f rho_sqnr=%.3f\n", r.candidate.c_str(), r.layers,
                r.gradient, r.hessian, r.sqnr);
  std::printf("seconds=%.0f\n", lm::seconds_since(start));
}

}  // namespace

int main(int argc, char** argv) try {
  std::string model = "cnn", formats = "int8,w4a8,mxfp4,nvfp4";
  std::size_t lm_steps = 600;
  xq::sensitivity_options o;
  const fashion::run_options s = fashion::parse_options(argc, argv, {}, [&](const std::string& name, const auto& value) {
    if (name == "--model") model = value();
    else if (name == "--formats") formats = value();
    else if (name == "--score-batches") o.score_batches = std::stoul(value());
    else if (name == "--hutchinson") o.hutchinson_samples = std::stoul(value());
    else if (name == "--steps") lm_steps = std::stoul(value());
    else return false;
    return true;
  });
  std::vector<xq::sensitivity_candidate> chosen;
  std::stringstream list(formats);
  for (std::string f; std::getline(list, f, ',');) chosen.push_back(candidate(f));
  o.batch_size = s.batch;
  if (model == "lm") run_lm(chosen, lm_steps, s, o);
  else if (model == "cnn") run(fashion::make_cnn(s.seed), model, chosen, s, o);
  else if (model == "resnet_v1") run(resnet::make_resnet_v1(s.seed), model, chosen, s, o);
  else throw std::invalid_argument("--model: expected cnn, resnet_v1 or lm, given " + model);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "layer_sensitivity: " << e.what() << "\n";
  return 1;
}
