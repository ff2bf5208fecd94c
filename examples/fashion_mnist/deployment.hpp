#pragma once
// The deployment half of the Fashion-MNIST examples: a trained model lowered to the
// integer engine, compared with its simulation layer by layer, exported to ONNX, and (given
// a Python with onnxruntime) run there on the same test images.

#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>
#include <iostream>
#include <string>

#include <xquant/deploy/export_onnx.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/io/npy.hpp>

#include "run_options.hpp"

#ifndef XQ_ONNX_CHECK
#define XQ_ONNX_CHECK "tools/onnx_check.py"
#endif

namespace fashion {

/// mkdir -p (POSIX; <filesystem> would double this header's compile time).
inline void make_directories(const std::string& path) {
  for (std::size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') ::mkdir(path.substr(0, i).c_str(), 0755);
}

struct deployment_result {
  xq::deploy::parity_report parity;             ///< the engine as the ONNX file computes: int32 bias
  xq::deploy::parity_report parity_float_bias;  ///< the engine with FBGEMM's / TensorRT's float bias
  double onnxruntime_accuracy = -1;  ///< -1: not run
  double onnxruntime_same_top1 = -1; ///< onnxruntime vs the integer engine
  std::string onnx_file;
};

/// Reports the parity of `engine` (lowered by the caller, int32 biases) and of the same
/// model lowered with float biases on `test`, exports ONNX and runs it in onnxruntime when
/// `s.onnx_python` is set. `name` names the files.
template <class Model>
deployment_result deploy(Model& model, const xq::deploy::integer_model& engine, const xq::dataset& test,
                         const run_options& s, const std::string& name, bool with_float_bias = true) {
  deployment_result r;
  r.parity = xq::deploy::parity(model, engine, test.inputs, &test.targets, 500);
  std::cout << "parity, simulation vs integer engine" << (with_float_bias ? ", int32 biases" : "") << " ("
            << test.size() << " test images):\n"
            << r.parity.table();
  if (with_float_bias) {
    xq::deploy::lower_options float_bias;
    float_bias.bias = xq::deploy::bias_precision::float32;
    r.parity_float_bias =
        xq::deploy::parity(model, xq::deploy::lower(model, {28, 28, 1}, float_bias), test.inputs, &test.targets, 500);
    std::cout << "parity, simulation vs integer engine, float biases:\n" << r.parity_float_bias.table();
  }

  make_directories(s.export_dir);
  const std::string base = s.export_dir + "/" + name;
  r.onnx_file = base + ".onnx";
  xq::deploy::export_onnx(model, {28, 28, 1}, r.onnx_file);
  xq::io::save_npy(base + ".input.npy", test.inputs);
  xq::io::save_npy(base + ".labels.npy", test.targets);
  xq::io::save_npy(base + ".engine.npy", engine.run(test.inputs));
  std::cout << "onnx: wrote " << r.onnx_file << "\n";
  if (s.onnx_python.empty()) return r;
  const std::string cmd = "'" + s.onnx_python + "' '" XQ_ONNX_CHECK "' '" + r.onnx_file + "' --input input='" + base +
                          ".input.npy' --expected output='" + base + ".engine.npy' --labels output='" + base +
                          ".labels.npy' --top1 --min-share 0 --paths optimized";
  // The checker's table goes to our output; its summary line gives the two numbers.
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    std::cout << "onnx: cannot run " << s.onnx_python << "\n";
    return r;
  }
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    std::cout << line;
    double accuracy = 0, top1 = 0;
    if (std::sscanf(line, "onnx_check summary: path=optimized output=output accuracy=%lf top1=%lf", &accuracy, &top1) == 2) {
      r.onnxruntime_accuracy = accuracy;
      r.onnxruntime_same_top1 = top1;
    }
  }
  if (pclose(p) != 0) std::cout << "onnx: the onnxruntime check failed (see above)\n";
  return r;
}

}  // namespace fashion
