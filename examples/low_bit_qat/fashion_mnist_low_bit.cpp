// Low-bit QAT on Fashion-MNIST (issue 36): the CNN of examples/fashion_mnist (or a ResNet
// of examples/resnet: --model resnet_v1 | resnet_v2) trained in float once, then for each
// format — W4A8 (int4 weight groups of 32, torchao's 8da4w
// weights, beside NVIDIA's int8 per-tensor inputs), MXFP4 (torchao's MX recipe, weights and
// inputs) and NVFP4 (torchao's two-level recipe, weights and inputs) —
//
//   1. post-training quantization: `xq::quantize_model` with the format's scheme
//      (transform/low_bit_schemes.hpp), batch norms folded before block quantization,
//      calibrated on 2,000 training images where a format has static ranges (W4A8's int8
//      inputs); the twin of a copy of the float model, evaluated as it is;
//   2. quantization-aware training: that twin fine-tuned, the batch norms frozen half-way;
//   3. the share of the PTQ loss that QAT recovered, torchao's measure:
//      (QAT - PTQ) / (float - PTQ) in accuracy;
//   4. deployment: the QAT twin lowered to the engine (kernels stored as the format stores
//      them: packed codes and block scales; dense layers on the block-scaled integer
//      product), its parity with the simulation per quantized tensor (identical values,
//      SQNR) and its accuracy, the kernels' bytes; exported to ONNX (kernels as blocked
//      DequantizeLinear, dynamic activations as the operators that compute them) and, with
//      --onnxruntime PYTHON, run in onnxruntime.
//
// --recipes qat,qad,lora recovers the PTQ loss three ways from the same PTQ twin (issue 38):
//   qat   the twin fine-tuned on the labels (above);
//   qad   the twin fine-tuned on a frozen float teacher's outputs (xq::distillation_loss:
//         KL of the softened distributions at --distill-temperature, Model Optimizer's QAD);
//   lora  LoRA adapters of --lora-rank beside the frozen kernels of the convs and dense
//         layers (xq::add_lora_adapters), trained alone at 10x QAT's learning rate, then
//         merged (xq::merge_lora_adapters) before the engine and ONNX see the twin;
// each with its training throughput and the peak tensor memory of its training (the
// caching allocator's count, xq::tensor_memory: activations, gradients, optimizer state).
//
// w4a8_range_learning and 8da4w_range_learning learn the int4 groups' scales with the
// weights (torchao's range learning: xq::schemes::with_range_learning), from the scales the
// fixed formats compute.
//
// A layer whose reduction axis the format's blocks do not divide keeps the integer grid
// (the first conv's single input channel, for MXFP4 and NVFP4), as the peers' filters leave
// it; the table says which layers ran which format and their bits per weight.
//
//   fashion_mnist_low_bit           full mode: 60,000 images, 8 float epochs + 2 QAT epochs per format
//   fashion_mnist_low_bit --quick   12,000 images, 2 + 1 epochs
//   options: --epochs N --qat-epochs N --train-size N --test-size N --batch N --seed N --data DIR
//            --formats w4a8,mxfp4,nvfp4  --model cnn|resnet_v1|resnet_v2
//            --recipes qat,qad,lora  --lora-rank N  --distill-temperature T
//            --export-dir DIR  --onnxruntime PYTHON
//            --dump-weights DIR  the float CNN's dense layers (kernel, bias, the inputs of 256
//                        test images) as .npy, for tools/torchao_qat_parity.py (torchao's own
//                        prepare-vs-convert SQNR on the same weights)
//
// It ends with one line per format:
// `format=<f> float=<a> ptq=<b> qat=<c> recovered=<r> engine=<e> engine_same_top1=<t> engine_sqnr_db=<s>
//  onnxruntime=<o> onnxruntime_same_top1=<u> images_per_second=<i> train_peak_mib=<m>` (onnxruntime=not_run
// without --onnxruntime), and for qad and lora the same line with `recipe=<r> trained=<c>` in place of `qat=<c>`.

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <xquant/core/clone.hpp>
#include <xquant/core/memory.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/io/npy.hpp>
#include <xquant/quantizers/calibrate.hpp>
#include <xquant/quantizers/low_bit_format.hpp>
#include <xquant/transform/low_bit_schemes.hpp>
#include <xquant/transform/lora.hpp>
#include <xquant/transform/quantize_model.hpp>
#include <xquant/train/distillation.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>

