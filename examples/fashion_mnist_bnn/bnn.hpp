#pragma once
// The binarized CNN of examples/fashion_mnist_bnn (and of bench/binary_bench.cpp), and its
// float twin for the benchmark's ratio:
//
//   every hidden conv and dense layer computes on binary inputs and binary weights:
//   xq::approx_sign on the inputs (±1 forward; Bi-Real Net's piecewise-polynomial
//   gradient 2 - 2|x|, which gave 0.9063 test accuracy where xq::ste_sign's clipped
//   identity gave 0.8952, same recipe, 8 epochs) and xq::ste_sign on a latent float
//   kernel clipped to [-1, 1] that the optimizer updates; "same" padding adds +1, so
//   even the borders are binary;
//   the first layer sees the float image and the last layer's output stays float,
//   as in Larq's examples; batch norms without a scale (it would be folded into the
//   next sign anyway) sit between the binary layers.

#include <cstddef>
#include <utility>

#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/flatten.hpp>
#include <xquant/layers/max_pool2d.hpp>
#include <xquant/wrappers/quant_conv2d.hpp>
#include <xquant/wrappers/quant_dense.hpp>
#include <xquant/layers/sequential.hpp>
#include <xquant/layers/weight_clip.hpp>
#include <xquant/quantizers/approx_sign.hpp>
#include <xquant/quantizers/ste_sign.hpp>

namespace bnn {

using binary_conv = xq::quant_conv2d<xq::approx_sign, xq::ste_sign>;
using binary_dense = xq::quant_dense<xq::approx_sign, xq::ste_sign>;

/// A binary 3x3 "same" convolution: ±1 inputs, ±1 weights, ±1 padding, no bias (the
/// batch norm after it has one).
inline binary_conv binary_conv3x3(std::size_t filters) {
  return binary_conv(filters, 3, xq::approx_sign(), xq::ste_sign())
      .padding(xq::padding::same)
      .pad_values(1.0f)
      .use_bias(false)
      .kernel_constraint(xq::weight_clip(1.0f));
}

inline binary_dense binary_fully_connected(std::size_t units) {
  return binary_dense(units, xq::approx_sign(), xq::ste_sign()).use_bias(false).kernel_constraint(xq::weight_clip(1.0f));
}

/// Batch norm without gamma (Larq's `BatchNormalization(scale=False)`).
inline xq::batch_norm shift_norm() { return xq::batch_norm(/*center=*/true, /*scale=*/false); }

/// The binarized CNN. Kernel quantizers take the metrics of a surrounding
/// `xq::metrics_scope`.
inline auto make_binary_cnn() {
  // The first layer binarizes its weights only: its input is the image.
  auto stem = xq::quant_conv2d<xq::no_quantizer, xq::ste_sign>(64, 3, xq::no_quantizer(), xq::ste_sign())
                  .padding(xq::padding::same)
                  .use_bias(false)
                  .kernel_constraint(xq::weight_clip(1.0f));
  return xq::sequential(std::move(stem), xq::max_pool2d(2), shift_norm(),     //
                        binary_conv3x3(128), xq::max_pool2d(2), shift_norm(),  //
                        binary_conv3x3(128), shift_norm(), xq::flatten(),      //
                        binary_fully_connected(256), shift_norm(),             //
                        // The logits' batch norm keeps its scale: softmax needs logits that can grow.
                        binary_fully_connected(10), xq::batch_norm());
}

/// The same network in float: plain conv2d and dense, zero padding, no quantizers, no
/// kernel clipping.
inline xq::conv2d float_conv3x3(std::size_t filters) {
  return xq::conv2d(filters, 3).padding(xq::padding::same).use_bias(false);
}
inline auto make_float_cnn() {
  return xq::sequential(float_conv3x3(64), xq::max_pool2d(2), shift_norm(),   //
                        float_conv3x3(128), xq::max_pool2d(2), shift_norm(),  //
                        float_conv3x3(128), shift_norm(), xq::flatten(),      //
                        xq::dense(256, false), shift_norm(),                  //
                        xq::dense(10, false), xq::batch_norm());
}

}  // namespace bnn
