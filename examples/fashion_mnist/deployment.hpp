#pragma once
// The deployment half of the Fashion-MNIST examples: a trained model lowered to the
// integer engine, compared with its simulation layer by layer, exported to ONNX, and (given
// a Python with onnxruntime) run there on the same test images.

#include <cstddef>
#include <iostream>
#include <string>

#include <xquant/deploy/export_onnx.hpp>
#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>

#include "run_options.hpp"

namespace fashion {

struct deployment_result {
  xq::deploy::parity_report parity;             ///< the engine as the ONNX file computes: int32 bias
  xq::deploy::parity_report parity_float_bias;  ///< the engine with FBGEMM's / TensorRT's float bias
  double onnxruntime_accuracy = -1;  ///< -1: not run
  double onnxruntime_same_top1 = -1; ///< onnxruntime vs the integer engine
  std::string onnx_file;
};

/// Writes the ONNX model, the test images and labels and the engine's logits under
/// `s.export_dir` as `name`.*, then (with `s.onnx_python`) runs the file in onnxruntime and
/// records its accuracy and agreement with the engine in `r` (deployment.cpp).
void write_and_run(const xq::onnx::model& m, const xq::deploy::integer_model& engine, const xq::dataset& test,
                   const run_options& s, const std::string& name, deployment_result& r);

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

  write_and_run(xq::deploy::export_onnx(model, {28, 28, 1}), engine, test, s, name, r);
  return r;
}

}  // namespace fashion
