// Quantization-aware training on Fashion-MNIST, the whole workflow, to a deployed model:
//
//   1. train the float CNN (examples/fashion_mnist/cnn.hpp: conv blocks written as
//      nested composites, each a conv, a batch norm and a max pool);
//   2. post-training quantization: `xq::quantize_model` with NVIDIA's scheme (8-bit
//      symmetric QDQ on the inputs and per-channel weights of every conv and dense layer,
//      batch norms folded into their convs), ranges from `xq::calibrate` on 2,000 training
//      images (NVIDIA's histogram calibrator, percentile 99.99), lowered to integers;
//   3. quantization-aware training: a second twin (it shares the float model's weights),
//      fine-tuned with the batch-norm statistics frozen half-way;
//   4. deployment: the QAT twin lowered to the integer engine (int8 activations and
//      weights, int32 accumulators and biases), compared with its simulation layer by
//      layer, and exported to ONNX; with --onnxruntime PY the file runs in onnxruntime.
//
//   fashion_mnist_qat            full mode: 60,000 images, 8 float + 2 QAT epochs
//   fashion_mnist_qat --quick    12,000 images, 2 + 1 epochs (README's demo)
//   options: --epochs N  --qat-epochs N  --train-size N  --batch N  --seed N  --data DIR
//            --export-dir DIR  --onnxruntime PYTHON
//            --log-dir DIR  TensorBoard event files (io/tensorboard.hpp): the runs float/train and
//                        qat/train (losses, learning rate, speed, every quantizer's grid and
//                        clipped share, weight and quantizer histograms), ptq (calibration
//                        histograms and ranges) and deploy (parity per layer); then
//                        `tensorboard --logdir DIR`
//            --ranks N   data-parallel training over N ranks (MPI: examples/common/ranks.hpp),
//                        each with batch/N of every batch; the float model and the QAT twin
//                        train on the ranks, the rest runs on rank 0, which alone prints
//
// It ends with one line per model (accuracy on the 10,000 test images), then
// `float_accuracy=<x> int8_accuracy=<y>` (y: the QAT integer engine's).

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <xquant/io/tensorboard.hpp>
#include <xquant/transform/quantize_model.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>

#include "../common/ranks.hpp"
#include "../fashion_mnist/cnn.hpp"
#include "deploy_qat.hpp"
#include "../fashion_mnist/run_options.hpp"
#include "../fashion_mnist/training.hpp"

