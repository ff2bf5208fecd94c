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
//            --score-batches N  --hutchinson N  --qat-steps N  --plot FILE.svg
//
// Then the search (train/format_budget.hpp) against uniform formats — the Pareto table: each
// candidate on every scored layer (`uniform=<f> bits=<b> ptq_loss=.. ptq_metric=.. qat_loss=..
// qat_metric=..`), and the formats HAWQ's score picks as one twin at each uniform format's own
// bits per kernel value and at 6 (`budget=<b> bits=<e> predicted=<d> ... layer:format ...`), each
// the twin of a copy of the float model, after PTQ and after --qat-steps N steps of QAT (0, the
// default: PTQ only); then per uniform format `same_budget uniform=<f> ... search_better_or_equal`
// or `search_worse`; --plot FILE.svg writes the table as a self-contained SVG plot.
//
// It ends with one line per format: `format=<f> layers=<n> rho_gradient=<r> rho_hawq=<r> rho_sqnr=<r>`.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/io/atomic_file.hpp>
#include <xquant/summary/scatter_plot.hpp>
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

/// What the Pareto table runs: QAT steps per point (0: PTQ only), its batch and rate, the plot file.
struct pareto_settings {
  std::size_t qat_steps = 0, batch = 64;
  float learning_rate = 2e-4f;
  unsigned seed = 1;
  std::string plot, title;
};

/// One point of the Pareto table: a twin's bits per kernel value and its test loss and
/// metric after PTQ and (with --qat-steps) after QAT.
struct pareto_point {
  std::string label;  // "mxfp4" or "budget 4.50"
  bool searched = false;
  double budget = 0, bits = 0, predicted = 0;
  xq::evaluation ptq, qat;
  std::vector<std::pair<std::string, std::string>> layer_format;
};

/// The twin of a copy of `model` under `options` (the float model stays as it is),
/// calibrated where asked, evaluated after PTQ and after `qat_steps` steps of QAT.
template <class Model>
void measure(Model& model, const xq::quantize_options& options, bool calibrate, const xq::dataset& train,
             const xq::dataset& test, const xq::tensor::shape_type& input_shape, const pareto_settings& p,
             pareto_point& point) {
  auto copy = xq::clone_model(model);
  auto twin = xq::quantize_model(copy, options, input_shape);
  if (calibrate) {
    xq::calibration_options co;
    co.method = xq::calibration_method::max;
    xq::calibrate(twin, xq::detail::slice_rows(train.inputs, 0, std::min<std::size_t>(512, train.size())), co);
  }
  point.ptq = xq::evaluate(twin, xq::sparse_softmax_cross_entropy, test, 250);
  point.qat = point.ptq;
  if (p.qat_steps == 0) return;
  lm::train_with(twin, xq::trainable_parameters(twin), xq::sparse_softmax_cross_entropy, train, p.qat_steps, p.batch,
                 p.learning_rate, p.seed);
  point.qat = xq::evaluate(twin, xq::sparse_softmax_cross_entropy, test, 250);
}

