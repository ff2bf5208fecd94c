#pragma once
/// \file quantizer_numerics.hpp
/// `xq::quantizer_numerics`: whose fake-quant operator a fake quantizer runs, forward and
/// straight-through backward, bit for bit as the operator functions of numerics/. One of
/// the two parts a `fake_quantizer` is composed of (the other is its range tracker,
/// range_tracker.hpp). The implementations, one per peer:
///  - tf_qdq_numerics.hpp: TF `quantize_and_dequantize_v4` with the range given, half to
///    even (NVIDIA's toolkit); its gradient, dy where min <= x <= max;
///  - tf_fake_quant_numerics.hpp: TF `fake_quant_with_min_max_vars[_per_channel]`
///    (tfmot); dy inside the nudged range;
///  - torch_fake_quant_numerics.hpp: PyTorch `fake_quantize_per_{tensor,channel}_affine`
///    with the observer's qparams; its cachemask gradient.
/// A numerics is a stateless policy: it reads the range it is given.

#include <functional>
#include <string>
#include <utility>

#include "../config.hpp"
#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../kernels/channel_layout.hpp"
#include "quantization_grid.hpp"
#include "quantizer_config.hpp"

namespace xq {

/// What a numerics computes for one call: the output, and (when a gradient was asked
/// for) the function from the output's gradient to the input's.
struct quantized_output {
  tensor y;
  std::function<tensor(const tensor& dy)> input_gradient;
};

class quantizer_numerics {
 public:
  virtual ~quantizer_numerics() = default;

  /// Fake-quantizes `x` (laid out as `l`) with the range [min(c), max(c)] of each channel
  /// (one value per tensor; per channel: `l.channels` values, or none before a PyTorch
  /// observer's first batch). With `with_gradient`, also the straight-through input
  /// gradient for that range, which may read `x` when called: the caller keeps `x` alive
  /// and unchanged until then (fake_quantizer's recorded step holds its input var), so
  /// no implementation needs to copy it. Errors name `where` (the quantizer's path).
  virtual quantized_output apply(const quantizer_config& c, const tensor& x, const kernels::channel_layout& l,
                                  const vector& min, const vector& max, bool with_gradient,
                                  const std::string& where) const = 0;

  /// The integer grid `apply` rounds onto with this range, for a tensor with `channels`
  /// channels (1 per tensor): what an exporter writes for DequantizeLinear and what the
  /// integer engine computes on (quantization_grid.hpp). Errors name `where`.
  virtual quantization_grid grid(const quantizer_config& c, std::size_t channels, const vector& min,
                                 const vector& max, const std::string& where) const = 0;

 protected:
  /// Runs `f`; an argument_error from an operator is rethrown naming `where` (and the operator).
  template <class F>
  static auto at(const std::string& where, F&& f) {
    try {
      return f();
    } catch (const argument_error& e) {
      throw argument_error(where, e.expected(), detail::concat(e.given(), " (in ", e.where(), ")"));
    }
  }

  /// The gradient dy * mask of an operator that wrote its mask alongside y, under TF's
  /// denormal flushing when `flush` (TF's gradient ops flush a denormal dy to 0).
  static std::function<tensor(const tensor&)> masked_gradient(mask_tensor mask, bool flush);

  /// `v` as a tensor of shape {v.size()}.
  static tensor as_tensor(const vector& v);
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/quantizer_numerics.ipp"
#endif
