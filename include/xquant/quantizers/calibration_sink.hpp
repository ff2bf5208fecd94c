#pragma once
/// \file calibration_sink.hpp
/// `xq::calibration_sink`: where a fake quantizer's call hands its input while a
/// post-training calibration runs (calibrate.hpp); the quantizer then passes its input on
/// unchanged. One thread-local pointer, null outside a calibration.

#include "../core/tensor.hpp"

namespace xq {

class fake_quantizer;

/// What a fake quantizer's call tells while a calibration runs.
class calibration_sink {
 public:
  virtual void collect(const fake_quantizer& q, const tensor& x) = 0;
  /// The sink of this thread's running calibration, or nullptr.
  static calibration_sink*& current() noexcept {
    thread_local calibration_sink* s = nullptr;
    return s;
  }

 protected:
  ~calibration_sink() = default;
};

}  // namespace xq
