#pragma once
/// \file larq_math.hpp
/// The elementwise pieces Larq's quantizers are made of (larq/math.py and
/// `_clipped_gradient` in larq/quantizers.py), each with Larq's edge cases, and the
/// two TensorFlow functions they call whose float results are not the correctly
/// rounded ones: `tf.tanh` (Eigen's rational approximation) and `tf.cosh` (libm's
/// coshf).
///
/// TensorFlow runs every op with denormals flushed to zero (FTZ) and read as zero
/// (DAZ): a Larq quantizer therefore sends -1e-45 to +1 (sign) and 1e-45 to 0
/// (heaviside). The quantizer layers run these functions inside
/// `flush_denormals_scope` to get the same results.

#include <cmath>
#include <cstddef>
#include <limits>

#include "../config.hpp"
#include "../core/tensor.hpp"
#include "../kernels/parallel.hpp"

namespace xq::larq {

/// Larq's `math.sign`: sign(sign(x) + 0.1), so 0 (and -0) give +1. NaN stays NaN.
inline float sign(float x) noexcept {
  return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : (x == 0.0f ? 1.0f : std::numeric_limits<float>::quiet_NaN());
}

/// Larq's `math.heaviside`: sign(relu(x)): 1 for x > 0, else 0 (NaN stays NaN).
inline float heaviside(float x) noexcept {
  return x > 0.0f ? 1.0f : (x <= 0.0f ? 0.0f : std::numeric_limits<float>::quiet_NaN());
}

/// DoReFa's activation level (Larq's `DoReFa`, mode "activations"): rint(clip(x, 0, 1) · n),
/// ties to even, as a float; the output is level / n. TF's clip_by_value: NaN stays NaN,
/// -0.0 gives +0.0.
inline float dorefa_activation_level(float x, float n) noexcept {
  const float low = (x > 0.0f || x != x) ? x : 0.0f;
  const float c = low > 1.0f ? 1.0f : low;
  return std::nearbyint(c * n);
}

/// DoReFa's weight level of t = tanh(w) (mode "weights"): rint((t / two_max + 1/2) · n),
/// two_max = 2 · max |tanh(w)| (Larq's divide_no_nan: 1/2 when it is 0); the output is
/// 2 · (level / n) - 1.
inline float dorefa_weight_level(float t, float two_max, float n) noexcept {
  const float u = (two_max != 0.0f ? t / two_max : 0.0f) + 0.5f;
  return std::nearbyint(u * n);
}

/// A denormal becomes a zero of its sign, as TensorFlow's flush-to-zero makes of a
/// product. Needed where the product is exact in IEEE arithmetic (a · ±1): the compiler
/// then emits ±a, a sign flip that no flush mode touches, and the denormal would survive.
inline float flush_denormal(float v) noexcept {
  return std::fabs(v) < std::numeric_limits<float>::min() ? std::copysign(0.0f, v) : v;
}

/// `tf.sign`: 1, -1, and x itself for ±0 and NaN.
inline float tf_sign(float x) noexcept { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }

/// `tf.tanh` for float32 on the CPU, bit for bit: Eigen's `ptanh_float`, a [9/8]
/// rational approximation on the input clamped to ±7.90738964 (TF's x86 build has no
/// FMA, so the clamp is that build's and every multiply-add rounds twice; the project
/// compiles with -ffp-contract=off so the compiler does not fuse them either). It
/// differs from std::tanh by a few ulp; TF's and this one agree on all floats tested.
inline float tanh(float a) noexcept {
  constexpr float clamp = 7.90738964080810547f;
  const float x = a > clamp ? clamp : (a < -clamp ? -clamp : a);  // NaN stays NaN
  const float x2 = x * x;
  const float x3 = x2 * x;
  float p = 1.394553628e-8f;
  p = p * x2 + 2.102733560e-5f;
  p = p * x2 + 3.520756727e-3f;
  p = p * x2 + 1.340216100e-1f;
  float q = 8.015776984e-7f;
  q = q * x2 + 3.326951409e-4f;
  q = q * x2 + 2.597254514e-2f;
  q = q * x2 + 4.673548340e-1f;
  q = q * x2 + 1.0f;
  p = x3 * p + x;  // x * (1 + x^2 p(x^2))
  return p / q;
}

/// `tf.cosh` for float32 on the CPU: Eigen has no vectorized cosh, so TF calls the C
/// library's coshf, as this does (glibc's coshf is not correctly rounded: TF's results
/// are those of the libm it runs with).
inline float cosh(float x) noexcept { return std::cosh(x); }

/// Larq's clipped straight-through gradient: dy where |x| <= clip (inclusive), else
/// 0 (NaN x gives 0). `clip` = +inf is Larq's `clip_value=None`: dy everywhere.
XQ_DECL tensor clipped_gradient(const tensor& x, const tensor& dy, float clip);

/// Checks a quantizer's clip_value: > 0, or +infinity for Larq's `clip_value=None`.
/// (Larq accepts any value; 0 or less would stop every gradient, NaN every one too.)
XQ_DECL void check_clip_value(const char* where, float clip);

/// `f` applied to every element of `x`.
template <class F>
tensor map(const tensor& x, F&& f) {
  tensor y = tensor::from_shape(x.shape());
  const float* xs = x.data();
  float* out = y.data();
  // On both cores when large; the workers inherit the caller's FP environment (TF's
  // flushed denormals: kernels/parallel.hpp), so each element's result is unchanged.
  kernels::parallel_for(x.size(), 64, [xs, out, &f](std::size_t lo, std::size_t hi) {
    XQ_OMP_SIMD
    for (std::size_t i = lo; i < hi; ++i) out[i] = f(xs[i]);
  });
  return y;
}

}  // namespace xq::larq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/larq_math.ipp"
#endif
