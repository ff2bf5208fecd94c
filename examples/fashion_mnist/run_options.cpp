// The Fashion-MNIST examples' option parsing and data loading (run_options.hpp), compiled
// once for each example that uses them.

#include "run_options.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <xquant/io/fashion_mnist.hpp>

#include "../common/command_line.hpp"

namespace fashion {

run_options parse_options(int argc, char** argv, const epoch_defaults& epochs, const extra_option& extra) {
  run_options s;
  examples::for_each_option(argc, argv, [&](const std::string& a, auto next) {
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
    else return extra && extra(a, next);
    return true;
  });
  if (s.epochs == 0) s.epochs = s.quick ? epochs.quick_epochs : epochs.full_epochs;
  if (s.qat_epochs == 0) s.qat_epochs = s.quick ? epochs.quick_qat_epochs : epochs.full_qat_epochs;
  if (s.train_size == 0) s.train_size = s.quick ? 12000 : 60000;
  return s;
}

splits load_splits(const run_options& s) {
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
