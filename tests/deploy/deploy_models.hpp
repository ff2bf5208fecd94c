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

/// Token ids (N, 6) of 8 ids: the class is readable from the first three.
inline xq::dataset token_data(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> id(0, 7);
  xq::tensor x = xq::tensor::from_shape({n, 6});
  xq::tensor y = xq::tensor::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) {
    const int label = int(i % 4);
    for (std::size_t t = 0; t < 6; ++t) x(i, t) = float(t < 3 ? label + 4 * (t % 2) : id(rng));
    y(i) = float(label);
  }
  return xq::dataset{x, y};
}

/// The grid-moving and float layers of issue 16 in a CNN on the 12x12 quadrant images:
/// zero padding, cropping, nearest and bilinear upsampling, a strided transposed
/// convolution (`same`, which needs ONNX's output_padding), GELU, a channel slice, layer
/// normalization over each whole image, and a transpose of its rows and columns.
template <class Conv = xq::conv2d, class Pad = xq::zero_padding2d, class Crop = xq::cropping2d,
          class Pool = xq::max_pool2d, class Up = xq::upsampling2d, class UpConv = xq::conv2d_transpose,
          class Gelu = xq::gelu, class Slice = xq::slice, class Add = xq::add, class Norm = xq::layer_norm,
          class Flat = xq::flatten, class Head = xq::dense>
struct grid_net {
  Conv stem{xq::conv2d(6, 3)};
  Pad pad{xq::zero_padding2d(xq::image_margins{{1, 2}, {2, 1}})};
  Conv middle{xq::conv2d(8, 3)};
  Crop crop{xq::cropping2d(xq::image_margins{{1, 2}, {2, 1}})};
  Pool pool{xq::max_pool2d(2)};
  Up nearest{xq::upsampling2d(2, 2)};
  Conv refine{xq::conv2d(8, 3).padding(xq::padding::same)};
  Up bilinear{xq::upsampling2d(2, 2, xq::interpolation::bilinear)};
  UpConv up{[] {
    xq::conv2d_transpose t(6, 3);
    t.strides(2).padding(xq::padding::same);
    return t;
  }()};
  Gelu gelu;
  Slice first_six{xq::slice(-1, 0, 6)};
  Add merge;
  Norm norm{xq::layer_norm({1, 2, 3})};  // over each image's pixels and channels
  Flat flat;
  Head head{xq::dense(4)};
  XQ_CHILDREN(stem, pad, middle, crop, pool, nearest, refine, bilinear, up, gelu, first_six, merge, norm, flat, head)
  xq::var operator()(const xq::var& x) {
    xq::var h = xq::ops::relu(stem(x));                      // (10, 10, 6)
    h = xq::ops::relu(middle(pad(h)));                       // (13, 13, 6) -> (11, 11, 8)
    const xq::var p = pool(crop(h));                         // (8, 8, 8) -> (4, 4, 8)
    const xq::var n = pool(xq::ops::relu(refine(nearest(p))));  // (8, 8, 8) -> (4, 4, 8)
    const xq::var t = gelu(up(n));                           // (8, 8, 6)
    const xq::var b = first_six(bilinear(p));                // (8, 8, 8) -> (8, 8, 6)
    const xq::var m = norm(merge(t, b));
    return head(flat(xq::ops::transpose(m, {0, 2, 1, 3})));
  }
};

/// grid_net trained in float, then its twin with NVIDIA's scheme (every conv's, the
/// transposed conv's and the dense layer's input and kernel), the bilinear upsampling's and
/// the layer norm's inputs opted in, fine-tuned.
inline auto trained_grid_qat(const xq::dataset& data) {
  xq::set_seed(12);
  grid_net<> model;
  xq::build(model, {1, 12, 12, 1});
  train(model, data, 2, 3e-3f);
  xq::quantize_options qo;
  qo.spec.add("bilinear").add("norm");
  auto qat = xq::quantize_model(model, qo, {1, 12, 12, 1});
  train(qat, data, 1, 5e-4f);
  return qat;
}

/// A decoder-only transformer on token_data: a token embedding plus a learned position
/// embedding of indices the forward code makes (a constant when lowered), a pre-norm block
/// of causal two-head attention (its scores' inputs opted in) and a GELU MLP with residual
/// adds, then the sequence against keys of (h * positions - tokens) (a broadcasting
/// multiply and a subtract layer; matmul with transpose_b) and a dense head.
template <class Embed = xq::embedding, class Norm = xq::layer_norm, class Attention = xq::multi_head_attention<>,
          class Add = xq::add, class Dense = xq::dense, class Sub = xq::subtract, class Flat = xq::flatten>