int main(int argc, char** argv) try {
  int requested_ranks = 1;
  std::string log_dir;  // --log-dir: TensorBoard's runs under it
  const fashion::run_options s = fashion::parse_options(argc, argv, {}, [&](const std::string& name, const auto& value) {
    if (name == "--ranks") requested_ranks = std::stoi(value());
    else if (name == "--log-dir") log_dir = value();
    else return false;
    return true;
  });
  // fit's TensorBoard callback for the run `<log_dir>/<run>/{train,validation}`; none without --log-dir.
  auto tensorboard = [&](const char* run) {
    std::vector<std::shared_ptr<xq::fit_callback>> callbacks;
    if (log_dir.empty()) return callbacks;
    xq::tensorboard_options o;
    o.log_dir = log_dir + "/" + run;
    o.update_freq = 10;
    callbacks.push_back(std::make_shared<xq::tensorboard>(o));
    return callbacks;
  };
  examples::ranks ranks(requested_ranks, argc, argv);
  const bool first_rank = ranks.rank() == 0;  // the one that evaluates, deploys and prints
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto [train, test] = fashion::load_splits(s);
  std::cout << "fashion_mnist_qat: " << train.size() << " training images, " << test.size() << " test images, "
            << s.epochs << " float epochs + " << s.qat_epochs << " QAT epochs, batch " << s.batch;
  if (ranks.size() > 1) std::cout << " (" << ranks.size() << " ranks x " << s.batch / ranks.size() << ")";
  std::cout << "\n";

  // 1. Float.
  auto model = fashion::make_cnn(s.seed);
  xq::build(model, {1, 28, 28, 1});
  const auto float_history = fashion::train(model, train, s.epochs, 2e-3f, s, ranks.training(), tensorboard("float"));
  double float_accuracy = 0, ptq_accuracy = 0;
  xq::quantize_options options;
  options.fold_batch_norm = true;
  if (first_rank) {
    float_accuracy = xq::evaluate(model, xq::sparse_softmax_cross_entropy, test, 500).metric.value_or(0);
    std::printf("float: test_accuracy=%.4f images_per_second=%.0f (%.0f s)\n", float_accuracy,
                fashion::images_per_second(float_history), seconds());

    // 2. Post-training quantization: the twin, calibrated on 2,000 training images, lowered.
    const fashion::ptq_result ptq = fashion::post_training_quantization(model, options, train, test, log_dir);
    ptq_accuracy = ptq.engine_accuracy;
    std::printf("ptq: calibrated on %zu images (nvidia_percentile 99.99); simulated %.4f, integer engine %.4f (%.0f s)\n",
                ptq.calibration_images, ptq.simulated_accuracy, ptq_accuracy, seconds());
  }

  // 3. Quantization-aware training: NVIDIA's default scheme, batch norms folded.
  const std::size_t steps_per_epoch = (train.size() + s.batch - 1) / s.batch;
  options.freeze_batch_norm_after = static_cast<long>(steps_per_epoch * s.qat_epochs / 2);
  auto qat = fashion::qat_twin(model, options);  // xq::quantize_model (deploy_qat.cpp)
  std::size_t on = 0, total = 0;
  xq::for_each_quantizer(qat, [&](const xq::fake_quantizer& q) {
    ++total;
    if (q.enabled()) {
      ++on;
      std::cout << "  " << q.path() << ": " << xq::describe(q.config()) << "\n";
    }
  });
  std::printf("quantized: %zu of %zu quantizers on; batch norms folded: conv_block %s, conv_block_1 %s\n", on,
              total, qat.get<0>().conv.folded() ? "yes" : "no", qat.get<1>().conv.folded() ? "yes" : "no");
  // Fine-tune at a tenth of the float peak learning rate.
  const auto qat_history = fashion::train(qat, train, s.qat_epochs, 2e-4f, s, ranks.training(), tensorboard("qat"));
  std::printf("qat: images_per_second=%.0f (float: %.0f) seconds=%.1f\n", fashion::images_per_second(qat_history),
              fashion::images_per_second(float_history), seconds());
  if (!first_rank) return 0;  // the ranks trained; rank 0 deploys

  // 4. Deployment: the integer engine, its parity with the simulation, ONNX (and onnxruntime).
  const fashion::qat_deployment d = fashion::deploy_qat(qat, test, s, log_dir);

  std::printf("model float                     accuracy=%.4f\n", float_accuracy);
  std::printf("model ptq_int8_integer_engine   accuracy=%.4f\n", ptq_accuracy);
  std::printf("model qat_simulated             accuracy=%.4f\n", d.simulated_accuracy);
  std::printf("model qat_integer_engine        accuracy=%.4f same_top1_as_simulated=%.4f (int32 biases: TFLite, onnxruntime)\n",
              d.engine_accuracy, d.engine_same_top1);
  std::printf("model qat_integer_engine_fbias  accuracy=%.4f same_top1_as_simulated=%.4f (float biases: FBGEMM, TensorRT)\n",
              d.float_bias_accuracy, d.float_bias_same_top1);
  if (d.onnxruntime_accuracy >= 0)
    std::printf("model qat_onnxruntime           accuracy=%.4f same_top1_as_integer_engine=%.4f\n",
                d.onnxruntime_accuracy, d.onnxruntime_same_top1);
  else
    std::printf("model qat_onnxruntime           not run (give --onnxruntime PYTHON; the file is %s)\n",
                d.onnx_file.c_str());
  if (!log_dir.empty()) std::printf("tensorboard: tensorboard --logdir %s\n", log_dir.c_str());
  std::printf("float_accuracy=%.4f int8_accuracy=%.4f\n", float_accuracy, d.engine_accuracy);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fashion_mnist_qat: %s\n", e.what());
  return 1;
}
