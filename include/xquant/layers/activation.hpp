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

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/layer.hpp"
#include "../core/parameter.hpp"
#include "../core/tape.hpp"
#include "../kernels/branchless.hpp"
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
XQ_DECL float stable_sigmoid(float x);

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
XQ_DECL var relu(const var& x);
/// The same, on a value the caller gives up (`relu(norm(conv(x)))`, `relu(std::move(h))`):
/// when nothing else holds it, relu runs in place, and when its producer can absorb the
/// relu into its backward (a training batch_norm: core/variable_state.hpp's
/// relu_absorber) no backward step of relu's own is recorded. Same values and gradients,
/// bit for bit, as the copying form; under a graph trace it is the copying form.
XQ_DECL var relu(var&& x);

/// min(max(x, 0), 6). Gradient only for 0 < x < 6 (TF's Relu6Grad).
XQ_DECL var relu6(const var& x);

/// x for x > 0, alpha * x otherwise. The default 0.3 is Keras's LeakyReLU layer
/// default; tf.nn.leaky_relu defaults to 0.2 and PyTorch's LeakyReLU to 0.01.
XQ_DECL var leaky_relu(const var& x, float alpha = 0.3f);

/// 1 / (1 + exp(-x)), computed without overflow for large |x|.
XQ_DECL var sigmoid(const var& x);

/// Hyperbolic tangent.
XQ_DECL var tanh(const var& x);

/// x * sigmoid(x) (Keras's swish / silu). The gradient, as TF writes it:
/// s * (1 + x * (1 - s)).
XQ_DECL var swish(const var& x);

/// exp(x - max) / sum over the last axis (the max is subtracted so no exp
/// overflows). `path` names the caller in errors.
XQ_DECL var softmax(const var& x, const std::string& path = "softmax");

}  // namespace ops

/// ReLU layer: max(x, 0).
class relu : public layer<relu> {
 public:
  XQ_SPECIAL_MEMBERS(relu)
  static constexpr layer_role role = layer_role::activation;
  relu() : layer<relu>("relu") {}
  XQ_DECL var call(const var& x) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// ReLU6 layer: min(max(x, 0), 6) (Keras ReLU(max_value=6), MobileNet's activation).
class relu6 : public layer<relu6> {
 public:
  XQ_SPECIAL_MEMBERS(relu6)
  static constexpr layer_role role = layer_role::activation;
  relu6() : layer<relu6>("relu6") {}
  XQ_DECL var call(const var& x) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// LeakyReLU layer; `alpha` defaults to Keras's layer default 0.3 (tf.nn: 0.2, PyTorch: 0.01).
class leaky_relu : public layer<leaky_relu> {
 public:
  XQ_SPECIAL_MEMBERS(leaky_relu)
  static constexpr layer_role role = layer_role::activation;
  explicit leaky_relu(float alpha = 0.3f) : layer<leaky_relu>("leaky_relu"), alpha_(alpha) {}
  XQ_DECL var call(const var& x) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
  float alpha() const noexcept { return alpha_; }

 private:
  float alpha_;
};

/// Sigmoid layer.
class sigmoid : public layer<sigmoid> {
 public:
  XQ_SPECIAL_MEMBERS(sigmoid)
  static constexpr layer_role role = layer_role::activation;
  sigmoid() : layer<sigmoid>("sigmoid") {}
  XQ_DECL var call(const var& x) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// Tanh layer. (Inside namespace xq, `tanh` is this type: call std::tanh qualified.)
class tanh : public layer<tanh> {
 public:
  XQ_SPECIAL_MEMBERS(tanh)
  static constexpr layer_role role = layer_role::activation;
  tanh() : layer<tanh>("tanh") {}
  XQ_DECL var call(const var& x) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// Swish layer: x * sigmoid(x).
class swish : public layer<swish> {
 public:
  XQ_SPECIAL_MEMBERS(swish)
  static constexpr layer_role role = layer_role::activation;
  swish() : layer<swish>("swish") {}
  XQ_DECL var call(const var& x) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

/// Softmax layer over the last axis.
class softmax : public layer<softmax> {
 public:
  XQ_SPECIAL_MEMBERS(softmax)
  static constexpr layer_role role = layer_role::activation;
  softmax() : layer<softmax>("softmax") {}
  XQ_DECL var call(const var& x) const;
  std::vector<parameter_ptr> parameters() const { return {}; }
};

}  // namespace xq

#if !defined(XQ_SEPARATE_COMPILATION)
#include "impl/activation.ipp"
#endif
