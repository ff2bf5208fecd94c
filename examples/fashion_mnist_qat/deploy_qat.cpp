// The QAT example's PTQ and deployment steps (deploy_qat.hpp says why they are apart).

#include "deploy_qat.hpp"

#include <algorithm>
#include <iostream>
#include <vector>

#include <xquant/deploy/lower.hpp>
#include <xquant/deploy/parity.hpp>
#include <xquant/deploy/parity_log.hpp>
#include <xquant/io/calibration_log.hpp>
#include <xquant/quantizers/calibrate.hpp>

#include "../fashion_mnist/deployment.hpp"

namespace fashion {

ptq_result post_training_quantization(cnn& model, const xq::quantize_options& options, const xq::dataset& train,
                                      const xq::dataset& test, const std::string& log_dir) {
  auto ptq = xq::quantize_model(model, options, {1, 28, 28, 1});
  ptq_result r;
  r.calibration_images = std::min<std::size_t>(2000, train.size());
  std::vector<std::size_t> first(r.calibration_images);
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = i;
  const xq::calibration_result calibration = xq::calibrate(ptq, xq::gather_rows(train.inputs, first.data(), first.size()));
  if (!log_dir.empty()) {
    xq::summary_writer w(log_dir + "/ptq");
    xq::log_calibration(w, calibration);
  }
  const auto engine = xq::deploy::lower(ptq, {28, 28, 1});
  const auto report = xq::deploy::parity(ptq, engine, test.inputs, &test.targets, 500);
  r.simulated_accuracy = report.simulated_accuracy();
  r.engine_accuracy = report.engine_accuracy();
  return r;
}

xq::quantize_t<cnn> qat_twin(cnn& model, const xq::quantize_options& options) {
  return xq::quantize_model(model, options, {1, 28, 28, 1});
}

qat_deployment deploy_qat(xq::quantize_t<cnn>& qat, const xq::dataset& test, const run_options& s,
                          const std::string& log_dir) {
  const auto engine = xq::deploy::lower(qat, {28, 28, 1});
  std::cout << engine.summary();
  const deployment_result d = deploy(qat, engine, test, s, "fashion_mnist_qat");
  if (!log_dir.empty()) {
    xq::summary_writer w(log_dir + "/deploy");
    xq::deploy::log_parity(w, d.parity);
  }
  qat_deployment r;
  r.simulated_accuracy = d.parity.simulated_accuracy();
  r.engine_accuracy = d.parity.engine_accuracy();
  r.engine_same_top1 = d.parity.same_top1_share();
  r.float_bias_accuracy = d.parity_float_bias.engine_accuracy();
  r.float_bias_same_top1 = d.parity_float_bias.same_top1_share();
  r.onnxruntime_accuracy = d.onnxruntime_accuracy;
  r.onnxruntime_same_top1 = d.onnxruntime_same_top1;
  r.onnx_file = d.onnx_file;
  return r;
}

}  // namespace fashion
