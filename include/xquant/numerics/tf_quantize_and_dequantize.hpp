#pragma once
/// \file tf_quantize_and_dequantize.hpp
/// TensorFlow's `quantize_and_dequantize_v2/v3/v4` (the QDQ node NVIDIA's
/// toolkit inserts) and the V4 gradient, bit for bit
/// (tensorflow/core/kernels/quantize_and_dequantize_op.h; docs/semantics.md §2).
///
/// What makes it TF QDQ:
///  - no zero point: 0 maps to 0, and the side of larger magnitude sets the
///    step; the other end of the range is moved to match (ComputeQuantizationRange);
///  - the scale multiplies (x * qmax/max) and the inverse multiplies back;
///  - rounding is half to even by default (HALF_UP is floor(v + 0.5));
///  - with range_given the input is clamped to the *adjusted* range; without
///    it the range is the tensor's own min and max and nothing is clamped;
///  - the V4 gradient passes dy where input_min <= x <= input_max, the range
///    as *given* (not adjusted), both ends inclusive; min/max get zero.

#include <cmath>
#include <cstddef>
#include <vector>

#include "../kernels/channel_layout.hpp"
#include "../kernels/math.hpp"
#include "../kernels/policy.hpp"
#include "../kernels/scalar.hpp"
#include "../kernels/simd.hpp"
#include "../core/fp_environment.hpp"
#include "../core/tensor.hpp"

namespace xq::tf {

enum class round_mode {
  half_to_even,  ///< "HALF_TO_EVEN", the default
  half_up        ///< "HALF_UP": floor(v + 0.5), so -5.5 goes to -5
};

/// The attributes of QuantizeAndDequantizeV2/V4 (V3 = V2 with half_to_even).
struct qdq_options {
  bool signed_input = true;  ///< really: a signed integer grid
  int num_bits = 8;
  bool range_given = false;
  round_mode round = round_mode::half_to_even;
  bool narrow_range = false;
  long axis = -1;  ///< channel axis when `per_axis` is set
  bool per_axis = false;
};

/// The adjusted range and the two multipliers (TF's ComputeQuantizationRange).
struct qdq_range {
  float min;
  float max;
  float scale;          ///< multiplies x onto the integer grid
  float inverse_scale;  ///< multiplies the integer back
};

/// The adjusted range of [min, max] on the grid of `num_bits` (signed or not, narrow or
/// not) and its two multipliers.
XQ_DECL qdq_range compute_quantization_range(bool signed_input, int num_bits, bool narrow_range, float min,
                                             float max);

/// One QDQ kernel; `Clamp` is range_given. P: float or a batch of channels.
template <round_mode Round, bool Clamp, class P = float>
struct quantize_and_dequantize_kernel {
  P min, max;            ///< adjusted range (the clamp)
  P scale, inverse_scale;
  P grad_min, grad_max;  ///< the range as given (the V4 gradient mask)

  template <class V>
  XQ_HOST_DEVICE V forward(const V& x) const {
    V v = x;
    if constexpr (Clamp) v = math::max(math::min(x, V(max)), V(min));
    const V scaled = v * V(scale);
    const V rounded = Round == round_mode::half_to_even ? math::round_half_even(scaled)
                                                        : math::round_half_up(scaled);
    return rounded * V(inverse_scale);
  }

  template <class V>
  XQ_HOST_DEVICE auto passes(const V& x) const {
    return math::logical_and(x >= V(grad_min), x <= V(grad_max));
  }

  template <class V>
  XQ_HOST_DEVICE V input_grad(const V& x, const V& dy) const {
    return dy * math::as_float(passes(x));
  }
};

template <round_mode Round, bool Clamp>
struct quantize_and_dequantize_channels {
  const float *min, *max, *scale, *inverse_scale, *grad_min, *grad_max;

  template <class P>
  XQ_HOST_DEVICE quantize_and_dequantize_kernel<Round, Clamp, P> at(std::size_t c) const {
    return {math::load_param<P>(min + c),   math::load_param<P>(max + c),
            math::load_param<P>(scale + c), math::load_param<P>(inverse_scale + c),
            math::load_param<P>(grad_min + c), math::load_param<P>(grad_max + c)};
  }
};

namespace detail {

/// Throws argument_error (at `where`) unless num_bits fits the grid.
XQ_DECL void check_qdq_options(const qdq_options& o, const char* where);

/// Ranges of every channel (one channel when not per_axis), with the tensor's
/// own min/max when the range is not given.
struct qdq_ranges {
  kernels::channel_layout layout;
  std::vector<float> min, max, scale, inverse_scale, grad_min, grad_max;

