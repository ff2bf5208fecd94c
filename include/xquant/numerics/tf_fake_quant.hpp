#pragma once
/// \file tf_fake_quant.hpp
/// TensorFlow's `fake_quant_with_min_max_{args,vars,vars_per_channel}` and
/// their gradients, bit for bit (tensorflow/core/kernels/
/// fake_quant_ops_functor.h; docs/semantics.md §1). This is the op under every
/// tfmot quantizer.
///
/// What makes it TF's and not PyTorch's:
///  - the range is *nudged* so 0.0 is a grid point: the zero point is rounded
///    half away from zero (std::round), then the range shifted, scale kept;
///  - the input is clamped to the nudged range *before* rounding, and ties
///    round up (floor(v + 0.5)) on the shifted, non-negative value;
///  - the Vars op divides by the scale, Args and PerChannel multiply by an
///    inverse computed as (qmax - qmin) / (max - min): keep that asymmetry;
///  - the input gradient passes where nudged_min <= x <= nudged_max
///    (inclusive); d_min and d_max sum dy below and above the nudged range, in
///    TF's order (tf_cpu_reductions.hpp: bit for bit where TF sums in one shard);
///  - min = max = 0 gives zeros forward and passes the gradient through;
///  - like every TF CPU op, it runs with denormals flushed to zero
///    (core/fp_environment.hpp): a denormal input counts as 0.

#include <algorithm>
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
#include "tf_cpu_reductions.hpp"

namespace xq::tf {

/// TF changed the forward formula once; both are available.
enum class revision {
  current,  ///< TF >= 2.6: floor(shifted * inv - quant_zero + 0.5) * scale
  legacy    ///< earlier: floor(shifted * inv + 0.5) * scale + nudged_min
};

/// Integer grid of FakeQuant: unsigned, [narrow ? 1 : 0, 2^bits - 1].
struct quant_grid {
  int quant_min;
  int quant_max;
};

XQ_DECL quant_grid fake_quant_grid(int num_bits, bool narrow_range, const char* where);

/// The nudged range and its step (TF's `Nudge`).
struct nudged_range {
  float min;
  float max;
  float scale;
  float inv_scale;  ///< (qmax - qmin) / (max - min), not 1 / scale
};

XQ_DECL nudged_range nudge(float min, float max, quant_grid g);

/// How the shifted value is brought to the grid.
enum class step_form {
  quotient,  ///< shifted / scale         (FakeQuantWithMinMaxVars)
  product    ///< shifted * inv_scale     (Args and PerChannel)
};

/// One FakeQuant kernel. P is float (one range) or a batch (one range per
/// lane, for channels on the last axis). `pass_all` != 0 marks TF's
/// min = max = 0 case: output 0 (all parameters are 0), gradient passed
/// through, no range gradient. (Not "scale == 0": a tiny range whose scale
/// flushes to 0 gives NaN in TF, and so here.)
template <revision Rev, step_form Form, class P = float, bool MayPassAll = true>
struct fake_quant_kernel {
  P nudged_min, nudged_max, scale, inv_scale, quant_zero, pass_all;

  static constexpr std::size_t param_grad_count = 2;  // d_min, d_max

  template <class V>
  XQ_HOST_DEVICE V forward(const V& x) const {
    const V lo(nudged_min), hi(nudged_max), s(scale);
    const V shifted = math::max(math::min(x, hi), lo) - lo;
    const V steps = Form == step_form::quotient ? shifted / s : shifted * V(inv_scale);
    V y;
    if constexpr (Rev == revision::current) {
      y = math::floor(steps - V(quant_zero) + V(0.5f)) * s;
    } else {
      y = math::floor(steps + V(0.5f)) * s + lo;
    }
    // TF fills a min = max = 0 range with zeros, whatever x is (NaN too).
    if constexpr (MayPassAll) return math::select(V(pass_all) != V(0.0f), V(0.0f), y);
    else return y;
  }

  template <class V>
  XQ_HOST_DEVICE auto passes(const V& x) const {
    const auto inside = math::logical_and(x >= V(nudged_min), x <= V(nudged_max));
    if constexpr (MayPassAll) return math::logical_or(inside, V(pass_all) != V(0.0f));
    else return inside;
  }

  template <class V>
  XQ_HOST_DEVICE V input_grad(const V& x, const V& dy) const {
    return dy * math::as_float(passes(x));
  }

