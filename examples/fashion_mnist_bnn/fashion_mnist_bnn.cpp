// A binarized CNN on Fashion-MNIST, Larq's recipe in xquant (bnn.hpp: binary inputs and
// weights in every hidden conv and dense layer; float image in, float logits out).
//
// It prints the model summary (parameters by bit width, memory, MACs by precision),
// trains with the kernel quantizers' flip ratio on (a metrics_scope, Larq's
// `metrics_scope(["flip_ratio"])`) and the input quantizers' gradient flow, prints
// both per epoch; then lowers it to the binary engine (XNOR-popcount on bit-packed ±1
// values), reports its parity with the simulation, exports ONNX (standard operators) and,
// given --onnxruntime PYTHON, runs the file there; it ends with one line per model and
// `bnn_accuracy=<x> epochs=<n> seconds=<t>` on the 10,000 test images.
//
//   fashion_mnist_bnn                    60,000 images, 8 epochs, Adam
//   fashion_mnist_bnn --optimizer bop    Bop for the binary kernels, Adam for the rest
//   options: --epochs N  --train-size N  --batch N  --seed N  --data DIR  --quick

#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/quantizers/model_quantizers.hpp>
#include <xquant/summary/print_summary.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/bop.hpp>
#include <xquant/train/case_optimizer.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/schedule.hpp>

#include "../fashion_mnist/deployment.hpp"
#include "../fashion_mnist/run_options.hpp"
#include "bnn.hpp"

namespace {

struct bnn_options {
  fashion::run_options run;
  std::string optimizer = "adam";
};

bnn_options parse(int argc, char** argv) {
  // --optimizer is ours; the rest are the shared Fashion-MNIST options.
  bnn_options o;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--optimizer") {
      if (i + 1 >= argc) throw std::invalid_argument("--optimizer needs a value (adam or bop)");
      o.optimizer = argv[++i];
      if (o.optimizer != "adam" && o.optimizer != "bop")
        throw std::invalid_argument("--optimizer: expected adam or bop, given " + o.optimizer);
    } else {
      rest.push_back(argv[i]);
    }
  }
  o.run = fashion::parse_options(static_cast<int>(rest.size()), rest.data());
  // fashion::parse_options's defaults are the float CNN's: this BNN trains 8 epochs (quick: 1).
  bool epochs_given = false;
  for (int i = 1; i < argc; ++i) epochs_given |= std::string(argv[i]) == "--epochs";
  if (!epochs_given) o.run.epochs = o.run.quick ? 1 : 8;
  return o;
}

template <class Model, class Optimizer>
xq::fit_history train(Model& model, Optimizer& opt, const fashion::splits& data, const bnn_options& o,
                      std::vector<std::vector<std::pair<std::string, double>>>& per_epoch) {
  xq::fit_options fo;
  fo.epochs = o.run.epochs;
  fo.batch_size = o.run.batch;
  fo.seed = o.run.seed;
  fo.on_epoch_end = [&](const xq::epoch_record& r) { per_epoch.push_back(r.quantizer_metrics); };
  return xq::fit(model, opt, xq::sparse_softmax_cross_entropy, data.train, fo);
}

}  // namespace

int main(int argc, char** argv) try {
  const bnn_options o = parse(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  const fashion::splits data = fashion::load_splits(o.run);
  xq::set_seed(o.run.seed);

  // Kernel quantizers built inside the scope keep a flip ratio (Larq's rule).
  auto model = [] {
    xq::metrics_scope scope(xq::quantizer_metric::flip_ratio);
    return bnn::make_binary_cnn();
  }();
  xq::build(model, {1, 28, 28, 1});
  // The input quantizers report how much gradient their clipped STE lets through.
  xq::for_each_quantizer(model, [](auto& q) {
    if (q.path().find("input_quantizer") != std::string::npos) q.metrics(xq::quantizer_metric::gradient_flow);
  });

  xq::print_summary(xq::summarize(model, {1, 28, 28, 1}), std::cout);
  std::cout << "\n";

  const std::size_t steps_per_epoch = (data.train.size() + o.run.batch - 1) / o.run.batch;
  xq::adam_options adam;
  adam.learning_rate = xq::cosine_decay{1e-3f, o.run.epochs * steps_per_epoch, 0.01f};
  std::vector<std::vector<std::pair<std::string, double>>> per_epoch;
  xq::fit_history history;
  if (o.optimizer == "bop") {
    // Larq's CaseOptimizer: Bop flips the binary kernels, Adam trains the rest.
    xq::case_optimizer opt(xq::bop(xq::binary_parameters(model)), xq::adam(xq::non_binary_parameters(model), adam));
    history = train(model, opt, data, o, per_epoch);
  } else {
    xq::adam opt(xq::trainable_parameters(model), adam);
    history = train(model, opt, data, o, per_epoch);
  }

  // Flip ratio per epoch (the share of binary weights that changed sign per step).
  std::cout << "\nflip ratio per epoch (kernel quantizers):\n";
  for (std::size_t e = 0; e < per_epoch.size(); ++e) {
    std::cout << "  epoch " << (e + 1) << ":";
    for (const auto& [name, value] : per_epoch[e])
      if (name.rfind("flip_ratio/", 0) == 0) {
        const std::string layer = name.substr(11, name.find("/kernel_quantizer") - 11);
        std::printf(" %s=%.5f", layer.c_str(), value);
      }
    std::cout << "\n";
  }

  const xq::evaluation test = xq::evaluate(model, xq::sparse_softmax_cross_entropy, data.test, 256);

  // Deployment: XNOR-popcount on bit-packed ±1 values (Larq's compute engine), its parity
  // with the simulation, and ONNX with standard operators (and onnxruntime, if given).
  const auto engine = xq::deploy::lower(model, {28, 28, 1});
  std::cout << "\n" << engine.summary();
  const fashion::deployment_result d = fashion::deploy(model, engine, data.test, o.run, "fashion_mnist_bnn", false);
  std::printf("model bnn_simulated         accuracy=%.4f\n", d.parity.simulated_accuracy());
  std::printf("model bnn_binary_engine     accuracy=%.4f same_top1_as_simulated=%.4f\n", d.parity.engine_accuracy(),
              d.parity.same_top1_share());
  if (d.onnxruntime_accuracy >= 0)
    std::printf("model bnn_onnxruntime       accuracy=%.4f same_top1_as_binary_engine=%.4f\n", d.onnxruntime_accuracy,
                d.onnxruntime_same_top1);
  else
    std::printf("model bnn_onnxruntime       not run (give --onnxruntime PYTHON; the file is %s)\n", d.onnx_file.c_str());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("bnn_accuracy=%.4f epochs=%zu seconds=%.1f\n", *test.metric, history.size(), seconds);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "fashion_mnist_bnn: " << e.what() << "\n";
  return 1;
}
