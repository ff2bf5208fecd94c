// Quantization-aware training on Fashion-MNIST, the whole workflow:
//
//   1. train the float CNN (examples/fashion_mnist/cnn.hpp: conv blocks written as
//      nested composites, each a conv, a batch norm and a max pool);
//   2. `xq::quantize_model` it with NVIDIA's scheme (8-bit symmetric QDQ on the inputs
//      and per-channel weights of every conv and dense layer), folding each batch norm
//      into its conv so that the kernel that is fake-quantized is the one an int8
//      runtime runs;
//   3. fine-tune the quantized twin (it shares the float model's weights), freezing
//      the batch-norm statistics half-way, and evaluate it: every conv and dense layer
//      then computes on int8-representable inputs and weights.
//
//   fashion_mnist_qat            full mode: 60,000 images, 8 float + 2 QAT epochs
//   fashion_mnist_qat --quick    12,000 images, 2 + 1 epochs (README's demo)
//   options: --epochs N  --qat-epochs N  --train-size N  --batch N  --seed N  --data DIR
//
// The last line is `float_accuracy=<x> int8_accuracy=<y>` (10,000 test images).

#include <chrono>
#include <cstdio>
#include <iostream>

#include <xquant/transform/quantize_model.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>

#include "../fashion_mnist/cnn.hpp"
#include "../fashion_mnist/run_options.hpp"
#include "../fashion_mnist/training.hpp"

int main(int argc, char** argv) try {
  const fashion::run_options s = fashion::parse_options(argc, argv);
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto [train, test] = fashion::load_splits(s);
  std::cout << "fashion_mnist_qat: " << train.size() << " training images, " << test.size() << " test images, "
            << s.epochs << " float epochs + " << s.qat_epochs << " QAT epochs, batch " << s.batch << "\n";

  // 1. Float.
  auto model = fashion::make_cnn(s.seed);
  xq::build(model, {1, 28, 28, 1});
  const auto float_history = fashion::train(model, train, s.epochs, 2e-3f, s);
  const double float_accuracy = xq::evaluate(model, xq::sparse_softmax_cross_entropy, test, 500).metric.value_or(0);
  std::printf("float: test_accuracy=%.4f images_per_second=%.0f (%.0f s)\n", float_accuracy,
              fashion::images_per_second(float_history), seconds());

  // 2. Quantize: NVIDIA's default scheme, batch norms folded into their convs.
  xq::quantize_options options;
  options.fold_batch_norm = true;
  const std::size_t steps_per_epoch = (train.size() + s.batch - 1) / s.batch;
  options.freeze_batch_norm_after = static_cast<long>(steps_per_epoch * s.qat_epochs / 2);
  auto qat = xq::quantize_model(model, options, {1, 28, 28, 1});
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

  // 3. Fine-tune at a tenth of the float peak learning rate, then evaluate the twin.
  const auto qat_history = fashion::train(qat, train, s.qat_epochs, 2e-4f, s);
  const double int8_accuracy = xq::evaluate(qat, xq::sparse_softmax_cross_entropy, test, 500).metric.value_or(0);
  std::printf("qat: images_per_second=%.0f (float: %.0f) seconds=%.1f\n", fashion::images_per_second(qat_history),
              fashion::images_per_second(float_history), seconds());
  std::printf("float_accuracy=%.4f int8_accuracy=%.4f\n", float_accuracy, int8_accuracy);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fashion_mnist_qat: %s\n", e.what());
  return 1;
}
