#pragma once
/// \file histogram_calibrators.hpp
/// The post-training calibrators, each with its peer's exact algorithm (one header each):
///
///  - `xq::nvidia::max_calibrator`, `xq::nvidia::histogram_calibrator` (entropy, mse,
///    percentile): pytorch-quantization / ModelOpt (nvidia_calibrators.hpp);
///  - `xq::torch::histogram_observer`: PyTorch's HistogramObserver (torch_histogram_observer.hpp);
///  - `xq::ort::percentile_calibrator`: ONNX Runtime's PercentileCalibrater
///    (ort_percentile_calibrator.hpp).
///
/// Each takes batches with `collect(data, n)` (or a tensor), returns its calibrated range
/// (an amax, a min/max, or scale and zero point), and exposes its state (counts, edges,
/// range) as vectors and scalars that `restore` takes back. Their defaults differ as the
/// peers' do: |x| histograms with a 99.99 percentile (NVIDIA) against a signed range with a
/// two-sided 99.999 (ONNX Runtime) and an L2 search over a signed range (PyTorch); the
/// histogram's re-binning on range growth differs in all three. They are pure numerics on
/// float32 data; golden tests against the peers' own code: tests/numerics/
/// test_histogram_calibrators.cpp (tools/gen_golden_calibrators.py).

#include "nvidia_calibrators.hpp"
#include "ort_percentile_calibrator.hpp"
#include "torch_histogram_observer.hpp"
