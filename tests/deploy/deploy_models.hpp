#pragma once
// Small models and data shared by the deployment tests (test_integer_engine.cpp and the
// onnxruntime cases of onnx_export_cases.cpp): a conv-bn-relu-pool CNN, a binarized CNN
// in Larq's recipe, a net around a separable convolution, 12x12 images whose class is
// their brightest quadrant, and the short training that makes their quantizers' ranges
// realistic.

#include <cstddef>
#include <random>

#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/ste_sign.hpp>
#include <xquant/wrappers/quant_conv2d.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xquant/xquant.hpp>

namespace deploy_test {

/// conv 3x3 (same, no bias) -> batch norm -> relu -> 2x2 max pool.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm, class Pool = xq::max_pool2d>
struct block {
  Conv conv;
  Norm norm;
  Pool pool{xq::max_pool2d(2)};
  XQ_CHILDREN(conv, norm, pool)
  explicit block(std::size_t filters = 6)
      : conv(xq::conv2d(filters, 3).padding(xq::padding::same).use_bias(false)),
        norm(xq::batch_norm().momentum(0.5f)) {}
  xq::var operator()(const xq::var& x) { return pool(xq::ops::relu(norm(conv(x)))); }
};

using small_cnn = xq::sequential<block<>, block<>, xq::flatten, xq::dense, xq::relu, xq::dropout, xq::dense>;

/// 12x12x1 -> 4 logits: two blocks (6, 8 filters), dense 16, relu, dropout, dense 4.
inline small_cnn make_small_cnn() {
  xq::set_seed(7);
  return small_cnn(block<>(6), block<>(8), xq::flatten(), xq::dense(16), xq::relu(), xq::dropout(0.25f, 3),
                   xq::dense(4));
}

/// The binarized CNN of examples/fashion_mnist_bnn at 12x12: a float-input stem with a ±1
/// kernel, binary convs (+1 padding) and dense layers, batch norms between them.
inline auto make_binary_cnn() {
  using bconv = xq::quant_conv2d<xq::approx_sign, xq::ste_sign>;
  using bdense = xq::quant_dense<xq::approx_sign, xq::ste_sign>;
  xq::set_seed(2);
  return xq::sequential(
      xq::quant_conv2d<xq::no_quantizer, xq::ste_sign>(16, 3, xq::no_quantizer(), xq::ste_sign())
          .padding(xq::padding::same)
          .use_bias(false),
      xq::max_pool2d(2), xq::batch_norm(true, false),
      bconv(24, 3, xq::approx_sign(), xq::ste_sign()).padding(xq::padding::same).pad_values(1.0f).use_bias(false),
      xq::max_pool2d(2), xq::batch_norm(true, false), xq::flatten(),
      bdense(70, xq::approx_sign(), xq::ste_sign()).use_bias(false), xq::batch_norm(true, false),
      bdense(4, xq::approx_sign(), xq::ste_sign()), xq::batch_norm());
}

/// `n` images (n, 12, 12, 1) whose class (0..3) is the quadrant made brightest.
inline xq::dataset quadrant_data(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 0.6f);
  xq::tensor x = xq::tensor::from_shape({n, 12, 12, 1});
  xq::tensor y = xq::tensor::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t label = i % 4;
    for (std::size_t r = 0; r < 12; ++r)
      for (std::size_t c = 0; c < 12; ++c) x(i, r, c, 0) = u(rng) + ((r / 6) * 2 + c / 6 == label ? 0.4f : 0.0f);
    y(i) = float(label);
  }
  return xq::dataset{x, y};
}

/// A few epochs of Adam at `lr`, batch 32, quietly.
template <class Model>
void train(Model& model, const xq::dataset& data, std::size_t epochs, float lr) {
  xq::adam opt(xq::trainable_parameters(model), {lr});
  xq::fit_options fo;
  fo.epochs = epochs;
  fo.batch_size = 32;
  fo.verbose = false;
  xq::fit(model, opt, xq::sparse_softmax_cross_entropy, data, fo);
}

/// `model` trained in float, then its QAT twin (batch norms folded, frozen after 8 steps)
/// fine-tuned.
template <class Model>
auto trained_qat(Model& model, const xq::dataset& data) {
  xq::build(model, {1, 12, 12, 1});
  train(model, data, 3, 3e-3f);
  xq::quantize_options qo;
  qo.fold_batch_norm = true;
  qo.freeze_batch_norm_after = 8;
  auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
  train(qat, data, 2, 5e-4f);
  return qat;
}

/// conv 3x3 -> relu -> a separable convolution (a depthwise 3x3 of multiplier 2 and a 1x1
/// conv, one composite) -> relu -> dense 4.
template <class Conv = xq::conv2d, class Sep = xq::separable_conv2d<>, class Flat = xq::flatten,
          class Head = xq::dense>
struct separable_net {
  Conv stem{xq::conv2d(4, 3).padding(xq::padding::same)};
  Sep sep{6, 3, 2};  // 6 filters, 3x3, depth multiplier 2
  Flat flat;
  Head head{xq::dense(4)};
  XQ_CHILDREN(stem, sep, flat, head)
  xq::var operator()(const xq::var& x) { return head(flat(xq::ops::relu(sep(xq::ops::relu(stem(x)))))); }
};

/// separable_net trained in float, then its twin with NVIDIA's default scheme (every
/// conv's and the dense layer's input and kernel) fine-tuned.
inline auto trained_separable_qat(const xq::dataset& data) {
  xq::set_seed(7);
  separable_net<> model;
  xq::build(model, {1, 12, 12, 1});
  train(model, data, 2, 3e-3f);
  auto qat = xq::quantize_model(model, xq::quantize_options{}, {1, 12, 12, 1});
  train(qat, data, 1, 5e-4f);
  return qat;
}

/// A CNN of relu *layers* (where tfmot's and PyTorch's schemes put their quantizers: on
/// layer outputs), trained in float, then quantized with tfmot's scheme (or PyTorch's) and
/// fine-tuned: conv 3x3 (same) -> batch norm -> relu -> 2x2 max pool -> conv 3x3 -> relu ->
/// flatten -> dense 16 -> relu -> dense 4.
inline auto output_placement_qat(const xq::dataset& data, bool pytorch) {
  xq::set_seed(3);
  auto model = xq::sequential(xq::conv2d(6, 3).padding(xq::padding::same), xq::batch_norm(), xq::relu(),
                              xq::max_pool2d(2), xq::conv2d(8, 3), xq::relu(), xq::flatten(), xq::dense(16), xq::relu(),
                              xq::dense(4));
  xq::build(model, {1, 12, 12, 1});
  train(model, data, 2, 3e-3f);
  xq::quantize_options qo;
  qo.scheme = pytorch ? xq::schemes::pytorch() : xq::schemes::tfmot();
  auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
  train(qat, data, 1, 5e-4f);
  return qat;
}

}  // namespace deploy_test
