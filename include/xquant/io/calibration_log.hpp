#pragma once
/// \file calibration_log.hpp
/// A post-training calibration (quantizers/calibrate.hpp) in TensorBoard: for each
/// calibrated quantizer (its path `<p>`), the calibrator's histogram where its method keeps
/// one (`calibration_histogram/<p>`: NVIDIA's of |x|, PyTorch's, onnxruntime's), the range
/// it chose (`calibration_min/<p>`, `calibration_max/<p>`), and the text `calibration`, a
/// table of every quantizer's range and the calibrator's histogram span.
///
/// \code
///   xq::calibration_result r = xq::calibrate(ptq, images);
///   xq::summary_writer w("runs/qat/ptq");
///   xq::log_calibration(w, r);
/// \endcode

#include <cstdint>

#include "../config.hpp"
#include "../quantizers/calibrate.hpp"
#include "summary_writer.hpp"

namespace xq {

/// Writes `r` at `step` (see the file comment).
XQ_DECL void log_calibration(summary_writer& writer, const calibration_result& r, std::int64_t step = 0);

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/calibration_log.ipp"
#endif
