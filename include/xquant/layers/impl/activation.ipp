#pragma once
/// \file activation.ipp
/// The activations' code (layers/activation.hpp).

#include <cmath>

#include "../activation.hpp"

namespace xq {

XQ_DEFINE_SPECIAL_MEMBERS(relu)

XQ_DEFINE_SPECIAL_MEMBERS(relu6)

XQ_DEFINE_SPECIAL_MEMBERS(leaky_relu)

XQ_DEFINE_SPECIAL_MEMBERS(sigmoid)

XQ_DEFINE_SPECIAL_MEMBERS(tanh)

XQ_DEFINE_SPECIAL_MEMBERS(swish)

XQ_DEFINE_SPECIAL_MEMBERS(softmax)

namespace detail {

XQ_DECL float stable_sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

/// relu of one value (NaN and -0 pass through), for both forms of ops::relu.
XQ_ALWAYS_INLINE float relu_value(float v) { return v < 0.0f ? 0.0f : v; }

}  // namespace detail

namespace ops {

XQ_DECL var relu(const var& x) {
  return detail::traced_function("relu", layer_role::activation, x, detail::elementwise_from_input(
      x, [](float v) { return detail::relu_value(v); },
      // d * (v > 0 ? 1 : 0), the factor selected by bits: written as a cast of the
      // comparison, GCC made it a branch per element (24% of a CNN training step).
      [](float v, float d) { return d * kernels::branchless_select(v > 0.0f, 1.0f, 0.0f); }));
}

XQ_DECL var relu(var&& x) {
  const std::shared_ptr<variable_state>& s = x.state();
  // Held only by the caller's rvalue, or by it and the producer's backward step (which,
  // absorbing the relu, never reads its output's value): no one sees the value change.
  const bool alone = s && !detail::function_call_traced();
  const bool absorbable = alone && s->absorbs_relu && needs_grad(x) && s.use_count() == 2;
  const bool unrecorded = alone && !needs_grad(x) && s.use_count() == 1;
  if (!absorbable && !unrecorded) return relu(static_cast<const var&>(x));
  float* p = s->value.data();
  kernels::parallel_for(s->value.size(), 64, [p](std::size_t lo, std::size_t hi) {
    XQ_OMP_SIMD
    for (std::size_t i = lo; i < hi; ++i) p[i] = detail::relu_value(p[i]);
  });
  if (absorbable) {
    s->absorbs_relu->absorb_relu();
    s->absorbs_relu.reset();
  }
  return std::move(x);
}

XQ_DECL var relu6(const var& x) {
  return detail::traced_function("relu6", layer_role::activation, x, detail::elementwise_from_input(
      x, [](float v) { return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v); },
      [](float v, float d) { return d * static_cast<float>((v > 0.0f) & (v < 6.0f)); }));
}

XQ_DECL var leaky_relu(const var& x, float alpha) {
  return detail::traced_function("leaky_relu", layer_role::activation, x, detail::elementwise_from_input(
      // The factor (1 or alpha) selected first, then one multiply (x * 1 == x): vectorized.
      x, [alpha](float v) { return v * kernels::branchless_select(v > 0.0f, 1.0f, alpha); },
      [alpha](float v, float d) { return d * kernels::branchless_select(v > 0.0f, 1.0f, alpha); }));
}

XQ_DECL var sigmoid(const var& x) {
  return detail::traced_function("sigmoid", layer_role::activation, x, detail::elementwise_from_output(
      x, [](float v) { return detail::stable_sigmoid(v); },
      [](float y, float d) { return d * (y * (1.0f - y)); }));
}

XQ_DECL var tanh(const var& x) {
  return detail::traced_function("tanh", layer_role::activation, x, detail::elementwise_from_output(
      x, [](float v) { return std::tanh(v); }, [](float y, float d) { return d * (1.0f - y * y); }));
}

XQ_DECL var swish(const var& x) {
  return detail::traced_function("swish", layer_role::activation, x, detail::elementwise_from_input(
      x, [](float v) { return v * detail::stable_sigmoid(v); },
      [](float v, float d) {
        const float s = detail::stable_sigmoid(v);
        return d * (s * (1.0f + v * (1.0f - s)));
      }));
}

XQ_DECL var softmax(const var& x, const std::string& path) {
  if (x.dimension() < 1)
    throw shape_error(path, "input of rank 1 or more (softmax runs over the last axis)",
                      detail::shape_string(x.shape()));
  const std::size_t n = x.shape().back();
  const std::size_t rows = n == 0 ? 0 : x.size() / n;
  tensor y = tensor::from_shape(x.shape());
  const float* xp = x.value().data();
  float* yp = y.data();
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = xp + r * n;
    float* yr = yp + r * n;
    float m = xr[0];
    for (std::size_t j = 1; j < n; ++j) m = xr[j] > m ? xr[j] : m;
    double sum = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      yr[j] = std::exp(xr[j] - m);
      sum += yr[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (std::size_t j = 0; j < n; ++j) yr[j] *= inv;
  }
  // dx = y * (dy - sum(dy * y)) per row.
  return detail::traced_function("softmax", layer_role::activation, x, detail::make_result_with_output(std::move(y), needs_grad(x),
                                         [x, rows, n](const tensor& dy, const tensor& out) {
                                           tensor dx = tensor::from_shape(x.shape());
                                           for (std::size_t r = 0; r < rows; ++r) {
                                             const float* yr = out.data() + r * n;
                                             const float* dyr = dy.data() + r * n;
                                             float* dxr = dx.data() + r * n;
                                             double dot = 0.0;
                                             for (std::size_t j = 0; j < n; ++j)
                                               dot += static_cast<double>(dyr[j]) * yr[j];
                                             const float d = static_cast<float>(dot);
                                             for (std::size_t j = 0; j < n; ++j)
                                               dxr[j] = yr[j] * (dyr[j] - d);
                                           }
                                           add_grad(x, std::move(dx));
                                         }));
}

}  // namespace ops

XQ_DECL var relu::call(const var& x) const { return ops::relu(x); }

XQ_DECL var relu6::call(const var& x) const { return ops::relu6(x); }

XQ_DECL var leaky_relu::call(const var& x) const { return ops::leaky_relu(x, alpha_); }

XQ_DECL var sigmoid::call(const var& x) const { return ops::sigmoid(x); }

XQ_DECL var tanh::call(const var& x) const { return ops::tanh(x); }

XQ_DECL var swish::call(const var& x) const { return ops::swish(x); }

XQ_DECL var softmax::call(const var& x) const { return ops::softmax(x, path()); }

}  // namespace xq