#include "../common/print_quantizers.hpp"
#include "../fashion_mnist/cnn.hpp"
#include "../fashion_mnist/deployment.hpp"
#include "../resnet/resnet.hpp"
#include "../fashion_mnist/run_options.hpp"
#include "../fashion_mnist/training.hpp"

namespace {

struct format_choice {
  std::string name;
  xq::quantization_scheme scheme;
  bool calibrate;  // static int8 ranges to calibrate (W4A8's inputs)
};

format_choice choose(const std::string& name) {
  if (name == "w4a8") return {name, xq::schemes::w4a8(32), true};
  if (name == "mxfp4") return {name, xq::schemes::mx(), false};
  if (name == "nvfp4") return {name, xq::schemes::nvfp4(), false};
  if (name == "8da4w") return {name, xq::schemes::torchao_8da4w(32), false};
  if (name == "mxfp4_weight_only") return {name, xq::schemes::mx_weight_only(), false};
  if (name == "nvfp4_weight_only") return {name, xq::schemes::nvfp4_weight_only(), false};
  if (name == "fp8") return {name, xq::schemes::torchao_float8_dynamic(), false};
  // torchao's range learning: the int4 groups' scales learned with the weights.
  if (name == "w4a8_range_learning") return {name, xq::schemes::with_range_learning(xq::schemes::w4a8(32)), true};
  if (name == "8da4w_range_learning") return {name, xq::schemes::with_range_learning(xq::schemes::torchao_8da4w(32)), false};
  throw std::invalid_argument("--formats: expected w4a8, mxfp4, nvfp4, 8da4w, mxfp4_weight_only, nvfp4_weight_only, "
                              "fp8, w4a8_range_learning or 8da4w_range_learning, given " + name);
}

template <class Model>
double accuracy(Model& model, const xq::dataset& test) {
  return xq::evaluate(model, xq::sparse_softmax_cross_entropy, test, 500).metric.value_or(0);
}

/// The CNN's dense layers as tools/torchao_qat_parity.py reads them: <layer>.kernel (in, out),
/// <layer>.bias and <layer>.input (the float model's inputs to the layer on `images`).
void dump_dense_layers(fashion::cnn& model, const xq::tensor& images, const std::string& dir) {
  const xq::no_grad nothing_recorded;
  const xq::training_mode inference(false);
  const xq::var features = model.get<2>()(model.get<1>()(model.get<0>()(xq::var(images))));
  const xq::var hidden = model.get<4>()(model.get<3>()(features));
  xq::io::save_npy(dir + "/dense.kernel.npy", model.get<3>().kernel()->value);
  xq::io::save_npy(dir + "/dense.bias.npy", model.get<3>().bias()->value);
  xq::io::save_npy(dir + "/dense.input.npy", features.value());
  xq::io::save_npy(dir + "/dense_1.kernel.npy", model.get<6>().kernel()->value);
  xq::io::save_npy(dir + "/dense_1.bias.npy", model.get<6>().bias()->value);
  xq::io::save_npy(dir + "/dense_1.input.npy", hidden.value());
  std::cout << "dumped the dense layers to " << dir << "\n";
}
template <class Model>
void dump_dense_layers(Model&, const xq::tensor&, const std::string&) {
  throw std::invalid_argument("--dump-weights: the CNN's dense layers only (--model cnn)");
}

/// Float training, then PTQ, QAT and deployment per format (the file comment).
/// How the PTQ loss is recovered (the file comment).
struct recipe_options {
  std::vector<std::string> recipes{"qat"};
  std::size_t lora_rank = 8;
  float distill_temperature = 2.0f;
};

template <class Model>
void run(Model model, const std::string& name, const std::vector<format_choice>& choices, const fashion::run_options& s,
         const std::string& dump_dir, const recipe_options& r) {
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto [train, test] = fashion::load_splits(s);
  std::cout << "fashion_mnist_low_bit: " << name << ", " << train.size() << " training images, " << test.size()
            << " test images, " << s.epochs << " float epochs + " << s.qat_epochs << " QAT epochs per format, batch "
            << s.batch << "\n";

  xq::build(model, {1, 28, 28, 1});
  fashion::train(model, train, s.epochs, 2e-3f, s);
  const double float_accuracy = accuracy(model, test);
  if (!dump_dir.empty()) {
    std::vector<std::size_t> first(std::min<std::size_t>(256, test.size()));
    for (std::size_t i = 0; i < first.size(); ++i) first[i] = i;
    dump_dense_layers(model, xq::gather_rows(test.inputs, first.data(), first.size()), dump_dir);
  }
  std::printf("float: test_accuracy=%.4f (%.0f s)\n", float_accuracy, seconds());

  std::vector<std::string> lines;
  for (const format_choice& f : choices)
    for (const std::string& recipe : r.recipes) {
      // A copy of the float model per run: the twin shares its copy's weights and trains them.
      auto base = xq::clone_model(model);
      xq::quantize_options options;
      options.scheme = f.scheme;
      options.fold_batch_norm = true;
      const std::size_t steps_per_epoch = (train.size() + s.batch - 1) / s.batch;
      options.freeze_batch_norm_after = static_cast<long>(steps_per_epoch * s.qat_epochs / 2);
      auto twin = xq::quantize_model(base, options, {1, 28, 28, 1});
      std::cout << f.name << " " << recipe << ": scheme " << f.scheme.name << "\n";
      if (recipe == r.recipes.front()) examples::print_quantizers(twin);
      if (f.calibrate) {
        std::vector<std::size_t> first(std::min<std::size_t>(2000, train.size()));
        for (std::size_t i = 0; i < first.size(); ++i) first[i] = i;
        xq::calibrate(twin, xq::gather_rows(train.inputs, first.data(), first.size()));
      }
      const double ptq = accuracy(twin, test);
      std::printf("%s ptq: test_accuracy=%.4f (%.0f s)\n", f.name.c_str(), ptq, seconds());
      // The recipe's training, its peak tensor memory counted from what is in use before it.
      const std::size_t in_use = xq::tensor_memory().bytes_in_use;
      xq::reset_peak_tensor_memory();
      xq::fit_history history;
      if (recipe == "qat") {
        history = fashion::train(twin, train, s.qat_epochs, 2e-4f, s);
      } else if (recipe == "qad") {
        auto teacher = xq::clone_model(model);  // frozen: nothing steps it
        xq::distillation_options d;
        d.temperature = r.distill_temperature;
        history = fashion::train_with(twin, xq::trainable_parameters(twin),
                                      xq::distillation_loss(teacher, xq::sparse_softmax_cross_entropy, d), train,
                                      s.qat_epochs, 2e-4f, s);
      } else if (recipe == "lora") {
        xq::lora_options lo;
        lo.rank = r.lora_rank;
        lo.alpha = 2.0f * float(r.lora_rank);
        const std::size_t adapters = xq::add_lora_adapters(twin, lo);
        std::printf("%s lora: %zu adapters of rank %zu, %zu trained values\n", f.name.c_str(), adapters, lo.rank,
                    [&] {
                      std::size_t n = 0;
                      for (const auto& p : xq::lora_parameters(twin)) n += p->value.size();
                      return n;
                    }());
        history = fashion::train_with(twin, xq::lora_parameters(twin), xq::sparse_softmax_cross_entropy, train,
                                      s.qat_epochs, 2e-3f, s);
        xq::merge_lora_adapters(twin);  // one kernel per layer again: what deployment reads
      } else {
        throw std::invalid_argument("--recipes: expected qat, qad or lora, given " + recipe);
      }
      const double peak_mib = double(xq::tensor_memory().peak_bytes_in_use - in_use) / (1 << 20);  // peak >= in_use
      const double trained = accuracy(twin, test);
      const double lost = float_accuracy - ptq;
      const double recovered = lost > 0 ? (trained - ptq) / lost : 0.0;
      std::printf("%s %s: test_accuracy=%.4f images_per_second=%.0f train_peak_mib=%.1f (%.0f s)\n", f.name.c_str(),
                  recipe.c_str(), trained, fashion::images_per_second(history), peak_mib, seconds());
      // Deployment: the engine, its parity with the simulation, the kernels' size.
      const auto engine = xq::deploy::lower(twin, {28, 28, 1});
      std::cout << engine.summary();
      const fashion::deployment_result d =
          fashion::deploy(twin, engine, test, s, "fashion_mnist_" + name + "_" + f.name + "_" + recipe, false);
      const xq::deploy::parity_report& report = d.parity;
      std::size_t float_bytes = 0;
      for (const auto& p : xq::trainable_parameters(model)) float_bytes += p->value.size() * 4;
      std::printf("%s engine: %zu bytes of weights (float model: %zu), accuracy %.4f (%.0f s)\n", f.name.c_str(),
                  engine.weight_bytes(), float_bytes, report.engine_accuracy(), seconds());
      char onnx[96] = "onnxruntime=not_run";
      if (d.onnxruntime_accuracy >= 0)
        std::snprintf(onnx, sizeof onnx, "onnxruntime=%.4f onnxruntime_same_top1=%.4f", d.onnxruntime_accuracy,
                      d.onnxruntime_same_top1);
      const std::string result = recipe == "qat" ? "qat=" : "recipe=" + recipe + " trained=";
      char line[640];
      std::snprintf(line, sizeof line,
                    "format=%s float=%.4f ptq=%.4f %s%.4f recovered=%.2f%s engine=%.4f engine_same_top1=%.4f "
                    "engine_sqnr_db=%.1f %s images_per_second=%.0f train_peak_mib=%.1f",
                    f.name.c_str(), float_accuracy, ptq, result.c_str(), trained, recovered,
                    lost > 0 ? "" : " (PTQ lost nothing)", report.engine_accuracy(), report.same_top1_share(),
                    report.output_sqnr_db(), onnx, fashion::images_per_second(history), peak_mib);
      lines.push_back(line);
    }
  for (const auto& l : lines) std::cout << l << "\n";
}

}  // namespace

