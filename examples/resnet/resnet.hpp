#pragma once
// Two small residual networks for 28x28x1 images, written as a Keras user writes them:
// blocks are composites of layers, and blocks hold blocks (a residual branch and a
// shortcut inside a block). Each composite is a class template over its children's types,
// so `xq::quantize_t<resnet_v1<>>` is the same network over quantized children.
//
//  - v1 (He et al., 2015): conv-BN-relu-conv-BN, plus the shortcut, then relu. The
//    shortcut is the input itself, or a 1x1 strided conv + BN where the shape changes.
//  - v2 (He et al., 2016, "identity mappings"): BN-relu first ("pre-activation"), then
//    conv-BN-relu-conv, plus the shortcut, with no activation after the sum; a 1x1 strided
//    conv of the pre-activated input where the shape changes (Keras's ResNetV2 layout), and
//    a final BN-relu before the pooling.
//
// Both: a 16-filter stem, then a downsampling block to 32 filters at 14x14, an identity
// block at 32, a downsampling block to 64 at 7x7, global average pooling and a 10-way
// dense head. About 9 M multiply-accumulates per image.

#include <cstddef>

#include <xquant/layers/activation.hpp>
#include <xquant/layers/add.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/dense.hpp>
#include <xquant/layers/global_average_pool2d.hpp>
#include <xquant/layers/sequential.hpp>