  template <class V>
  XQ_HOST_DEVICE void param_grad_terms(const V& x, const V& dy, V* terms) const {
    const auto live = V(pass_all) == V(0.0f);
    terms[0] = dy * math::as_float(math::logical_and(x < V(nudged_min), live));
    terms[1] = dy * math::as_float(math::logical_and(x > V(nudged_max), live));
  }
};

/// Per-channel ranges, structure of arrays (channels on the last axis).
/// MayPassAll = false: no channel has min = max = 0 (the kernels skip that test).
template <revision Rev, step_form Form, bool MayPassAll = true>
struct fake_quant_channels {
  const float* nudged_min;
  const float* nudged_max;
  const float* scale;
  const float* inv_scale;
  const float* quant_zero;
  const float* pass_all;

  template <class P>  // inlined: the walkers call it once per column of a tile
  XQ_ALWAYS_INLINE XQ_HOST_DEVICE fake_quant_kernel<Rev, Form, P, MayPassAll> at(std::size_t c) const {
    return {math::load_param<P>(nudged_min + c), math::load_param<P>(nudged_max + c),
            math::load_param<P>(scale + c), math::load_param<P>(inv_scale + c),
            math::load_param<P>(quant_zero + c), math::load_param<P>(pass_all + c)};
  }
};

namespace detail {

/// The same kernel without the per-element min = max = 0 check, for a
/// single range known not to be empty (saves two operations per batch).
template <revision Rev, step_form Form>
fake_quant_kernel<Rev, Form, float, false> nonempty(const fake_quant_kernel<Rev, Form>& k) {
  return {k.nudged_min, k.nudged_max, k.scale, k.inv_scale, k.quant_zero, 0.0f};
}

template <revision Rev, step_form Form>
fake_quant_kernel<Rev, Form> make_kernel(float min, float max, quant_grid g, const char* where) {
  if (!std::isfinite(min) || !std::isfinite(max))
    throw argument_error(where, "finite min and max", xq::detail::concat("min = ", min, ", max = ", max));
  if (min > max)
    throw argument_error(where, "min <= max", xq::detail::concat("min = ", min, ", max = ", max));
  if (min == 0.0f && max == 0.0f) return {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f};
  if (min == max)  // TF would divide by a zero scale and return NaN.
    throw argument_error(where, "min < max, or min = max = 0",
                         xq::detail::concat("min = max = ", min));
  nudged_range r = nudge(min, max, g);
  if (Rev == revision::legacy) r.inv_scale = 1.0f / r.scale;
  const float quant_zero = std::floor(-r.min * r.inv_scale + 0.5f);
  return {r.min, r.max, r.scale, r.inv_scale, quant_zero, 0.0f};
}

/// Owning storage for a channel table.
template <revision Rev, step_form Form>
struct channel_ranges {
  std::vector<float> nudged_min, nudged_max, scale, inv_scale, quant_zero, pass_all;

  channel_ranges(const vector& min, const vector& max, quant_grid g, const char* where) {
    const std::size_t n = min.size();
    for (auto* v : {&nudged_min, &nudged_max, &scale, &inv_scale, &quant_zero, &pass_all})
      v->resize(n);
    for (std::size_t c = 0; c < n; ++c) {
      const auto k = make_kernel<Rev, Form>(min(c), max(c), g, where);
      nudged_min[c] = k.nudged_min;
      nudged_max[c] = k.nudged_max;
      scale[c] = k.scale;
      inv_scale[c] = k.inv_scale;
      quant_zero[c] = k.quant_zero;
      pass_all[c] = k.pass_all;
    }
  }
  template <bool MayPassAll = true>
  fake_quant_channels<Rev, Form, MayPassAll> table() const {
    return {nudged_min.data(), nudged_max.data(), scale.data(),
            inv_scale.data(),  quant_zero.data(), pass_all.data()};
  }

  /// f(table) with the per-element min = max = 0 test only where some channel
  /// has that range: the test is two of the ten operations per batch.
  template <class F>
  void with_table(F&& f) const {
    if (std::find(pass_all.begin(), pass_all.end(), 1.0f) != pass_all.end()) f(table<true>());
    else f(table<false>());
  }
};

/// The layout of `x` with one channel per index of its last dimension, checked against
/// the lengths of `min` and `max`.
XQ_DECL kernels::channel_layout last_axis_layout(const tensor& x, const vector& min, const vector& max,
                                                 const char* where);

/// The elementwise terms of d_min and d_max (dy below / above the nudged range) of the
/// elements first, first + stride, ... of x: TF sums them in its own order (tf_cpu_reductions.hpp).
struct range_gradient_terms {
  std::vector<float> below, above;