int main(int argc, char** argv) try {
  std::string formats = "w4a8,mxfp4,nvfp4", model = "cnn", dump_dir, recipes = "qat";
  recipe_options r;
  const fashion::run_options s = fashion::parse_options(argc, argv, {}, [&](const std::string& name, const auto& value) {
    if (name == "--formats") formats = value();
    else if (name == "--model") model = value();
    else if (name == "--dump-weights") dump_dir = value();
    else if (name == "--recipes") recipes = value();
    else if (name == "--lora-rank") r.lora_rank = std::stoul(value());
    else if (name == "--distill-temperature") r.distill_temperature = std::stof(value());
    else return false;
    return true;
  });
  std::vector<format_choice> choices;
  {
    std::stringstream list(formats);
    for (std::string f; std::getline(list, f, ',');) choices.push_back(choose(f));
  }
  {
    r.recipes.clear();
    std::stringstream list(recipes);
    for (std::string x; std::getline(list, x, ',');) r.recipes.push_back(x);
    if (r.recipes.empty()) throw std::invalid_argument("--recipes: expected a list of qat, qad, lora");
  }
  if (model == "cnn") run(fashion::make_cnn(s.seed), model, choices, s, dump_dir, r);
  else if (model == "resnet_v1") run(resnet::make_resnet_v1(s.seed), model, choices, s, dump_dir, r);
  else if (model == "resnet_v2") run(resnet::make_resnet_v2(s.seed), model, choices, s, dump_dir, r);
  else throw std::invalid_argument("--model: expected cnn, resnet_v1 or resnet_v2, given " + model);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fashion_mnist_low_bit: %s\n", e.what());
  return 1;
}
