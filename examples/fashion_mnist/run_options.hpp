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
//
// The parsing and the loading are compiled once, in run_options.cpp.

#include <cstddef>
#include <functional>
#include <string>

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

/// The epochs an example trains for when the command line does not say.
struct epoch_defaults {
  std::size_t full_epochs = 8, full_qat_epochs = 2, quick_epochs = 2, quick_qat_epochs = 1;
};

/// An example's own option: given the option's name and a function returning its value
/// (which throws when there is none), it returns whether it took the option.
using extra_option = std::function<bool(const std::string& name, const std::function<std::string()>& value)>;

/// Parses argv; zero counts take the mode's defaults (`epochs`; 60,000 training images in
/// full mode, 12,000 in quick mode). Options neither this nor `extra` knows, and missing
/// values, throw std::invalid_argument.
run_options parse_options(int argc, char** argv, const epoch_defaults& epochs = {}, const extra_option& extra = {});

struct splits {
  xq::dataset train, test;
};

/// The training split (its first `train_size` images) and the test split (its first
/// `test_size`, all 10,000 by default).
splits load_splits(const run_options& s);

}  // namespace fashion
