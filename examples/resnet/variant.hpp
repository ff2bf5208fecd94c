#pragma once
// One network's whole story in the ResNet example: float training, quantization-aware
// fine-tuning with NVIDIA's preset for its block type (batch norms folded into their
// convs), then the integer engine (compared with the simulation layer by layer) and ONNX.
// `run_variant` is a template; resnet_v1.cpp and resnet_v2.cpp instantiate it once each, so
// the two networks compile in parallel.

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <xquant/summary/print_summary.hpp>
#include <xquant/summary/summarize.hpp>
#include <xquant/transform/qdq_cases.hpp>
#include <xquant/transform/quantize_model.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>

#include "../fashion_mnist/deployment.hpp"
#include "../fashion_mnist/run_options.hpp"
#include "../fashion_mnist/training.hpp"

namespace resnet {

/// What one network measured (accuracies on the test images).
struct variant_result {
  std::string name;
  double float_accuracy = 0;
  double qat_simulated_accuracy = 0;
  double int8_accuracy = 0;          ///< the integer engine's (int32 biases)
  double engine_same_top1 = 0;       ///< share of images where engine and simulation agree
  double onnxruntime_accuracy = -1;  ///< -1: not run
  double float_images_per_second = 0, qat_images_per_second = 0, seconds = 0;
};

/// Trains `model` (unbuilt) in float, fine-tunes its quantized twin with `cases` (NVIDIA's
/// preset), lowers and exports it; `name` labels the output and the files.
template <class Model>
variant_result run_variant(const std::string& name, Model model, const std::vector<xq::qdq_case>& cases,
                           const fashion::splits& data, const fashion::run_options& s) {
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const xq::tensor::shape_type sample{1, 28, 28, 1};
  variant_result r;
  r.name = name;

  std::cout << "\n=== " << name << " ===\n";
  xq::build(model, sample);
  xq::print_summary(xq::summarize(model, sample), std::cout);

  // 1. Float.
  const auto float_history = fashion::train(model, data.train, s.epochs, 2e-3f, s);
  r.float_images_per_second = fashion::images_per_second(float_history);
  r.float_accuracy = xq::evaluate(model, xq::sparse_softmax_cross_entropy, data.test, 500).metric.value_or(0);
  std::printf("%s float: test_accuracy=%.4f images_per_second=%.0f (%.0f s)\n", name.c_str(), r.float_accuracy,
              r.float_images_per_second, seconds());

  // 2. QAT: NVIDIA's default scheme (8-bit symmetric inputs, per-channel weights) with the
  //    preset's placement cases; batch norms folded, their statistics frozen half-way.
  xq::quantize_options options;
  options.fold_batch_norm = true;
  options.cases = cases;
  const std::size_t steps_per_epoch = (data.train.size() + s.batch - 1) / s.batch;
  options.freeze_batch_norm_after = static_cast<long>(steps_per_epoch * s.qat_epochs / 2);
  auto qat = xq::quantize_model(model, options, sample);
  std::size_t on = 0, total = 0;
  std::cout << "quantizers on (the preset leaves each add's conv-chain input unquantized: TensorRT fuses it):\n";
  xq::for_each_quantizer(qat, [&](const xq::fake_quantizer& q) {
    ++total;
    if (!q.enabled()) return;
    ++on;
    std::cout << "  " << q.path() << ": " << xq::describe(q.config()) << "\n";
  });
  std::printf("%s quantized: %zu of %zu quantizers on\n", name.c_str(), on, total);
  const auto qat_history = fashion::train(qat, data.train, s.qat_epochs, 2e-4f, s);
  r.qat_images_per_second = fashion::images_per_second(qat_history);
  std::printf("%s qat: images_per_second=%.0f (%.0f s)\n", name.c_str(), r.qat_images_per_second, seconds());

  // 3. Deployment: the integer engine, its parity with the simulation, ONNX.
  const auto engine = xq::deploy::lower(qat, {28, 28, 1});
  std::cout << engine.summary();
  const fashion::deployment_result d = fashion::deploy(qat, engine, data.test, s, "resnet_" + name);
  r.qat_simulated_accuracy = d.parity.simulated_accuracy();
  r.int8_accuracy = d.parity.engine_accuracy();
  r.engine_same_top1 = d.parity.same_top1_share();
  r.onnxruntime_accuracy = d.onnxruntime_accuracy;
  r.seconds = seconds();
  return r;
}

/// The two networks of resnet.hpp through run_variant with NVIDIA's resnet_v1 and
/// resnet_v2 presets (resnet_v1.cpp, resnet_v2.cpp).
variant_result run_v1(const fashion::splits& data, const fashion::run_options& s);
variant_result run_v2(const fashion::splits& data, const fashion::run_options& s);

}  // namespace resnet
