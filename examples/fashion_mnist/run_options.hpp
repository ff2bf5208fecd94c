#pragma once
// Command-line options and data loading shared by the Fashion-MNIST examples.
//
//   --quick          a 12,000-image subset and short training (README's demo)
//   --epochs N       float training epochs
//   --qat-epochs N   quantization-aware fine-tuning epochs (fashion_mnist_qat)
//   --train-size N   the first N training images
//   --test-size N    the first N test images (default all 10,000)
//   --batch N  --seed N  --data DIR
//   --export-dir DIR     where the ONNX file and its test inputs are written
//   --onnxruntime PY     a Python with onnx + onnxruntime: run the file there too

#include <cstddef>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <xquant/io/fashion_mnist.hpp>
#include <xquant/train/dataset.hpp>

namespace fashion {

struct run_options {
  bool quick = false;
  std::size_t epochs = 0, qat_epochs = 0, train_size = 0, test_size = 10000, batch = 64;
  unsigned seed = 1;
  std::string data_dir;
  std::string export_dir = "fashion_mnist_export";  ///< where the ONNX file and its inputs go
  std::string onnx_python;  ///< a Python with onnx and onnxruntime, to run the exported file
};

/// Parses argv; zero counts take the mode's defaults (full: 8 float epochs, 2 QAT
/// epochs, 60,000 images; quick: 2, 1, 12,000).
inline run_options parse_options(int argc, char** argv) {
  run_options s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--quick") s.quick = true;
    else if (a == "--epochs") s.epochs = std::stoul(next());
    else if (a == "--qat-epochs") s.qat_epochs = std::stoul(next());
    else if (a == "--train-size") s.train_size = std::stoul(next());
    else if (a == "--test-size") s.test_size = std::stoul(next());
    else if (a == "--batch") s.batch = std::stoul(next());
    else if (a == "--seed") s.seed = static_cast<unsigned>(std::stoul(next()));
    else if (a == "--data") s.data_dir = next();
    else if (a == "--export-dir") s.export_dir = next();
    else if (a == "--onnxruntime") s.onnx_python = next();
    else throw std::invalid_argument("unknown option " + a);
  }
  if (s.epochs == 0) s.epochs = s.quick ? 2 : 8;
  if (s.qat_epochs == 0) s.qat_epochs = s.quick ? 1 : 2;
  if (s.train_size == 0) s.train_size = s.quick ? 12000 : 60000;
  return s;
}

struct splits {
  xq::dataset train, test;
};

/// The training split (its first `train_size` images) and the test split (its first
/// `test_size`, all 10,000 by default).
inline splits load_splits(const run_options& s) {
  auto load = [&](const char* split) {
    auto d = s.data_dir.empty() ? xq::io::load_fashion_mnist(split) : xq::io::load_fashion_mnist(split, s.data_dir);
    return xq::dataset{std::move(d.images), std::move(d.labels)};
  };
  splits out{load("train"), load("test")};
  auto first_rows = [](xq::dataset& d, std::size_t n) {
    if (n >= d.size()) return;
    std::vector<std::size_t> first(n);
    for (std::size_t i = 0; i < first.size(); ++i) first[i] = i;
    d = xq::dataset{xq::gather_rows(d.inputs, first.data(), first.size()),
                    xq::gather_rows(d.targets, first.data(), first.size())};
  };
  first_rows(out.train, s.train_size);
  first_rows(out.test, s.test_size);
  return out;
}

}  // namespace fashion
