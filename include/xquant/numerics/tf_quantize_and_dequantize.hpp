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

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
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

inline qdq_range compute_quantization_range(bool signed_input, int num_bits, bool narrow_range,
                                            float min, float max) {
  // TF keeps the grid ends as int64 and lets them convert to float here.
  const long long min_q = signed_input ? -(1LL << (num_bits - 1)) + (narrow_range ? 1 : 0) : 0;
  const long long max_q = signed_input ? (1LL << (num_bits - 1)) - 1 : (1LL << num_bits) - 1;
  const float qmin = float(min_q), qmax = float(max_q);
  const float from_min = qmin * min > 0 ? qmin / min : std::numeric_limits<float>::max();
  const float from_max = qmax * max > 0 ? qmax / max : std::numeric_limits<float>::max();
  qdq_range r{min, max, 0.0f, 0.0f};
  if (from_min < from_max) {
    r.scale = from_min;
    r.inverse_scale = min / qmin;
    r.max = qmax * r.inverse_scale;
  } else {
    r.scale = from_max;
    r.inverse_scale = max / qmax;
    r.min = qmin * r.inverse_scale;
  }
  return r;
}

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

inline void check_qdq_options(const qdq_options& o, const char* where) {
  const int limit = o.signed_input ? 62 : 63;
  if (o.num_bits <= 0 || o.num_bits >= limit)
    throw argument_error(where, xq::detail::concat("num_bits in [1, ", limit - 1, "]"),
                         xq::detail::concat("num_bits = ", o.num_bits));
}

/// Ranges of every channel (one channel when not per_axis), with the tensor's
/// own min/max when the range is not given.
struct qdq_ranges {
  kernels::channel_layout layout;
  std::vector<float> min, max, scale, inverse_scale, grad_min, grad_max;

  qdq_ranges(const tensor& x, const tensor& input_min, const tensor& input_max,
             const qdq_options& o, const char* where) {
    check_qdq_options(o, where);
    if (o.per_axis) {
      layout = kernels::channel_layout::of(x.shape(), o.axis, where);
    } else {
      layout = kernels::channel_layout{1, 1, x.size()};
    }
    const std::size_t n = layout.channels;
    if (input_min.size() != n || input_max.size() != n)
      throw argument_error(where,
                           xq::detail::concat("input_min and input_max with ", n,
                                              o.per_axis ? " values (the axis length)" : " value"),
                           xq::detail::concat(input_min.size(), " and ", input_max.size(), " values"));
    for (auto* v : {&min, &max, &scale, &inverse_scale, &grad_min, &grad_max}) v->resize(n);
    std::vector<float> lo(n), hi(n);
    if (o.range_given) {
      for (std::size_t c = 0; c < n; ++c) {
        lo[c] = input_min.data()[c];
        hi[c] = input_max.data()[c];
        if (lo[c] > hi[c])
          throw argument_error(where, "input_min <= input_max",
                               xq::detail::concat("input_min = ", lo[c], " > input_max = ", hi[c],
                                                  o.per_axis ? xq::detail::concat(" at index ", c) : ""));
      }
    } else {
      if (x.size() == 0) {
        std::fill(lo.begin(), lo.end(), 0.0f);
        std::fill(hi.begin(), hi.end(), 0.0f);
      } else {
        std::fill(lo.begin(), lo.end(), std::numeric_limits<float>::infinity());
        std::fill(hi.begin(), hi.end(), -std::numeric_limits<float>::infinity());
        // Eigen's reductions keep the later of two equal values, which
        // decides the sign of an all-zero range (and so of 0 * inverse).
        // NaN is skipped.
        const float* p = x.data();
        for (std::size_t o2 = 0; o2 < layout.outer; ++o2)
          for (std::size_t c = 0; c < n; ++c)
            for (std::size_t i = 0; i < layout.inner; ++i) {
              const float v = p[(o2 * n + c) * layout.inner + i];
              if (v <= lo[c]) lo[c] = v;
              if (v >= hi[c]) hi[c] = v;
            }
      }
    }
    for (std::size_t c = 0; c < n; ++c) {
      const qdq_range r = compute_quantization_range(o.signed_input, o.num_bits, o.narrow_range,
                                                     lo[c], hi[c]);
      min[c] = r.min;
      max[c] = r.max;
      scale[c] = r.scale;
      inverse_scale[c] = r.inverse_scale;
      grad_min[c] = input_min.data()[c];
      grad_max[c] = input_max.data()[c];
    }
  }

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
  tensor y = xt::empty<float>(x.shape());
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
  tensor dx = xt::empty<float>(x.shape());
  const auto table = r.table<round_mode::half_to_even, true>();
  if (r.layout.channels == 1)
    kernels::backward(Policy{}, table.template at<float>(0), x.data(), dy.data(), dx.data(),
                      x.size());
  else
    kernels::backward_channels(Policy{}, table, r.layout, x.data(), dy.data(), dx.data());
  return dx;
}

}  // namespace xq::tf
