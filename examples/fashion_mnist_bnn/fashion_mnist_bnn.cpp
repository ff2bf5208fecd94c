// A binarized CNN on Fashion-MNIST, Larq's recipe in xquant:
//
//   every hidden conv and dense layer computes on binary inputs and binary weights
//   (xq::ste_sign on both, with a latent float kernel clipped to [-1, 1] that the
//   optimizer updates); "same" padding adds +1, so even the borders are binary;
//   the first layer sees the float image and the last layer's output stays float,
//   as in Larq's examples; batch norms without a scale (it would be folded into the
//   next sign anyway) sit between the binary layers.
//
// It prints the model summary (parameters by bit width, memory, MACs by precision),
// trains with the kernel quantizers' flip ratio on (a metrics_scope, Larq's
// `metrics_scope(["flip_ratio"])`) and the input quantizers' gradient flow, prints
// both per epoch, and ends with `bnn_accuracy=<x> epochs=<n> seconds=<t>` on the
// 10,000 test images.
//
//   fashion_mnist_bnn                    60,000 images, 5 epochs, Adam
//   fashion_mnist_bnn --optimizer bop    Bop for the binary kernels, Adam for the rest
//   options: --epochs N  --train-size N  --batch N  --seed N  --data DIR  --quick

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <xquant/core/model.hpp>
#include <xquant/core/random.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/max_pool2d.hpp>
#include <xquant/layers/quant_conv2d.hpp>
#include <xquant/layers/quant_dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/layers/weight_clip.hpp>
#include <xquant/quantizers/model_metrics.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/summary/print_summary.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/bop.hpp>
#include <xquant/train/case_optimizer.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/schedule.hpp>

#include "../fashion_mnist/run_options.hpp"

namespace {

using binary_conv = xq::quant_conv2d<xq::ste_sign, xq::ste_sign>;
using binary_dense = xq::quant_dense<xq::ste_sign, xq::ste_sign>;

/// A binary 3x3 "same" convolution: ±1 inputs, ±1 weights, ±1 padding, no bias
/// (the batch norm after it has one).
binary_conv binary_conv3x3(std::size_t filters) {
  return binary_conv(filters, 3, xq::ste_sign(), xq::ste_sign())
      .padding(xq::padding::same)
      .pad_values(1.0f)
      .use_bias(false)
      .kernel_constraint(xq::weight_clip(1.0f));
}

binary_dense binary_fully_connected(std::size_t units) {
  return binary_dense(units, xq::ste_sign(), xq::ste_sign()).use_bias(false).kernel_constraint(xq::weight_clip(1.0f));
}

/// Batch norm without gamma (Larq's `BatchNormalization(scale=False)`).
xq::batch_norm shift_norm() { return xq::batch_norm(/*center=*/true, /*scale=*/false); }

auto make_model() {
  // The first layer binarizes its weights only: its input is the image.
  auto stem = xq::quant_conv2d<xq::no_quantizer, xq::ste_sign>(64, 3, xq::no_quantizer(), xq::ste_sign())
                  .padding(xq::padding::same)
                  .use_bias(false)
                  .kernel_constraint(xq::weight_clip(1.0f));
  return xq::sequential(std::move(stem), xq::max_pool2d(2), shift_norm(),            //
                        binary_conv3x3(128), xq::max_pool2d(2), shift_norm(),         //
                        binary_conv3x3(128), shift_norm(), xq::flatten(),             //
                        binary_fully_connected(256), shift_norm(),                    //
                        binary_fully_connected(10), shift_norm());
}

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
  // fashion::parse_options defaults to 8 epochs (2 quick); a BNN of this size needs 5.
  bool epochs_given = false;
  for (int i = 1; i < argc; ++i) epochs_given |= std::string(argv[i]) == "--epochs";
  if (!epochs_given) o.run.epochs = o.run.quick ? 1 : 5;
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
    return make_model();
  }();
  xq::build(model, {1, 28, 28, 1});
  // The input quantizers report how much gradient their clipped STE lets through.
  xq::for_each_quantizer_layer(model, [](auto& q) {
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
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("bnn_accuracy=%.4f epochs=%zu seconds=%.1f\n", *test.metric, history.size(), seconds);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "fashion_mnist_bnn: " << e.what() << "\n";
  return 1;
}
