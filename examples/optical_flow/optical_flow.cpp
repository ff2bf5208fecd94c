// Optical flow with a shared feature extractor, float then int8: the first request's
// network (flow_net.hpp), trained on synthetic pairs made by moving real Fashion-MNIST
// images along known smooth flows (flow_data.hpp). It trains in float, then fine-tunes two
// quantized copies of the float model with NVIDIA's scheme and batch norms folded:
//
//   shared ranges      the extractor's quantizers keep one range for both frames (default)
//   per-call-site      each call of the extractor (frame 1, frame 2) has its own ranges
//
// and, as a control, a float copy trained on for as many epochs at the same rate (so that
// the int8 figures compare with a model trained as long). It prints the end-point error
// (EPE, pixels) of each on held-out pairs, and the ranges the two calls of the extractor saw.
// The per-call-site model then deploys both ways, from one deploy graph: lowered to
// xquant's integer engine (its correlations exact int32 sums of the feature maps'
// integers), and exported as an ONNX file of two inputs (its correlations in standard
// operators) that onnxruntime runs when given a Python with it. It prints each one's EPE,
// the engine's integers against the simulation's and onnxruntime's against the engine's,
// quantized tensor by quantized tensor (identical, within one step, the rest counted).
//
//   optical_flow              full mode: 60,000 training pairs, 6 float + 2 QAT epochs
//   optical_flow --quick      12,000 pairs, 2 + 1 epochs
//   options: --epochs N  --qat-epochs N  --train-size N  --test-size N  --batch N
//            --seed N  --data DIR (Fashion-MNIST's IDX files)
//            --export-dir DIR (default optical_flow_export)  --onnxruntime PYTHON
//
// It ends with one line:
//   optical_flow float_epe=<e> float_continued_epe=<c> int8_shared_epe=<s> int8_per_call_site_epe=<p>
//                worst_int8_vs_float=<+r%> engine_epe=<g> onnxruntime_epe=<r (-1: not run)>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/deploy/export_onnx.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/io/npy.hpp>
#include <xquant/io/fashion_mnist.hpp>
#include <xquant/quantizers/model_quantizers.hpp>
#include <xquant/summary/print_summary.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/schedule.hpp>
#include <xquant/transform/quantize_model.hpp>
#include <xtensor/xview.hpp>

#include "../common/command_line.hpp"
#include "flow_data.hpp"
#include "flow_net.hpp"

#ifndef XQ_ONNX_CHECK
#define XQ_ONNX_CHECK "tools/onnx_check.py"
#endif