namespace resnet {

/// A 3x3 (or `kernel`) same-padded convolution without bias (a batch norm follows or
/// precedes it), with `stride`.
inline xq::conv2d make_conv(std::size_t filters, std::size_t stride = 1, std::size_t kernel = 3) {
  return xq::conv2d(filters, kernel).strides(stride).padding(xq::padding::same).use_bias(false);
}

/// Batch-norm momentum 0.9 rather than Keras's 0.99: the moving statistics then follow
/// the weights closely enough for short runs to evaluate as they train.
inline xq::batch_norm make_norm() { return xq::batch_norm().momentum(0.9f); }

// --- v1 --------------------------------------------------------------------------------

/// conv (stride) - BN - relu - conv - BN: a v1 block's residual function.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm, class Relu = xq::relu>
struct branch_v1 {
  Conv conv1;
  Norm norm1;
  Relu relu;
  Conv conv2;
  Norm norm2;
  XQ_CHILDREN(conv1, norm1, relu, conv2, norm2)
  explicit branch_v1(std::size_t filters = 16, std::size_t stride = 1)
      : conv1(make_conv(filters, stride)), norm1(make_norm()), conv2(make_conv(filters)), norm2(make_norm()) {}
  xq::var operator()(const xq::var& x) { return norm2(conv2(relu(norm1(conv1(x))))); }
};

/// 1x1 strided conv - BN: v1's shortcut where the block changes the shape.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm>
struct projection_v1 {
  Conv conv;
  Norm norm;
  XQ_CHILDREN(conv, norm)
  explicit projection_v1(std::size_t filters = 16, std::size_t stride = 1)
      : conv(make_conv(filters, stride, 1)), norm(make_norm()) {}
  xq::var operator()(const xq::var& x) { return norm(conv(x)); }
};

/// relu(branch(x) + x).
template <class Branch = branch_v1<>, class Add = xq::add, class Relu = xq::relu>
struct block_v1 {
  Branch branch;
  Add merge;
  Relu relu;
  XQ_CHILDREN(branch, merge, relu)
  explicit block_v1(std::size_t filters = 16) : branch(filters) {}
  xq::var operator()(const xq::var& x) { return relu(merge(branch(x), x)); }
};

/// relu(branch(x) + projection(x)), both strided.
template <class Branch = branch_v1<>, class Shortcut = projection_v1<>, class Add = xq::add, class Relu = xq::relu>
struct downsample_block_v1 {
  Branch branch;
  Shortcut shortcut;
  Add merge;
  Relu relu;
  XQ_CHILDREN(branch, shortcut, merge, relu)
  explicit downsample_block_v1(std::size_t filters = 16, std::size_t stride = 2)
      : branch(filters, stride), shortcut(filters, stride) {}
  xq::var operator()(const xq::var& x) { return relu(merge(branch(x), shortcut(x))); }
};

/// conv - BN - relu: v1's stem.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm, class Relu = xq::relu>
struct stem_v1 {
  Conv conv;
  Norm norm;
  Relu relu;
  XQ_CHILDREN(conv, norm, relu)
  explicit stem_v1(std::size_t filters = 16) : conv(make_conv(filters)), norm(make_norm()) {}
  xq::var operator()(const xq::var& x) { return relu(norm(conv(x))); }
};

using resnet_v1 = xq::sequential<stem_v1<>, downsample_block_v1<>, block_v1<>, downsample_block_v1<>,
                                 xq::global_average_pool2d, xq::dense>;

// --- v2 --------------------------------------------------------------------------------

/// BN - relu: the pre-activation that opens every v2 block (and closes the network).
template <class Norm = xq::batch_norm, class Relu = xq::relu>
struct preactivation {
  Norm norm;
  Relu relu;
  XQ_CHILDREN(norm, relu)
  preactivation() : norm(make_norm()) {}
  xq::var operator()(const xq::var& x) { return relu(norm(x)); }
};

/// conv (stride) - BN - relu - conv: a v2 block's residual function after its pre-activation.
template <class Conv = xq::conv2d, class Norm = xq::batch_norm, class Relu = xq::relu>
struct branch_v2 {
  Conv conv1;
  Norm norm1;
  Relu relu;
  Conv conv2;
  XQ_CHILDREN(conv1, norm1, relu, conv2)
  explicit branch_v2(std::size_t filters = 16, std::size_t stride = 1)
      : conv1(make_conv(filters, stride)), norm1(make_norm()), conv2(make_conv(filters)) {}
  xq::var operator()(const xq::var& x) { return conv2(relu(norm1(conv1(x)))); }
};

/// branch(pre(x)) + x.
template <class Pre = preactivation<>, class Branch = branch_v2<>, class Add = xq::add>
struct block_v2 {
  Pre pre;
  Branch branch;
  Add merge;
  XQ_CHILDREN(pre, branch, merge)
  explicit block_v2(std::size_t filters = 16) : branch(filters) {}
  xq::var operator()(const xq::var& x) { return merge(branch(pre(x)), x); }
};

/// branch(h) + shortcut(h) with h = pre(x): the shortcut is a 1x1 strided conv of the
/// pre-activated input (Keras's ResNetV2 `conv_shortcut`).
template <class Pre = preactivation<>, class Branch = branch_v2<>, class Conv = xq::conv2d, class Add = xq::add>
struct downsample_block_v2 {
  Pre pre;
  Branch branch;
  Conv shortcut;
  Add merge;
  XQ_CHILDREN(pre, branch, shortcut, merge)
  explicit downsample_block_v2(std::size_t filters = 16, std::size_t stride = 2)
      : branch(filters, stride), shortcut(make_conv(filters, stride, 1)) {}
  xq::var operator()(const xq::var& x) {
    const xq::var h = pre(x);
    return merge(branch(h), shortcut(h));
  }
};

using resnet_v2 = xq::sequential<xq::conv2d, downsample_block_v2<>, block_v2<>, downsample_block_v2<>,
                                 preactivation<>, xq::global_average_pool2d, xq::dense>;

/// The networks with their seeds set (`xq::set_seed(seed)` first: same seed, same weights).
inline resnet_v1 make_resnet_v1(unsigned seed) {
  xq::set_seed(seed);
  return resnet_v1(stem_v1<>(16), downsample_block_v1<>(32), block_v1<>(32), downsample_block_v1<>(64),
                   xq::global_average_pool2d(), xq::dense(10));
}

inline resnet_v2 make_resnet_v2(unsigned seed) {
  xq::set_seed(seed);
  return resnet_v2(make_conv(16), downsample_block_v2<>(32), block_v2<>(32), downsample_block_v2<>(64),
                   preactivation<>(), xq::global_average_pool2d(), xq::dense(10));
}

}  // namespace resnet
