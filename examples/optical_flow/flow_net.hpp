#pragma once
// A PWC-Net-style optical-flow network for 28x28 frames (Sun et al. 2018, scaled down),
// written as nested blocks the way the first request's author wrote theirs: a feature
// pyramid extractor that is ONE set of layers applied to both frames, a correlation
// (cost volume) per level, a flow decoder per level, and an hourglass that brings the
// coarse estimate up (bilinear upsampling of the flow, a transposed convolution of the
// decoder's features) to refine it at the finer level. Each composite is a class
// template over its children's types, so `xq::quantize_t<flow_net<>>` is the same
// network over quantized children (whose constructors take the float layers: the twin is
// default-constructed, then given the float model's children); batch norms fold into the
// convolutions before them.
//
//   frames 1, 2 (B, 28, 28, 1) --shared extractor--> level 1 (14x14x16), level 2 (7x7x32)
//   level 2:  cost volume (±2: 25 channels) ++ features 1 -> decoder -> flow 2 (7x7x2)
//   level 1:  cost volume (±2) ++ features 1 ++ upsampled flow 2 ++ up-convolved decoder
//             features -> decoder -> residual; flow 1 = upsampled flow 2 + residual
//   output:   flow 1 upsampled to 28x28x2, in pixels of the frames
//
// Flow is in pixels at every level, so upsampling needs no rescaling. Without PWC-Net's
// warping, the finer cost volume sees the raw second frame; the decoder gets the coarse
// flow to interpret it.

#include <cstddef>
#include <utility>

#include <xquant/layers/activation.hpp>
#include <xquant/layers/add.hpp>
#include <xquant/layers/batch_norm.hpp>
#include <xquant/layers/concatenate.hpp>
#include <xquant/layers/conv2d.hpp>
#include <xquant/layers/conv2d_transpose.hpp>
#include <xquant/layers/correlation.hpp>
#include <xquant/layers/upsampling2d.hpp>

namespace flow {

/// 3x3 same-padded convolution, no bias (a batch norm follows).
inline xq::conv2d conv3x3(std::size_t filters, std::size_t stride = 1) {
  return xq::conv2d(filters, 3).strides(stride).padding(xq::padding::same).use_bias(false);
}

/// conv - BN - leaky relu (PWC-Net's activation, slope 0.1).
template <class Conv = xq::conv2d, class Norm = xq::batch_norm, class Act = xq::leaky_relu>
struct conv_unit {
  Conv conv;
  Norm norm;
  Act act;
  XQ_CHILDREN(conv, norm, act)
  explicit conv_unit(std::size_t filters = 16, std::size_t stride = 1)
      : conv(conv3x3(filters, stride)), norm(xq::batch_norm().momentum(0.9f)), act(xq::leaky_relu(0.1f)) {}
  xq::var operator()(const xq::var& x) { return act(norm(conv(x))); }
};

/// One pyramid level: a strided unit halves the resolution, a second one refines.
template <class Unit = conv_unit<>>
struct pyramid_level {
  Unit down, refine;
  XQ_CHILDREN(down, refine)
  explicit pyramid_level(std::size_t filters = 16) : down(filters, 2), refine(filters) {}
  xq::var operator()(const xq::var& x) { return refine(down(x)); }
};

/// The feature pyramid: 28x28 frames -> (14x14x16, 7x7x32). Applied to both frames.
template <class Level = pyramid_level<>>
struct feature_pyramid {
  Level level_1, level_2;
  XQ_CHILDREN(level_1, level_2)
  feature_pyramid() : level_1(16), level_2(32) {}
  std::pair<xq::var, xq::var> operator()(const xq::var& frame) {
    xq::var fine = level_1(frame);
    xq::var coarse = level_2(fine);
    return {fine, coarse};
  }
};

/// A flow decoder: two units, then a linear 3x3 conv to the 2 flow channels. Returns the
/// flow and the features it came from (the hourglass up-convolves them).
template <class Unit = conv_unit<>, class Conv = xq::conv2d>
struct flow_decoder {
  Unit unit_1, unit_2;
  Conv predict;
  XQ_CHILDREN(unit_1, unit_2, predict)
  flow_decoder() : unit_1(32), unit_2(32), predict(xq::conv2d(2, 3).padding(xq::padding::same)) {}
  std::pair<xq::var, xq::var> operator()(const xq::var& x) {
    xq::var features = unit_2(unit_1(x));
    return {predict(features), features};
  }
};

/// The whole network: (frame 1, frame 2) -> flow (B, 28, 28, 2).
template <class Pyramid = feature_pyramid<>, class Correlation = xq::correlation, class Concat = xq::concatenate,
          class Decoder = flow_decoder<>, class Up = xq::upsampling2d, class UpConv = xq::conv2d_transpose,
          class Add = xq::add>
struct flow_net {
  Pyramid extractor;
  Correlation cost_2, cost_1;
  Concat stack_2, stack_1;
  Decoder decoder_2, decoder_1;
  Up upsample_flow, upsample_output;
  UpConv upsample_features;
  Add refine;
  XQ_CHILDREN(extractor, cost_2, cost_1, stack_2, stack_1, decoder_2, decoder_1, upsample_flow, upsample_output,
              upsample_features, refine)

  flow_net()
      : cost_2(xq::correlation(2)),
        cost_1(xq::correlation(2)),
        upsample_flow(xq::upsampling2d(2, 2, xq::interpolation::bilinear)),
        upsample_output(xq::upsampling2d(2, 2, xq::interpolation::bilinear)),
        upsample_features(xq::conv2d_transpose(16, 4).strides(2).padding(xq::padding::same)) {}

  xq::var operator()(const xq::var& frame_1, const xq::var& frame_2) {
    const auto [fine_1, coarse_1] = extractor(frame_1);  // one extractor, two calls
    const auto [fine_2, coarse_2] = extractor(frame_2);
    const auto [flow_2, features_2] = decoder_2(stack_2({cost_2(coarse_1, coarse_2), coarse_1}));
    const xq::var flow_2_up = upsample_flow(flow_2);
    const xq::var features_up = upsample_features(features_2);
    const auto [residual, unused] = decoder_1(stack_1({cost_1(fine_1, fine_2), fine_1, flow_2_up, features_up}));
    (void)unused;
    return upsample_output(refine(flow_2_up, residual));
  }
};

}  // namespace flow