  qdq_ranges(const tensor& x, const tensor& input_min, const tensor& input_max, const qdq_options& o,
             const char* where);

  template <round_mode Round, bool Clamp>
  quantize_and_dequantize_channels<Round, Clamp> table() const {
    return {min.data(), max.data(), scale.data(), inverse_scale.data(), grad_min.data(),
            grad_max.data()};
  }
};

template <class Policy, round_mode Round, bool Clamp>
void run_qdq(const qdq_ranges& r, const float* x, float* y) {
  const auto table = r.table<Round, Clamp>();
  if (r.layout.channels == 1)  // one range: the flat (threaded) walker
    kernels::forward(Policy{}, table.template at<float>(0), x, y, r.layout.size());
  else
    kernels::forward_channels(Policy{}, table, r.layout, x, y);
}

}  // namespace detail

/// `tf.quantization.quantize_and_dequantize_v2` (the V4 op; V2 and V3 have the
/// same forward). `input_min`/`input_max` hold one value, or one per index of
/// `axis` when `per_axis`.
template <class Policy = default_policy>
tensor quantize_and_dequantize_v4(const tensor& x, const tensor& input_min,
                                  const tensor& input_max, const qdq_options& options = {}) {
  constexpr const char* where = "tf.quantize_and_dequantize_v4";
  const flush_denormals_scope as_in_tensorflow;
  const detail::qdq_ranges r(x, input_min, input_max, options, where);
  tensor y = tensor::from_shape(x.shape());
  const bool even = options.round == round_mode::half_to_even;
  if (options.range_given) {
    if (even) detail::run_qdq<Policy, round_mode::half_to_even, true>(r, x.data(), y.data());
    else detail::run_qdq<Policy, round_mode::half_up, true>(r, x.data(), y.data());
  } else {
    if (even) detail::run_qdq<Policy, round_mode::half_to_even, false>(r, x.data(), y.data());
    else detail::run_qdq<Policy, round_mode::half_up, false>(r, x.data(), y.data());
  }
  return y;
}

/// Scalar-range convenience form.
template <class Policy = default_policy>
tensor quantize_and_dequantize_v4(const tensor& x, float input_min, float input_max,
                                  const qdq_options& options = {}) {
  return quantize_and_dequantize_v4<Policy>(x, tensor(input_min), tensor(input_max), options);
}

/// `QuantizeAndDequantizeV4Grad`: dy where input_min <= x <= input_max, per
/// index of `axis` when `per_axis`. (The raw V2/V3 ops pass dy everywhere.)
template <class Policy = default_policy>
tensor quantize_and_dequantize_v4_gradient(const tensor& dy, const tensor& x,
                                           const tensor& input_min, const tensor& input_max,
                                           const qdq_options& options = {}) {
  constexpr const char* where = "tf.quantize_and_dequantize_v4_gradient";
  const flush_denormals_scope as_in_tensorflow;
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  qdq_options given = options;
  given.range_given = true;  // the gradient only reads the range as given
  const detail::qdq_ranges r(x, input_min, input_max, given, where);
  tensor dx = tensor::from_shape(x.shape());
  const auto table = r.table<round_mode::half_to_even, true>();
  if (r.layout.channels == 1)
    kernels::backward(Policy{}, table.template at<float>(0), x.data(), dy.data(), dx.data(),
                      x.size());
  else
    kernels::backward_channels(Policy{}, table, r.layout, x.data(), dy.data(), dx.data());
  return dx;
}

}  // namespace xq::tf

#if defined(XQ_SEPARATE_COMPILATION)
namespace xq::tf {
// The operators for the default policy and the scalar reference are compiled in the
// library (numerics/impl/tf_quantize_and_dequantize.ipp).
extern template tensor quantize_and_dequantize_v4<simd_policy<>>(const tensor&, const tensor&, const tensor&,
                                                                 const qdq_options&);
extern template tensor quantize_and_dequantize_v4<simd_policy<>>(const tensor&, float, float, const qdq_options&);
extern template tensor quantize_and_dequantize_v4_gradient<simd_policy<>>(const tensor&, const tensor&, const tensor&,
                                                                          const tensor&, const qdq_options&);
extern template tensor quantize_and_dequantize_v4<scalar_policy>(const tensor&, const tensor&, const tensor&,
                                                                 const qdq_options&);
extern template tensor quantize_and_dequantize_v4<scalar_policy>(const tensor&, float, float, const qdq_options&);
extern template tensor quantize_and_dequantize_v4_gradient<scalar_policy>(const tensor&, const tensor&, const tensor&,
                                                                          const tensor&, const qdq_options&);
}  // namespace xq::tf
#endif

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tf_quantize_and_dequantize.ipp"
#endif