  template <class K>
  range_gradient_terms(const K& k, const tensor& x, const tensor& dy, std::size_t first = 0, std::size_t stride = 1)
      : below(x.size() > first ? (x.size() - first + stride - 1) / stride : 0), above(below.size()) {
    const float* xs = x.data() + first;
    const float* g = dy.data() + first;
    for (std::size_t i = 0; i < below.size(); ++i) {
      float t[2];
      k.param_grad_terms(xs[i * stride], g[i * stride], t);
      below[i] = t[0];
      above[i] = t[1];
    }
  }
};

}  // namespace detail

/// Gradients of a per-tensor FakeQuant.
struct fake_quant_gradients {
  tensor dx;
  float dmin;
  float dmax;
};

/// Gradients of a per-channel FakeQuant.
struct fake_quant_channel_gradients {
  tensor dx;
  vector dmin;
  vector dmax;
};

/// Output and straight-through mask, computed in one pass.
struct fake_quant_result {
  tensor y;
  mask_tensor mask;
};

// ---- fake_quant_with_min_max_args ---------------------------------------------

/// `tf.quantization.fake_quant_with_min_max_args`. Unlike the Vars op, TF
/// rejects min >= max here.
template <class Policy = default_policy>
tensor fake_quant_with_min_max_args(const tensor& x, float min = -6.0f, float max = 6.0f,
                                    int num_bits = 8, bool narrow_range = false,
                                    revision rev = revision::current) {
  constexpr const char* where = "tf.fake_quant_with_min_max_args";
  const flush_denormals_scope as_in_tensorflow;
  const quant_grid g = fake_quant_grid(num_bits, narrow_range, where);
  if (!(min < max))
    throw argument_error(where, "min < max", xq::detail::concat("min = ", min, ", max = ", max));
  tensor y = tensor::from_shape(x.shape());
  // min < max: the range is not empty.
  if (rev == revision::current)
    kernels::forward(Policy{},
                     detail::nonempty(detail::make_kernel<revision::current, step_form::product>(min, max, g, where)),
                     x.data(), y.data(), x.size());
  else
    kernels::forward(Policy{},
                     detail::nonempty(detail::make_kernel<revision::legacy, step_form::product>(min, max, g, where)),
                     x.data(), y.data(), x.size());
  return y;
}

/// `FakeQuantWithMinMaxArgsGradient`: dy where nudged_min <= x <= nudged_max.
template <class Policy = default_policy>
tensor fake_quant_with_min_max_args_gradient(const tensor& dy, const tensor& x, float min = -6.0f,
                                             float max = 6.0f, int num_bits = 8,
                                             bool narrow_range = false) {
  constexpr const char* where = "tf.fake_quant_with_min_max_args_gradient";
  const flush_denormals_scope as_in_tensorflow;
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  const quant_grid g = fake_quant_grid(num_bits, narrow_range, where);
  if (!(min < max))
    throw argument_error(where, "min < max", xq::detail::concat("min = ", min, ", max = ", max));
  tensor dx = tensor::from_shape(x.shape());
  kernels::backward(Policy{},
                    detail::nonempty(detail::make_kernel<revision::current, step_form::product>(min, max, g, where)),
                    x.data(), dy.data(), dx.data(), x.size());
  return dx;
}

// ---- fake_quant_with_min_max_vars -------------------------------------------

/// `tf.quantization.fake_quant_with_min_max_vars`.
template <class Policy = default_policy>
tensor fake_quant_with_min_max_vars(const tensor& x, float min, float max, int num_bits = 8,
                                    bool narrow_range = false, revision rev = revision::current) {
  constexpr const char* where = "tf.fake_quant_with_min_max_vars";
  const flush_denormals_scope as_in_tensorflow;
  const quant_grid g = fake_quant_grid(num_bits, narrow_range, where);
  tensor y = tensor::from_shape(x.shape());
  if (rev == revision::current) {
    const auto k = detail::make_kernel<revision::current, step_form::quotient>(min, max, g, where);
    if (k.pass_all != 0.0f) {  // min = max = 0
      std::fill(y.begin(), y.end(), 0.0f);
      return y;
    }
    kernels::forward(Policy{}, detail::nonempty(k), x.data(), y.data(), x.size());
  } else {
    kernels::forward(Policy{},
                     detail::make_kernel<revision::legacy, step_form::quotient>(min, max, g, where),
                     x.data(), y.data(), x.size());
  }
  return y;
}

/// Forward and the gradient mask of fake_quant_with_min_max_vars, one pass.
template <class Policy = default_policy>
fake_quant_result fake_quant_with_min_max_vars_and_mask(const tensor& x, float min, float max,
                                                        int num_bits = 8,
                                                        bool narrow_range = false) {
  constexpr const char* where = "tf.fake_quant_with_min_max_vars";
  const flush_denormals_scope as_in_tensorflow;
  const quant_grid g = fake_quant_grid(num_bits, narrow_range, where);
  fake_quant_result r{tensor::from_shape(x.shape()), mask_tensor(x.shape())};
  const auto k = detail::make_kernel<revision::current, step_form::quotient>(min, max, g, where);
  if (k.pass_all != 0.0f) {
    std::fill(r.y.begin(), r.y.end(), 0.0f);
    std::fill(r.mask.begin(), r.mask.end(), true);
    return r;
  }
  kernels::forward_with_mask(Policy{}, detail::nonempty(k), x.data(), r.y.data(), r.mask.data(),
                             x.size());
  return r;
}

/// `FakeQuantWithMinMaxVarsGradient`: dx, d_min, d_max.
template <class Policy = default_policy>
fake_quant_gradients fake_quant_with_min_max_vars_gradient(const tensor& dy, const tensor& x,
                                                           float min, float max, int num_bits = 8,
                                                           bool narrow_range = false) {
  constexpr const char* where = "tf.fake_quant_with_min_max_vars_gradient";
  const flush_denormals_scope as_in_tensorflow;
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  const quant_grid g = fake_quant_grid(num_bits, narrow_range, where);
  fake_quant_gradients r{tensor::from_shape(x.shape()), 0.0f, 0.0f};
  // The kernel's pass_all case covers min = max = 0 (dx = dy exactly).
  const auto k = detail::make_kernel<revision::current, step_form::product>(min, max, g, where);
  kernels::backward(Policy{}, k, x.data(), dy.data(), r.dx.data(), x.size());
  const detail::range_gradient_terms terms(k, x, dy);
  r.dmin = cpu::sum(terms.below.data(), x.size());
  r.dmax = cpu::sum(terms.above.data(), x.size());
  return r;
}

// ---- fake_quant_with_min_max_vars_per_channel -----------------------------------

/// `tf.quantization.fake_quant_with_min_max_vars_per_channel`: one range per
/// index of the last dimension.
template <class Policy = default_policy>
tensor fake_quant_with_min_max_vars_per_channel(const tensor& x, const vector& min,
                                                const vector& max, int num_bits = 8,
                                                bool narrow_range = false,
                                                revision rev = revision::current) {
  constexpr const char* where = "tf.fake_quant_with_min_max_vars_per_channel";
  const flush_denormals_scope as_in_tensorflow;
  const quant_grid g = fake_quant_grid(num_bits, narrow_range, where);
  const auto layout = detail::last_axis_layout(x, min, max, where);
  tensor y = tensor::from_shape(x.shape());
  if (rev == revision::current) {
    const detail::channel_ranges<revision::current, step_form::product> ranges(min, max, g, where);
    ranges.with_table([&](const auto& t) { kernels::forward_channels(Policy{}, t, layout, x.data(), y.data()); });
  } else {
    const detail::channel_ranges<revision::legacy, step_form::quotient> ranges(min, max, g, where);
    ranges.with_table([&](const auto& t) { kernels::forward_channels(Policy{}, t, layout, x.data(), y.data()); });
  }
  return y;
}

template <class Policy = default_policy>
fake_quant_result fake_quant_with_min_max_vars_per_channel_and_mask(const tensor& x,
                                                                    const vector& min,
                                                                    const vector& max,
                                                                    int num_bits = 8,
                                                                    bool narrow_range = false) {
  constexpr const char* where = "tf.fake_quant_with_min_max_vars_per_channel";
  const flush_denormals_scope as_in_tensorflow;
  const quant_grid g = fake_quant_grid(num_bits, narrow_range, where);
  const auto layout = detail::last_axis_layout(x, min, max, where);
  fake_quant_result r{tensor::from_shape(x.shape()), mask_tensor(x.shape())};
  const detail::channel_ranges<revision::current, step_form::product> ranges(min, max, g, where);
  ranges.with_table([&](const auto& t) {
    kernels::forward_channels_with_mask(Policy{}, t, layout, x.data(), r.y.data(), r.mask.data());
  });
  return r;
}

/// `FakeQuantWithMinMaxVarsPerChannelGradient`: dx and per-channel d_min, d_max.
template <class Policy = default_policy>
fake_quant_channel_gradients fake_quant_with_min_max_vars_per_channel_gradient(
    const tensor& dy, const tensor& x, const vector& min, const vector& max, int num_bits = 8,
    bool narrow_range = false) {
  constexpr const char* where = "tf.fake_quant_with_min_max_vars_per_channel_gradient";
  const flush_denormals_scope as_in_tensorflow;
  xq::detail::require_same_shape(where, x, dy, "a gradient");
  const quant_grid g = fake_quant_grid(num_bits, narrow_range, where);
  const auto layout = detail::last_axis_layout(x, min, max, where);
  const detail::channel_ranges<revision::current, step_form::product> ranges(min, max, g, where);
  fake_quant_channel_gradients r{tensor::from_shape(x.shape()), vector::from_shape({layout.channels}),
                                 vector::from_shape({layout.channels})};
  ranges.with_table(
      [&](const auto& t) { kernels::backward_channels(Policy{}, t, layout, x.data(), dy.data(), r.dx.data()); });
  const std::size_t C = layout.channels;
  for (std::size_t c = 0; c < C; ++c) {
    // TF sums each channel as a full reduction of its column (a chip of the [N, C] view).
    const detail::range_gradient_terms terms(ranges.table().template at<float>(c), x, dy, c, C);
    r.dmin(c) = cpu::sum(terms.below.data(), layout.outer);
    r.dmax(c) = cpu::sum(terms.above.data(), layout.outer);
  }
  return r;
}

}  // namespace xq::tf

