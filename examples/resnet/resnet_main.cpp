// Small ResNets on Fashion-MNIST, float then int8: the residual nets that NVIDIA's toolkit
// has QDQ placement presets for, written as nested blocks (resnet.hpp), trained in float,
// fine-tuned with quantization (NVIDIA's scheme and its resnet_v1 / resnet_v2 preset,
// batch norms folded), lowered to the integer engine and exported to ONNX.
//
//   resnet            full mode: 60,000 training images, 6 float + 2 QAT epochs, both nets
//   resnet --quick    12,000 images, 2 + 1 epochs
//   options: --variant v1|v2|both  --epochs N  --qat-epochs N  --train-size N
//            --test-size N  --batch N  --seed N  --data DIR  --export-dir DIR
//            --onnxruntime PYTHON
//
// It ends with one line per network:
//   resnet_<v> float_accuracy=<x> int8_accuracy=<y> int8_minus_float=<y - x>
// (int8: the QAT model on the integer engine, int8 weights and activations, int32 biases).

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../fashion_mnist/run_options.hpp"
#include "variant.hpp"

int main(int argc, char** argv) try {
  std::string variant = "both";
  fashion::epoch_defaults epochs;
  epochs.full_epochs = 6;
  const fashion::run_options s =
      fashion::parse_options(argc, argv, epochs, [&](const std::string& name, const std::function<std::string()>& value) {
        if (name != "--variant") return false;
        variant = value();
        if (variant != "v1" && variant != "v2" && variant != "both")
          throw std::invalid_argument("--variant takes v1, v2 or both, not " + variant);
        return true;
      });
  const fashion::splits data = fashion::load_splits(s);
  std::cout << "resnet: " << data.train.size() << " training images, " << data.test.size() << " test images, "
            << s.epochs << " float epochs + " << s.qat_epochs << " QAT epochs, batch " << s.batch << "\n";

  std::vector<resnet::variant_result> results;
  if (variant != "v2") results.push_back(resnet::run_v1(data, s));
  if (variant != "v1") results.push_back(resnet::run_v2(data, s));

  std::cout << "\n";
  for (const auto& r : results) {
    std::printf("model resnet_%s float %.4f, qat simulated %.4f, qat integer engine %.4f (same top-1 as the "
                "simulation %.4f)", r.name.c_str(), r.float_accuracy, r.qat_simulated_accuracy, r.int8_accuracy,
                r.engine_same_top1);
    if (r.onnxruntime_accuracy >= 0) std::printf(", onnxruntime %.4f", r.onnxruntime_accuracy);
    std::printf("; training images/s float %.0f, qat %.0f; %.0f s\n", r.float_images_per_second,
                r.qat_images_per_second, r.seconds);
  }
  for (const auto& r : results)
    std::printf("resnet_%s float_accuracy=%.4f int8_accuracy=%.4f int8_minus_float=%+.4f\n", r.name.c_str(),
                r.float_accuracy, r.int8_accuracy, r.int8_accuracy - r.float_accuracy);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "resnet: %s\n", e.what());
  return 1;
}
