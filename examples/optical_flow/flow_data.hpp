#pragma once
// Synthetic optical-flow pairs from real images: each Fashion-MNIST image is frame 1, a
// smooth random flow field is drawn for it, and frame 2 is frame 1 moved along that flow
// (bilinear resampling; what leaves the image is black). The flow is the target.
//
// A field is a translation (up to ±2.5 px per axis), a small affine part (rotation,
// scale and shear: up to ±0.08 px per px from the centre) and one low-frequency sine
// wave per component (up to 1 px, 0.5 to 1.5 periods across the image): smooth, as the
// flows of real scenes are away from object edges, and up to about 5 px long.
//
// Frame 2 at pixel p shows frame 1 at p - flow(p): for fields this smooth that is frame 1
// moved by the flow, to first order (the usual construction of synthetic flow data).

#include <cstddef>
#include <cstdint>

#include <xquant/core/tensor.hpp>
#include <xquant/train/dataset.hpp>

namespace flow {

/// `count` pairs from `images` (N, 28, 28, 1), starting at image `first`, fields drawn
/// with `seed`: inputs frame 1, extra input frame 2, target flow (count, 28, 28, 2) with
/// channel 0 the horizontal (x) and 1 the vertical (y) component.
xq::dataset make_pairs(const xq::tensor& images, std::size_t first, std::size_t count, std::uint32_t seed);

/// Mean end-point error, mean over pixels of |predicted - true| (the Euclidean length of
/// the 2-vector): the figure optical-flow papers report. Both (N, H, W, 2).
double end_point_error(const xq::tensor& predicted, const xq::tensor& truth);

}  // namespace flow
