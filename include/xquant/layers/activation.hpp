#pragma once
/// \file activation.hpp
/// Elementwise activations, each as a layer type (`xq::relu`, a noun like every
/// layer) and as a function (`xq::ops::relu(x)`): relu, relu6, leaky_relu,
/// sigmoid, tanh, swish, and softmax over the last axis.
///
/// Gradients follow TensorFlow's kernels: at relu's kink (x == 0) the gradient is
/// 0 (`ReluGrad` masks with x > 0), relu6 passes the gradient only for 0 < x < 6,
/// and masked gradients are products `dy * 0` (so a negative dy gives -0.0f),
/// as TF computes them.
///
/// \code
///   xq::var h = xq::ops::relu(conv(x));        // functional
///   xq::leaky_relu act(0.1f);  xq::var g = act(h);  // layer
/// \endcode

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "../kernels/parallel.hpp"

namespace xq {

namespace detail {

/// Like `make_result`, but the backward step also receives the output's value
/// (`backward(dy, y)`): sigmoid, tanh and softmax differentiate through their
/// output, which the tape step keeps alive anyway, so nothing is copied.
template <class Backward>
var make_result_with_output(tensor value, bool record, Backward&& backward) {
  var out(std::move(value), record);
  if (record) {
    recording_tape()->record([out_state = out.state(), bw = std::forward<Backward>(backward)]() mutable {
      if (out_state->has_grad())
        bw(static_cast<const tensor&>(out_state->grad), static_cast<const tensor&>(out_state->value));
    });
  }
  return out;
}

/// out[i] = f(a[i]) over n elements, on both cores when large (elementwise:
/// the result does not depend on the thread count). Restrict-qualified local
/// pointers and `omp simd` so the loop vectorizes even at -O2 (where GCC 12
/// otherwise turns relu's mask into a mispredicted branch, 5x slower).
template <class F>
void map_elements(const float* a, float* out, std::size_t n, F f) {
  kernels::parallel_for(n, 64, [a, out, f](std::size_t b, std::size_t e) {
    const float* __restrict pa = a;
    float* __restrict po = out;
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (std::size_t i = b; i < e; ++i) po[i] = f(pa[i]);
  });
}
/// out[i] = f(a[i], b[i]) over n elements (as above).
template <class F>
void map_elements(const float* a, const float* b, float* out, std::size_t n, F f) {
  kernels::parallel_for(n, 64, [a, b, out, f](std::size_t lo, std::size_t hi) {
    const float* __restrict pa = a;
    const float* __restrict pb = b;
    float* __restrict po = out;
#if defined(_OPENMP)
#pragma omp simd
#endif
    for (std::size_t i = lo; i < hi; ++i) po[i] = f(pa[i], pb[i]);
  });
}

/// Numerically stable logistic: never exponentiates a positive number.
inline float stable_sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

/// y = f(x) elementwise; backward dx = dy * g(x, dy) computed from the input.
template <class Forward, class Backward>
var elementwise_from_input(const var& x, Forward f, Backward g) {
  tensor y = tensor::from_shape(x.shape());
  map_elements(x.value().data(), y.data(), y.size(), f);
  return make_result(std::move(y), needs_grad(x), [x, g](const tensor& dy) {
    tensor dx = tensor::from_shape(x.shape());
    map_elements(x.value().data(), dy.data(), dx.data(), dx.size(), g);
    add_grad(x, std::move(dx));
  });
}

/// y = f(x) elementwise; backward dx = g(y, dy) computed from the output.
template <class Forward, class Backward>
var elementwise_from_output(const var& x, Forward f, Backward g) {
  tensor y = tensor::from_shape(x.shape());
  map_elements(x.value().data(), y.data(), y.size(), f);
  return make_result_with_output(std::move(y), needs_grad(x), [x, g](const tensor& dy, const tensor& out) {
    tensor dx = tensor::from_shape(x.shape());
    map_elements(out.data(), dy.data(), dx.data(), dx.size(), g);
    add_grad(x, std::move(dx));
  });
}

}  // namespace detail

namespace ops {

/// max(x, 0). NaN passes through. Gradient 0 at x == 0 (TF's ReluGrad).
inline var relu(const var& x) {
  return detail::traced_function("relu", layer_role::activation, x, detail::elementwise_from_input(
      x, [](float v) { return v < 0.0f ? 0.0f : v; },
      [](float v, float d) { return d * static_cast<float>(v > 0.0f); }));
}

/// min(max(x, 0), 6). Gradient only for 0 < x < 6 (TF's Relu6Grad).
inline var relu6(const var& x) {
  return detail::traced_function("relu6", layer_role::activation, x, detail::elementwise_from_input(
      x, [](float v) { return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v); },
      [](float v, float d) { return d * static_cast<float>((v > 0.0f) & (v < 6.0f)); }));
}

/// x for x > 0, alpha * x otherwise. The default 0.3 is Keras's LeakyReLU layer
/// default; tf.nn.leaky_relu defaults to 0.2 and PyTorch's LeakyReLU to 0.01.
inline var leaky_relu(const var& x, float alpha = 0.3f) {
  return detail::traced_function("leaky_relu", layer_role::activation, x, detail::elementwise_from_input(
      x, [alpha](float v) { return v > 0.0f ? v : v * alpha; },
      [alpha](float v, float d) { return v > 0.0f ? d : d * alpha; }));
}

/// 1 / (1 + exp(-x)), computed without overflow for large |x|.
inline var sigmoid(const var& x) {
  return detail::traced_function("sigmoid", layer_role::activation, x, detail::elementwise_from_output(
      x, [](float v) { return detail::stable_sigmoid(v); },
      [](float y, float d) { return d * (y * (1.0f - y)); }));
}

/// Hyperbolic tangent.
inline var tanh(const var& x) {
  return detail::traced_function("tanh", layer_role::activation, x, detail::elementwise_from_output(
      x, [](float v) { return std::tanh(v); }, [](float y, float d) { return d * (1.0f - y * y); }));
}

/// x * sigmoid(x) (Keras's swish / silu). The gradient, as TF writes it:
/// s * (1 + x * (1 - s)).
inline var swish(const var& x) {
  return detail::traced_function("swish", layer_role::activation, x, detail::elementwise_from_input(
      x, [](float v) { return v * detail::stable_sigmoid(v); },
      [](float v, float d) {
        const float s = detail::stable_sigmoid(v);
        return d * (s * (1.0f + v * (1.0f - s)));
      }));
}

/// exp(x - max) / sum over the last axis (the max is subtracted so no exp
/// overflows). `path` names the caller in errors.
inline var softmax(const var& x, const std::string& path = "softmax") {
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

/// ReLU layer: max(x, 0).
class relu : public layer<relu> {
 public:
  static constexpr layer_role role = layer_role::activation;
  relu() : layer<relu>("relu") {}
  var call(const var& x) const { return ops::relu(x); }
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// ReLU6 layer: min(max(x, 0), 6) (Keras ReLU(max_value=6), MobileNet's activation).
class relu6 : public layer<relu6> {
 public:
  static constexpr layer_role role = layer_role::activation;
  relu6() : layer<relu6>("relu6") {}
  var call(const var& x) const { return ops::relu6(x); }
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// LeakyReLU layer; `alpha` defaults to Keras's layer default 0.3 (tf.nn: 0.2, PyTorch: 0.01).
class leaky_relu : public layer<leaky_relu> {
 public:
  static constexpr layer_role role = layer_role::activation;
  explicit leaky_relu(float alpha = 0.3f) : layer<leaky_relu>("leaky_relu"), alpha_(alpha) {}
  var call(const var& x) const { return ops::leaky_relu(x, alpha_); }
  std::vector<parameter_ptr> parameters() const { return {}; }
  float alpha() const noexcept { return alpha_; }

 private:
  float alpha_;
};

/// Sigmoid layer.
class sigmoid : public layer<sigmoid> {
 public:
  static constexpr layer_role role = layer_role::activation;
  sigmoid() : layer<sigmoid>("sigmoid") {}
  var call(const var& x) const { return ops::sigmoid(x); }
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// Tanh layer. (Inside namespace xq, `tanh` is this type: call std::tanh qualified.)
class tanh : public layer<tanh> {
 public:
  static constexpr layer_role role = layer_role::activation;
  tanh() : layer<tanh>("tanh") {}
  var call(const var& x) const { return ops::tanh(x); }
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// Swish layer: x * sigmoid(x).
class swish : public layer<swish> {
 public:
  static constexpr layer_role role = layer_role::activation;
  swish() : layer<swish>("swish") {}
  var call(const var& x) const { return ops::swish(x); }
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// Softmax layer over the last axis.
class softmax : public layer<softmax> {
 public:
  static constexpr layer_role role = layer_role::activation;
  softmax() : layer<softmax>("softmax") {}
  var call(const var& x) const { return ops::softmax(x, path()); }
  std::vector<parameter_ptr> parameters() const { return {}; }
};

}  // namespace xq