#if defined(XQ_SEPARATE_COMPILATION)
namespace xq::tf {
// The operators for the default policy and the scalar reference are compiled in the
// library (numerics/impl/tf_fake_quant.ipp).
extern template tensor fake_quant_with_min_max_args<simd_policy<>>(const tensor&, float, float, int, bool, revision);
extern template tensor fake_quant_with_min_max_args_gradient<simd_policy<>>(const tensor&, const tensor&, float, float,
                                                                            int, bool);
extern template tensor fake_quant_with_min_max_vars<simd_policy<>>(const tensor&, float, float, int, bool, revision);
extern template fake_quant_result fake_quant_with_min_max_vars_and_mask<simd_policy<>>(const tensor&, float, float, int,
                                                                                       bool);
extern template fake_quant_gradients fake_quant_with_min_max_vars_gradient<simd_policy<>>(const tensor&, const tensor&,
                                                                                          float, float, int, bool);
extern template tensor fake_quant_with_min_max_vars_per_channel<simd_policy<>>(const tensor&, const vector&,
                                                                               const vector&, int, bool, revision);
extern template fake_quant_result fake_quant_with_min_max_vars_per_channel_and_mask<simd_policy<>>(const tensor&,
                                                                                                   const vector&,
                                                                                                   const vector&, int,
                                                                                                   bool);
extern template fake_quant_channel_gradients fake_quant_with_min_max_vars_per_channel_gradient<simd_policy<>>(
    const tensor&, const tensor&, const vector&, const vector&, int, bool);

extern template tensor fake_quant_with_min_max_args<scalar_policy>(const tensor&, float, float, int, bool, revision);
extern template tensor fake_quant_with_min_max_args_gradient<scalar_policy>(const tensor&, const tensor&, float, float,
                                                                            int, bool);
extern template tensor fake_quant_with_min_max_vars<scalar_policy>(const tensor&, float, float, int, bool, revision);
extern template fake_quant_result fake_quant_with_min_max_vars_and_mask<scalar_policy>(const tensor&, float, float, int,
                                                                                       bool);
extern template fake_quant_gradients fake_quant_with_min_max_vars_gradient<scalar_policy>(const tensor&, const tensor&,
                                                                                          float, float, int, bool);
extern template tensor fake_quant_with_min_max_vars_per_channel<scalar_policy>(const tensor&, const vector&,
                                                                               const vector&, int, bool, revision);
extern template fake_quant_result fake_quant_with_min_max_vars_per_channel_and_mask<scalar_policy>(const tensor&,
                                                                                                   const vector&,
                                                                                                   const vector&, int,
                                                                                                   bool);
extern template fake_quant_channel_gradients fake_quant_with_min_max_vars_per_channel_gradient<scalar_policy>(
    const tensor&, const tensor&, const vector&, const vector&, int, bool);
}  // namespace xq::tf
#endif

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/tf_fake_quant.ipp"
#endif