namespace {

struct options {
  std::size_t epochs = 6, qat_epochs = 2, train_size = 60000, test_size = 5000, batch = 32;
  unsigned seed = 1;
  std::string data;
  std::string export_dir = "optical_flow_export";  ///< where the ONNX file and its inputs go
  std::string onnx_python;                         ///< a Python with onnx and onnxruntime
};

options parse(int argc, char** argv) {
  options o;
  examples::for_each_option(argc, argv, [&](const std::string& a, auto next) {
    if (a == "--quick") {
      o.epochs = 2;
      o.qat_epochs = 1;
      o.train_size = 12000;
      o.test_size = 2000;
    } else if (a == "--epochs") o.epochs = std::stoul(next());
    else if (a == "--qat-epochs") o.qat_epochs = std::stoul(next());
    else if (a == "--train-size") o.train_size = std::stoul(next());
    else if (a == "--test-size") o.test_size = std::stoul(next());
    else if (a == "--batch") o.batch = std::stoul(next());
    else if (a == "--seed") o.seed = static_cast<unsigned>(std::stoul(next()));
    else if (a == "--data") o.data = next();
    else if (a == "--export-dir") o.export_dir = next();
    else if (a == "--onnxruntime") o.onnx_python = next();
    else return false;
    return true;
  }, " (see the comment at the top of optical_flow.cpp)");
  if (o.epochs == 0 || o.batch == 0 || o.train_size == 0 || o.test_size == 0)
    throw std::invalid_argument("--epochs, --batch, --train-size and --test-size must be positive");
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// EPE as fit's and evaluate's metric (a batch mean, weighted by the batch's rows).
double epe_metric(const xq::tensor& outputs, const xq::tensor& targets) {
  return flow::end_point_error(outputs, targets);
}

template <class Model>
double held_out_epe(Model& m, const xq::dataset& test) {
  return xq::evaluate(m, xq::mean_squared_error, test, 500, epe_metric).metric.value_or(-1);
}

/// Adam with a cosine decay over the run's steps; returns pairs per second.
template <class Model>
double train(Model& m, const xq::dataset& data, std::size_t epochs, std::size_t batch, float rate, unsigned seed) {
  xq::fit_options fo;
  fo.epochs = epochs;
  fo.batch_size = batch;
  fo.seed = seed;
  fo.metric = epe_metric;
  fo.metric_name = "epe";
  const std::size_t steps = epochs * ((data.size() + batch - 1) / batch);
  xq::adam opt(xq::trainable_parameters(m), {xq::cosine_decay{rate, steps, 0.02f}});
  const auto t0 = std::chrono::steady_clock::now();
  xq::fit(m, opt, xq::mean_squared_error, data, fo);
  return static_cast<double>(epochs * data.size()) / seconds_since(t0);
}

/// The input ranges of the extractor's convolutions, per quantizer path: one path shared
/// by both frames, or one per call site ("..._0" frame 1, "..._1" frame 2).
template <class Twin>
std::map<std::string, std::pair<float, float>> extractor_input_ranges(Twin& q) {
  std::map<std::string, std::pair<float, float>> out;
  xq::for_each_quantizer(q, [&](const xq::fake_quantizer& fq) {
    const std::string& p = fq.path();
    if (fq.enabled() && fq.built() && p.rfind("extractor/", 0) == 0 && p.find("/input_quantizer") != std::string::npos)
      out[p] = {fq.min().front(), fq.max().front()};
  });
  return out;
}

/// What the deployed flow net scored: the engine's and onnxruntime's EPE on the test pairs
/// (negative: not run), and over every quantized tensor the smallest share of identical
/// integers and of integers within one step, with the elements further away counted.
struct deployment_figures {
  double engine_epe = -1, onnxruntime_epe = -1;
  double engine_identical = 1, engine_within_one = 1, onnxruntime_identical = 1, onnxruntime_within_one = 1;
  std::size_t engine_beyond_one = 0, onnxruntime_beyond_one = 0, tensors = 0;
};

/// (N, H, W, C) -> (N, C, H, W): how the ONNX file exposes a spatial tensor's integers.
xq::tensor to_nchw(const xq::tensor& t) {
  if (t.dimension() != 4) return t;
  const std::size_t n = t.shape()[0], h = t.shape()[1], w = t.shape()[2], c = t.shape()[3];
  xq::tensor y = xq::tensor::from_shape({n, c, h, w});
  for (std::size_t b = 0; b < n; ++b)
    for (std::size_t i = 0; i < h; ++i)
      for (std::size_t j = 0; j < w; ++j)
        for (std::size_t k = 0; k < c; ++k) y(b, k, i, j) = t(b, i, j, k);
  return y;
}

/// A file name for a tensor's label (onnx_check.py's rule for saved outputs).
std::string safe_name(const std::string& s) {
  std::string r;
  for (char c : s) r += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_';
  return r;
}

/// The per-call-site int8 flow net deployed both ways, from the same deploy graph: lowered
/// to the integer engine (its EPE, and its integers against the simulation's at every
/// quantized tensor: the parity report), and exported as ONNX of two inputs (its correlations
/// in standard operators) that onnxruntime runs when given a Python with it (tools/
/// onnx_check.py, its optimized path: its EPE on every test pair, and its integers against
/// the engine's on the first `compared` pairs, every quantized tensor exposed).
template <class Twin>
deployment_figures deploy(Twin& qat, const xq::input_shapes& shapes, const xq::dataset& test, const options& o) {
  deployment_figures f;
  const std::vector<xq::tensor> frames{test.input(0), test.input(1)};
  const xq::deploy::integer_model engine = xq::deploy::lower(qat, shapes);
  f.engine_epe = flow::end_point_error(engine.run(frames).at(0), test.targets);
  const xq::deploy::parity_report parity = xq::deploy::parity(qat, engine, frames);
  std::printf("integer engine against the simulation, every quantized tensor (%zu test pairs):\n%s", test.size(),
              parity.table().c_str());
  for (const auto& row : parity.rows) {
    f.engine_identical = std::min(f.engine_identical, row.share());
    f.engine_within_one = std::min(f.engine_within_one, row.share_within_one_step());
    f.engine_beyond_one += row.elements - row.within_one_step;
  }
  f.tensors = parity.rows.size();

  std::filesystem::create_directories(o.export_dir);
  const std::string base = o.export_dir + "/optical_flow";
  xq::deploy::export_options eo;
  eo.input_names = {"frame_1", "frame_2"};
  eo.output_names = {"flow"};
  eo.expose_quantized = true;
  xq::deploy::export_onnx(qat, shapes, base + ".onnx", eo);
  std::printf("onnx: wrote %s.onnx\n", base.c_str());
  if (o.onnx_python.empty()) {
    std::printf("onnx: onnxruntime not run (give --onnxruntime PYTHON)\n");
    return f;
  }
  auto run_onnxruntime = [&](const std::vector<xq::tensor>& in, const std::string& expected, const std::string& out) {
    xq::io::save_npy(base + ".frame_1.npy", in[0]);
    xq::io::save_npy(base + ".frame_2.npy", in[1]);
    const std::string cmd = "'" + o.onnx_python + "' '" XQ_ONNX_CHECK "' '" + base + ".onnx' --input frame_1='" + base +
                            ".frame_1.npy' --input frame_2='" + base + ".frame_2.npy'" + expected +
                            " --min-share 0 --paths optimized --save-outputs '" + out + "' > '" + out + ".log' 2>&1";
    return std::system(cmd.c_str()) == 0;
  };
  // The EPE on every test pair.
  xq::io::save_npy(base + ".flow.npy", engine.run(frames).at(0));
  if (!run_onnxruntime(frames, " --expected flow='" + base + ".flow.npy'", o.export_dir + "/onnxruntime")) {
    std::printf("onnx: the onnxruntime run failed (%s/onnxruntime.log)\n", o.export_dir.c_str());
    return f;
  }
  f.onnxruntime_epe = flow::end_point_error(xq::io::load_npy(o.export_dir + "/onnxruntime/optimized.flow.npy"), test.targets);
  // The integers, quantized tensor by quantized tensor, on the first pairs.
  const std::size_t compared = std::min<std::size_t>(256, test.size());
  std::vector<xq::tensor> first;
  for (const xq::tensor& x : frames) first.push_back(xt::eval(xt::view(x, xt::range(0, compared))));
  const std::vector<xq::deploy::engine_tensor> values = engine.run_all(first);
  std::string expected;
  std::vector<std::pair<std::string, xq::tensor>> ours;
  for (std::size_t k = 0; k < engine.parity_points.size(); ++k) {
    const auto& p = engine.parity_points[k];
    if (p.binary) continue;
    const auto q = values.at(p.value).integers();
    xq::tensor t = xq::tensor::from_shape(values.at(p.value).shape);
    std::copy(q.begin(), q.end(), t.begin());
    const std::string name = "q:" + p.label, file = base + ".q" + std::to_string(k) + ".npy";
    xq::io::save_npy(file, to_nchw(t));
    expected += " --expected '" + name + "=" + file + "'";
    ours.emplace_back(name, to_nchw(t));
  }
  if (!run_onnxruntime(first, expected, o.export_dir + "/integers")) {
    std::printf("onnx: the onnxruntime run failed (%s/integers.log)\n", o.export_dir.c_str());
    return f;
  }
  std::printf("onnxruntime against the integer engine, every quantized tensor (%zu test pairs):\n", compared);
  for (const auto& [name, t] : ours) {
    const xq::tensor got = xq::io::load_npy(o.export_dir + "/integers/optimized." + safe_name(name) + ".npy");
    std::size_t identical = 0, within = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const double d = std::fabs(double(got.data()[i]) - double(t.data()[i]));
      identical += d == 0;
      within += d <= 1;
    }
    const double n = double(t.size());
    std::printf("  %-40s %9zu elements %9.5f%% identical %9.5f%% within one step\n", name.c_str(), t.size(),
                100.0 * identical / n, 100.0 * within / n);
    f.onnxruntime_identical = std::min(f.onnxruntime_identical, identical / n);
    f.onnxruntime_within_one = std::min(f.onnxruntime_within_one, within / n);
    f.onnxruntime_beyond_one += t.size() - within;
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) try {
  const options o = parse(argc, argv);
  const auto train_images =
      xq::io::load_fashion_mnist("train", o.data.empty() ? xq::io::default_fashion_mnist_dir() : o.data);
  const auto test_images =
      xq::io::load_fashion_mnist("test", o.data.empty() ? xq::io::default_fashion_mnist_dir() : o.data);
  const std::size_t n_train = std::min(o.train_size, train_images.images.shape()[0]);
  const std::size_t n_test = std::min(o.test_size, test_images.images.shape()[0]);
  const xq::dataset train_set = flow::make_pairs(train_images.images, 0, n_train, o.seed);
  const xq::dataset test_set = flow::make_pairs(test_images.images, 0, n_test, o.seed + 1000);
  xq::tensor zero_flow = xq::tensor::from_shape(test_set.targets.shape());
  std::fill(zero_flow.begin(), zero_flow.end(), 0.0f);
  std::printf("optical_flow: %zu training pairs, %zu test pairs (Fashion-MNIST frames, smooth synthetic flows); "
              "predicting zero flow scores EPE %.3f px on the test pairs\n",
              train_set.size(), test_set.size(), flow::end_point_error(zero_flow, test_set.targets));

  const xq::input_shapes shapes{{1, 28, 28, 1}, {1, 28, 28, 1}};
  xq::set_seed(o.seed);
  flow::flow_net<> model;
  xq::build(model, shapes);
  xq::print_summary(xq::summarize(model, shapes), std::cout);

  const auto t0 = std::chrono::steady_clock::now();
  const double float_rate = train(model, train_set, o.epochs, o.batch, 2e-3f, o.seed);
  const double float_epe = held_out_epe(model, test_set);
  std::printf("float: held-out EPE %.4f px after %zu epochs (%.0f pairs/s training, %.0f s)\n", float_epe, o.epochs,
              float_rate, seconds_since(t0));

  // The control: the float model trained on as the quantized copies are.
  double control_epe = 0;
  {
    const auto tc = std::chrono::steady_clock::now();
    auto control = xq::clone_model(model);
    const double rate = o.qat_epochs ? train(control, train_set, o.qat_epochs, o.batch, 2e-4f, o.seed + 1) : 0.0;
    control_epe = held_out_epe(control, test_set);
    std::printf("float continued (control): EPE after %zu more epochs %.4f px (%+.2f%% vs float); %.0f pairs/s, %.0f s\n",
                o.qat_epochs, control_epe, 100.0 * (control_epe / float_epe - 1.0), rate, seconds_since(tc));
  }

  struct result {
    const char* name;
    double before, after;
  };
  std::vector<result> results;
  deployment_figures deployed;
  for (const bool per_call_site : {false, true}) {
    const char* name = per_call_site ? "per_call_site" : "shared";
    const auto tv = std::chrono::steady_clock::now();
    auto copy = xq::clone_model(model);  // every variant starts from the same float model
    xq::quantize_options qo;
    qo.fold_batch_norm = true;
    // Batch statistics for the first half of the fine-tuning steps, then frozen moving
    // statistics (counted in calls: the extractor's norms run twice a step, so theirs
    // freeze after a quarter).
    qo.freeze_batch_norm_after = static_cast<long>(o.qat_epochs * train_set.size() / o.batch / 2);
    qo.per_call_site_ranges = per_call_site;
    auto qat = xq::quantize_model(copy, qo, shapes);
    const double before = held_out_epe(qat, test_set);
    const double rate = o.qat_epochs ? train(qat, train_set, o.qat_epochs, o.batch, 2e-4f, o.seed + 1) : 0.0;
    const double after = held_out_epe(qat, test_set);
    results.push_back({name, before, after});
    std::printf("qat %-13s: EPE before fine-tuning %.4f, after %zu epochs %.4f px (%+.2f%% vs float, %+.2f%% vs the "
                "control); %.0f pairs/s, %.0f s\n",
                name, before, o.qat_epochs, after, 100.0 * (after / float_epe - 1.0),
                100.0 * (after / control_epe - 1.0), rate, seconds_since(tv));
    for (const auto& [path, range] : extractor_input_ranges(qat))
      std::printf("    %s: [%.4f, %.4f]\n", path.c_str(), range.first, range.second);
    if (per_call_site) {
      deployed = deploy(qat, shapes, test_set, o);
      std::printf("optical_flow deployed (per_call_site): integer engine EPE %.4f px, onnxruntime EPE %.4f px; over the "
                  "%zu quantized tensors, the engine's integers against the simulation's: at least %.4f%% identical, "
                  "%.4f%% within one step (%zu elements further); onnxruntime's against the engine's: at least %.4f%% "
                  "identical, %.4f%% within one step (%zu elements further)\n",
                  deployed.engine_epe, deployed.onnxruntime_epe, deployed.tensors, 100.0 * deployed.engine_identical,
                  100.0 * deployed.engine_within_one, deployed.engine_beyond_one, 100.0 * deployed.onnxruntime_identical,
                  100.0 * deployed.onnxruntime_within_one, deployed.onnxruntime_beyond_one);
    }
  }

  double worst = -1.0;  // the largest relative change, negative when every int8 model beats float
  for (const result& r : results) worst = std::max(worst, r.after / float_epe - 1.0);
  std::printf("optical_flow float_epe=%.4f float_continued_epe=%.4f int8_shared_epe=%.4f int8_per_call_site_epe=%.4f "
              "worst_int8_vs_float=%+.2f%% engine_epe=%.4f onnxruntime_epe=%.4f seconds=%.0f\n",
              float_epe, control_epe, results[0].after, results[1].after, 100.0 * worst, deployed.engine_epe,
              deployed.onnxruntime_epe, seconds_since(t0));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "optical_flow: %s\n", e.what());
  return 1;
}
