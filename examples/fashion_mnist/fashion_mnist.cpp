// Trains the "2 Conv + pooling + BN" CNN on Fashion-MNIST (Debian's
// dataset-fashion-mnist: 60,000 training and 10,000 test images) and reports the
// test accuracy, to compare with the table in that dataset's README (0.916-0.934 for
// this kind of model).
//
//   fashion_mnist            full mode: all 60,000 training images
//   fashion_mnist --quick    a 12,000-image subset and 2 epochs (README's demo)
//   options: --epochs N  --train-size N  --batch N  --seed N  --data DIR
//
// The last line is `test_accuracy=<x> epochs=<n> seconds=<t>`.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <xquant/io/fashion_mnist.hpp>
#include <xquant/train/adam.hpp>
#include <xquant/train/fit.hpp>
#include <xquant/train/losses.hpp>
#include <xquant/train/schedule.hpp>

#include "cnn.hpp"

namespace {

struct settings {
  bool quick = false;
  std::size_t epochs = 0, train_size = 0, batch = 64;
  unsigned seed = 1;
  std::string data_dir;
};

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--quick") s.quick = true;
    else if (a == "--epochs") s.epochs = std::stoul(next());
    else if (a == "--train-size") s.train_size = std::stoul(next());
    else if (a == "--batch") s.batch = std::stoul(next());
    else if (a == "--seed") s.seed = static_cast<unsigned>(std::stoul(next()));
    else if (a == "--data") s.data_dir = next();
    else throw std::invalid_argument("unknown option " + a);
  }
  if (s.epochs == 0) s.epochs = s.quick ? 2 : 8;
  if (s.train_size == 0) s.train_size = s.quick ? 12000 : 60000;
  return s;
}

}  // namespace

int main(int argc, char** argv) try {
  const settings s = parse(argc, argv);
  const auto start = std::chrono::steady_clock::now();

  auto train_split = s.data_dir.empty() ? xq::io::load_fashion_mnist("train")
                                        : xq::io::load_fashion_mnist("train", s.data_dir);
  auto test_split = s.data_dir.empty() ? xq::io::load_fashion_mnist("test")
                                       : xq::io::load_fashion_mnist("test", s.data_dir);
  xq::dataset train{std::move(train_split.images), std::move(train_split.labels)};
  xq::dataset test{std::move(test_split.images), std::move(test_split.labels)};
  if (s.train_size < train.size()) {  // the quick mode's subset: the first images
    std::vector<std::size_t> first(s.train_size);
    for (std::size_t i = 0; i < first.size(); ++i) first[i] = i;
    train = xq::dataset{xq::gather_rows(train.inputs, first.data(), first.size()),
                        xq::gather_rows(train.targets, first.data(), first.size())};
  }
  std::cout << "fashion_mnist: " << train.size() << " training images, " << test.size()
            << " test images, " << s.epochs << " epochs, batch " << s.batch << "\n";

  auto model = fashion::make_cnn(s.seed);
  xq::build(model, {1, 28, 28, 1});
  std::cout << "model: " << xq::count_parameters(model) << " parameters\n";

  const std::size_t steps_per_epoch = (train.size() + s.batch - 1) / s.batch;
  xq::adam_options adam;
  adam.learning_rate = xq::cosine_decay{2e-3f, s.epochs * steps_per_epoch, 0.02f};
  xq::adam opt(xq::trainable_parameters(model), adam);

  xq::fit_options fo;
  fo.epochs = s.epochs;
  fo.batch_size = s.batch;
  fo.seed = s.seed;
  const auto history = xq::fit(model, opt, xq::sparse_softmax_cross_entropy, train, fo);

  const auto result = xq::evaluate(model, xq::sparse_softmax_cross_entropy, test, 500);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double train_rate = 0;
  for (const auto& e : history.epochs) train_rate += e.samples_per_second;
  train_rate /= static_cast<double>(history.epochs.size());
  std::printf("training_images_per_second=%.0f test_loss=%.4f\n", train_rate, result.loss);
  std::printf("test_accuracy=%.4f epochs=%zu seconds=%.1f\n", result.metric.value_or(0.0), s.epochs,
              seconds);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fashion_mnist: %s\n", e.what());
  return 1;
}
