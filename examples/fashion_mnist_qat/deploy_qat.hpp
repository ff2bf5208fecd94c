#pragma once
// The QAT example's post-training quantization and deployment steps, compiled in their own
// translation unit (deploy_qat.cpp): lowering, parity, export and calibration instantiate for
// two model types there, while fashion_mnist_qat.cpp keeps the training story.

#include <cstddef>
#include <string>

#include <xquant/transform/quantize_model.hpp>

#include "../fashion_mnist/cnn.hpp"
#include "../fashion_mnist/run_options.hpp"

namespace fashion {

struct ptq_result {
  std::size_t calibration_images = 0;
  double simulated_accuracy = 0, engine_accuracy = 0;
};

/// The twin of `model` with `options`, calibrated on the first 2,000 training images
/// (NVIDIA's histogram calibrator, percentile 99.99), lowered and evaluated on `test`. With a
/// `log_dir`, the calibration's histograms and ranges go to TensorBoard's run `<log_dir>/ptq`.
ptq_result post_training_quantization(cnn& model, const xq::quantize_options& options, const xq::dataset& train,
                                      const xq::dataset& test, const std::string& log_dir = {});

/// The QAT twin of `model`: `xq::quantize_model(model, options, {1, 28, 28, 1})`, instantiated
/// in deploy_qat.cpp beside the PTQ twin's (the same instantiation serves both).
xq::quantize_t<cnn> qat_twin(cnn& model, const xq::quantize_options& options);

/// What the deployment of the QAT twin measured (accuracies on the test images).
struct qat_deployment {
  double simulated_accuracy = 0;
  double engine_accuracy = 0, engine_same_top1 = 0;                ///< int32 biases
  double float_bias_accuracy = 0, float_bias_same_top1 = 0;        ///< float biases
  double onnxruntime_accuracy = -1, onnxruntime_same_top1 = -1;    ///< -1: not run
  std::string onnx_file;
};

/// The QAT twin lowered (its summary printed), compared with its simulation, exported and
/// (with --onnxruntime) run in onnxruntime: fashion::deploy. With a `log_dir`, the parity
/// report per layer goes to TensorBoard's run `<log_dir>/deploy`.
qat_deployment deploy_qat(xq::quantize_t<cnn>& qat, const xq::dataset& test, const run_options& s,
                          const std::string& log_dir = {});

}  // namespace fashion
