#pragma once
/// \file calibrate.hpp
/// Post-training quantization: `xq::calibrate(model, samples)` sets the range of every fake
/// quantizer that is on from inference passes over calibration samples, with the peers'
/// calibrators (numerics/nvidia_calibrators.hpp, torch_histogram_observer.hpp,
/// ort_percentile_calibrator.hpp; each golden-tested against its peer):
///
///   auto ptq = xq::quantize_model(model, options, {1, 28, 28, 1});   // the twin, ranges unset
///   xq::calibrate(ptq, calibration_images);                          // ranges from data
///   auto engine = xq::deploy::lower(ptq, {28, 28, 1});               // or export_onnx
///
/// How: while `calibrate` runs the model, every fake quantizer's call hands its input to a
/// calibration sink (one thread-local load per call otherwise). Per-tensor quantizers (the
/// activations) feed the chosen calibrator; per-channel ones (the kernels) keep the running
/// min and max per channel (NVIDIA's and PyTorch's weight calibration: max). After the
/// passes each quantizer's range is set: [-amax, amax] from NVIDIA's |x| calibrators,
/// [min, max] from PyTorch's HistogramObserver and onnxruntime's percentile. Nothing else
/// changes: no weight, no batch-norm statistic (inference mode), no training-batch counter.
///
/// Data-parallel calibration (a `sharded_batch` active for quantizer ranges, as
/// xq::dist::calibrate makes it): each batch is a rank's shard, and every calibrator collects
/// the whole batch (the ranges' extremes taken over the ranks, the histograms' counts
/// summed), so every rank ends with the ranges one process calibrating on all of it sets.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "../config.hpp"
#include "../core/mode.hpp"
#include "../core/sharded_batch.hpp"
#include "../core/tape.hpp"
#include "../core/tensor.hpp"
#include "calibration_sink.hpp"
#include "fake_quantizer.hpp"
#include "../core/layer_ref.hpp"
#include "model_quantizers.hpp"

namespace xq {

enum class calibration_method {
  max,                 ///< max |x| (NVIDIA MaxCalibrator, ModelOpt's default)
  nvidia_entropy,      ///< NVIDIA HistogramCalibrator, KL divergence (TensorRT's entropy calibration)
  nvidia_mse,          ///< NVIDIA HistogramCalibrator, MSE
  nvidia_percentile,   ///< NVIDIA HistogramCalibrator, percentile (99.99 by default)
  torch_histogram,     ///< PyTorch HistogramObserver (L2 search)
  ort_percentile       ///< onnxruntime PercentileCalibrater (99.999 by default, two-sided)
};

/// "max", "nvidia_entropy", ...
XQ_DECL const char* to_string(calibration_method m) noexcept;

struct calibration_options {
  calibration_method method = calibration_method::nvidia_percentile;
  /// The percentile of the percentile methods, in (0, 100]; 0: the peer's default (NVIDIA
  /// 99.99, ORT 99.999). Anything else (NaN, negative, above 100): argument_error.
  double percentile = 0;
  std::size_t batch_size = 256;
};

/// The ranges `calibrate` set, by quantizer path (one entry per tensor; per channel: the
/// smallest minimum and the largest maximum).
struct calibration_result {
  struct entry {
    std::string quantizer;
    float min = 0, max = 0;
    bool per_channel = false;
    /// The calibrator's histogram, where its method keeps one (NVIDIA's of |x|, PyTorch's
    /// HistogramObserver's, onnxruntime's): `histogram_counts[i]` values in
    /// [histogram_edges[i], histogram_edges[i + 1]); as many edges as counts + 1 (NVIDIA's
    /// extra edge after range growth dropped). Empty for max and per-channel calibration.
    std::vector<float> histogram_edges, histogram_counts;
  };
  std::vector<entry> ranges;
  std::size_t samples = 0;
};

namespace detail {

/// The calibrators of one calibration run (compiled): installed as this thread's sink for
/// its lifetime.
class calibration_session final : public calibration_sink {
 public:
  XQ_DECL explicit calibration_session(const calibration_options& o);
  XQ_DECL ~calibration_session();
  calibration_session(const calibration_session&) = delete;
  calibration_session& operator=(const calibration_session&) = delete;

  XQ_DECL void collect(const fake_quantizer& q, const tensor& x) override;
  /// Sets the ranges of `quantizers` that saw data (argument_error naming a quantizer on
  /// that saw none: the samples never reached it).
  XQ_DECL calibration_result finish(const std::vector<fake_quantizer*>& quantizers, std::size_t samples);

 private:
  struct state;
  calibration_options options_;
  std::vector<std::unique_ptr<state>> states_;
  calibration_sink* previous_;
};

}  // namespace detail

namespace detail {
/// The compiled part of calibrate (calibrate.ipp): `call(model, x)` runs the model.
XQ_DECL calibration_result calibrate_model(layer_ref model_ref, void* model, var (*call)(void*, const var&),
                                           const tensor& samples, const calibration_options& o);
}  // namespace detail

/// Calibrates the fake quantizers of `model` that are on, from `samples` (N, ...) run in
/// batches of `o.batch_size` (see the file comment). argument_error for no samples.
template <class Model>
calibration_result calibrate(Model& model, const tensor& samples, const calibration_options& o = {}) {
  return detail::calibrate_model(as_layer_ref(model), &model,
                                 [](void* m, const var& x) -> var { return (*static_cast<Model*>(m))(x); }, samples, o);
}

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/calibrate.ipp"
#endif