struct tiny_transformer {
  Embed embed{xq::embedding(8, 8)};
  Embed positions{xq::embedding(6, 8)};
  Norm norm1{xq::layer_norm().epsilon(1e-5f)};
  Attention attention;  // causal, 2 heads of 4 (the float model's constructor)
  Add attention_residual;
  Norm norm2;
  Dense up{xq::dense(16)};
  Dense down{xq::dense(8)};
  Add mlp_residual;
  Sub centre;
  Dense keys{xq::dense(8)};
  Flat flat;
  Dense head{xq::dense(4)};
  XQ_CHILDREN(embed, positions, norm1, attention, attention_residual, norm2, up, down, mlp_residual, centre, keys, flat,
              head)
  tiny_transformer() = default;
  explicit tiny_transformer(bool causal) : attention(xq::multi_head_attention<>(2, 4).causal(causal)) {}
  /// At another width (the low-bit formats' blocks of 16 and 32 fit a width of 32).
  tiny_transformer(bool causal, std::size_t width)
      : embed(xq::embedding(8, width)),
        positions(xq::embedding(6, width)),
        attention(xq::multi_head_attention<>(2, width / 2).causal(causal)),
        up(xq::dense(2 * width)),
        down(xq::dense(width)),
        keys(xq::dense(width)) {}
  xq::var operator()(const xq::var& ids) {
    xq::tensor where = xq::tensor::from_shape({ids.shape()[1]});
    for (std::size_t t = 0; t < where.size(); ++t) where(t) = float(t);
    const xq::var tokens = embed(ids), p = positions(xq::var(where));
    xq::var h = tokens + p;  // (B, 6, 8) + (6, 8)
    const xq::var a = norm1(h);
    h = attention_residual(h, attention(a, a));
    h = mlp_residual(h, down(xq::ops::gelu(up(norm2(h)), true)));
    const xq::var k = keys(centre(h * p, tokens));
    return head(flat(xq::ops::matmul(h, k, false, true)));  // (B, 6, 6)
  }
};

inline auto trained_transformer_qat(const xq::dataset& tokens) {
  xq::set_seed(21);
  tiny_transformer<> model(true);
  xq::build(model, {1, 6});
  train(model, tokens, 3, 1e-2f);
  xq::quantize_options qo;
  qo.spec.add("attention/scores");
  auto qat = xq::quantize_model(model, qo, {1, 6});
  train(qat, tokens, 1, 1e-3f);
  return qat;
}

/// Recurrent layers on token_data: an embedding, an LSTM returning its sequence, then two
/// GRUs over it — one backwards returning its sequence (reset_after, Keras's default), one
/// with reset_after false returning its last state — concatenated into a dense head.
template <class Embed = xq::embedding, class Lstm = xq::lstm<>, class Gru = xq::gru<>, class Flat = xq::flatten,
          class Cat = xq::concatenate, class Dense = xq::dense>
struct recurrent_net {
  Embed embed{xq::embedding(8, 8)};
  Lstm lstm;
  Gru backwards, last;
  Flat flat;
  Cat features;
  Dense head{xq::dense(4)};
  XQ_CHILDREN(embed, lstm, backwards, last, flat, features, head)
  recurrent_net() = default;
  explicit recurrent_net(std::size_t units)
      : lstm(xq::lstm<>(units).return_sequences(true)),
        backwards(xq::gru<>(units).go_backwards(true).return_sequences(true)),
        last(xq::gru<>(units).reset_after(false)) {}
  xq::var operator()(const xq::var& ids) {
    const xq::var h = lstm(embed(ids));  // (B, 6, units)
    return head(features({flat(backwards(h)), last(h)}));
  }
};

/// recurrent_net trained in float, then its twin with NVIDIA's scheme (the projections'
/// inputs and kernels, the recurrent kernels per column, the head) fine-tuned.
inline auto trained_recurrent_qat(const xq::dataset& tokens) {
  xq::set_seed(23);
  recurrent_net<> model(8);
  xq::build(model, {1, 6});
  train(model, tokens, 3, 1e-2f);
  auto qat = xq::quantize_model(model, xq::quantize_options{}, {1, 6});
  train(qat, tokens, 1, 1e-3f);
  return qat;
}

}  // namespace deploy_test