/// The search against uniform formats: each candidate on every scored layer (`uniform=<f>
/// bits=<b> ...`), then the formats HAWQ's score picks under each uniform format's own bits
/// (the same budget) and 6 bits, as one twin (`budget=<b> bits=<e> predicted=<d> ...
/// layer:format ...`); losses and metrics after PTQ and after QAT; then, per uniform format,
/// whether the search at its budget did better; and the plot (--plot).
/// Bits per kernel value over the scored layers, block scales as the summary counts them.
template <class Model>
void print_budgets(Model& model, const xq::sensitivity_report& report,
                   const std::vector<xq::sensitivity_candidate>& formats, const xq::dataset& train,
                   const xq::dataset& test, const xq::tensor::shape_type& input_shape, const pareto_settings& p) {
  std::vector<pareto_point> uniform, searched;
  const auto print = [&](const pareto_point& q) {
    if (q.searched) std::printf("budget=%.3f bits=%.3f", q.budget, q.bits);
    else std::printf("uniform=%s bits=%.3f", q.label.c_str(), q.bits);
    if (q.searched) std::printf(" predicted=%.4g", q.predicted);
    std::printf(" ptq_loss=%.4f ptq_metric=%.4f qat_loss=%.4f qat_metric=%.4f", q.ptq.loss, q.ptq.metric.value_or(0),
                q.qat.loss, q.qat.metric.value_or(0));
    for (const auto& lf : q.layer_format) std::printf(" %s:%s", lf.first.c_str(), lf.second.c_str());
    std::printf("\n");
    std::fflush(stdout);
  };
  std::vector<double> budgets{6.0};
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
    pareto_point q;
    q.label = f.name;
    q.bits = weights ? bits / weights : 0.0;
    measure(model, o, f.calibrate, train, test, input_shape, p, q);
    print(q);
    uniform.push_back(q);
    budgets.push_back(q.bits);
  }
  std::sort(budgets.begin(), budgets.end());
  budgets.erase(std::unique(budgets.begin(), budgets.end(), [](double a, double b) { return std::abs(a - b) < 1e-9; }),
                budgets.end());
  for (const double budget : budgets) {
    const auto a = xq::choose_formats(report, budget);
    if (!a.solution.feasible) {
      std::printf("budget=%.3f infeasible\n", budget);
      continue;
    }
    bool calibrate = false;
    for (const auto& lf : a.layer_format)
      for (const auto& f : formats) calibrate |= f.name == lf.second && f.calibrate;
    xq::quantize_options o;
    o.mode = xq::quantization_mode::partial;
    o.spec = xq::to_spec(a, report, formats);
    pareto_point q;
    q.searched = true;
    q.budget = budget;
    char label[32];
    std::snprintf(label, sizeof label, "budget %.2f", budget);
    q.label = label;
    q.bits = a.bits_per_weight;
    q.predicted = a.predicted_damage;
    q.layer_format = a.layer_format;
    measure(model, o, calibrate, train, test, input_shape, p, q);
    print(q);
    searched.push_back(q);
  }
  // The search against each uniform format at that format's own budget.
  const char* stage = p.qat_steps ? "qat" : "ptq";
  for (const pareto_point& u : uniform)
    for (const pareto_point& q : searched)
      if (std::abs(q.budget - u.bits) < 1e-9) {
        const double ul = p.qat_steps ? u.qat.loss : u.ptq.loss, ql = p.qat_steps ? q.qat.loss : q.ptq.loss;
        std::printf("same_budget uniform=%s bits=%.3f %s_loss uniform=%.4f search=%.4f search_bits=%.3f search_%s\n",
                    u.label.c_str(), u.bits, stage, ul, ql, q.bits, ql <= ul ? "better_or_equal" : "worse");
      }
  if (p.plot.empty()) return;
  xq::plot_series su{"uniform formats", {}, false, true}, ss{"searched (HAWQ score, knapsack)", {}, true, false};
  for (const auto& u : uniform) su.points.push_back({u.bits, p.qat_steps ? u.qat.loss : u.ptq.loss, u.label});
  for (const auto& q : searched) ss.points.push_back({q.bits, p.qat_steps ? q.qat.loss : q.ptq.loss, q.label});
  xq::plot_options po;
  po.title = p.title + (p.qat_steps ? ": test loss after QAT" : ": test loss after PTQ");
  po.x_label = "bits per kernel value (element and block scales)";
  po.y_label = p.qat_steps ? "test loss after QAT" : "test loss after PTQ";
  const std::string svg = xq::scatter_plot_svg({ss, su}, po);
  xq::io::write_file_atomically(p.plot, std::vector<std::uint8_t>(svg.begin(), svg.end()));
  std::printf("plot: wrote %s\n", p.plot.c_str());
}

template <class Model>
void run(Model model, const std::string& name, const std::vector<xq::sensitivity_candidate>& formats,
         const fashion::run_options& s, const xq::sensitivity_options& o, pareto_settings p) {
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
  p.batch = s.batch;
  p.seed = s.seed;
  p.title = "Fashion-MNIST " + name;
  print_budgets(model, report, formats, train, test, {1, 28, 28, 1}, p);
  for (const auto& c : report.rank_correlations())
    std::printf("format=%s layers=%zu rho_gradient=%.3f rho_hawq=%.3f rho_sqnr=%.3f\n", c.candidate.c_str(), c.layers,
                c.gradient, c.hessian, c.sqnr);
  std::printf("seconds=%.0f\n", seconds());
}

/// The transformer LM: trained `steps` batches in float on fortunes, then scored (its
/// embedding and tied projection are not candidates: the schemes quantize the dense layers).
void run_lm(const std::vector<xq::sensitivity_candidate>& formats, std::size_t steps, const fashion::run_options& s,
            xq::sensitivity_options o, pareto_settings p) {
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
  p.batch = 32;
  p.seed = s.seed + 1;
  p.title = "character transformer LM";
  print_budgets(model, report, formats, data.train, data.held_out, {1, shape.context}, p);
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
  pareto_settings p;
  const fashion::run_options s = fashion::parse_options(argc, argv, {}, [&](const std::string& name, const auto& value) {
    if (name == "--model") model = value();
    else if (name == "--formats") formats = value();
    else if (name == "--score-batches") o.score_batches = std::stoul(value());
    else if (name == "--hutchinson") o.hutchinson_samples = std::stoul(value());
    else if (name == "--steps") lm_steps = std::stoul(value());
    else if (name == "--qat-steps") p.qat_steps = std::stoul(value());
    else if (name == "--plot") p.plot = value();
    else return false;
    return true;
  });
  std::vector<xq::sensitivity_candidate> chosen;
  std::stringstream list(formats);
  for (std::string f; std::getline(list, f, ',');) chosen.push_back(candidate(f));
  o.batch_size = s.batch;
  if (model == "lm") run_lm(chosen, lm_steps, s, o, p);
  else if (model == "cnn") run(fashion::make_cnn(s.seed), model, chosen, s, o, p);
  else if (model == "resnet_v1") run(resnet::make_resnet_v1(s.seed), model, chosen, s, o, p);
  else throw std::invalid_argument("--model: expected cnn, resnet_v1 or lm, given " + model);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "layer_sensitivity: " << e.what() << "\n";
  return 1;
}
